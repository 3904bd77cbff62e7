"""Dynamic provisioning with the real csi-provisioner (external-provisioner, built from Go modules by
hack/build-bins.sh at the version the manifests ship): ``fluid-csi --mode controller`` and the
provisioner run as local processes, the provisioner authenticated as the controller Deployment's
ServiceAccount, so the RBAC in manifests/csi is what it really gets.

A claim of a curvine StorageClass becomes a PV whose handle and directory follow SPEC §5; deleting the
claim deletes both; a StorageClass with a bad parameter leaves the claim Pending with a
ProvisioningFailed event that names the parameter. Read back through the official client and the
backend directory, not through the driver."""

from __future__ import annotations

import hashlib
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client

from kubectl_fluid.api import names
from tests.e2e.fluid import (
    MANIFESTS,
    REPO,
    LocalProcess,
    kubectl,
    service_account_kubeconfig,
    wait_until_gone,
)
from tests.e2e.wait import eventually
from tests.tools import cached

CONTROLLER_ACCOUNT = "fluid-csi-controller"  # manifests/csi/controller-deployment.yaml
MASTERS = "m1.e2e.svc:8995,m2.e2e.svc:8995"
PV_FINALIZER = "external-provisioner.volume.kubernetes.io/finalizer"


def provisioner_binary() -> Path | None:
    return cached("csi-provisioner", "CSI_PROVISIONER_VERSION", "csi-provisioner")


pytestmark = pytest.mark.skipif(
    provisioner_binary() is None, reason="csi-provisioner is built by hack/build-bins.sh (make bins)"
)


@dataclass
class Process(LocalProcess):
    argv: list[str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


@dataclass
class Provisioning:
    backend: Path
    driver: Process
    provisioner: Process

    def check_alive(self) -> None:
        assert self.driver.alive(), f"fluid-csi exited; log: {self.driver.tail()}"
        assert self.provisioner.alive(), f"csi-provisioner exited; log: {self.provisioner.tail()}"


@pytest.fixture(scope="module")
def provisioning(
    fluid: Path, core: client.CoreV1Api, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Provisioning]:
    kubectl(fluid, "apply", "-f", str(MANIFESTS / "csi" / "rbac.yaml"))
    logs = tmp_path_factory.mktemp("csi-provisioning")
    account = service_account_kubeconfig(fluid, core, logs / "provisioner.kubeconfig", CONTROLLER_ACCOUNT)
    # A short directory: a unix socket path must fit 108 bytes, pytest's temporary paths may not.
    run_dir = Path(tempfile.mkdtemp(prefix="csi-prov-"))
    socket = run_dir / "csi.sock"
    backend = logs / "backend"
    backend.mkdir()
    binary = provisioner_binary()
    assert binary is not None
    driver = Process(
        [
            sys.executable,
            "-m",
            "csi.main",
            "--mode=controller",
            f"--endpoint=unix://{socket}",
            f"--backend-root={backend}",
        ],
        logs / "fluid-csi.log",
    )
    provisioner = Process(
        [
            str(binary),
            f"--csi-address={socket}",
            f"--kubeconfig={account}",
            "--leader-election=false",
            "--node-deployment=false",
            "--v=3",
        ],
        logs / "csi-provisioner.log",
    )
    setup = Provisioning(backend, driver, provisioner)
    try:
        driver.start()
        eventually(lambda: socket.is_socket() or not driver.alive(), "the driver's socket", timeout=30)
        assert driver.alive(), f"fluid-csi exited; log: {driver.tail()}"
        provisioner.start()
        yield setup
    finally:
        provisioner.stop()
        driver.stop()
        shutil.rmtree(run_dir, ignore_errors=True)


@pytest.fixture
def storage(k8s: client.ApiClient) -> Iterator[tuple[client.StorageV1Api, list[str]]]:
    """The storage API and a list of StorageClass names to delete after the test (they are cluster-wide)."""
    api = client.StorageV1Api(k8s)
    created: list[str] = []
    try:
        yield api, created
    finally:
        for name in created:
            api.delete_storage_class(name)


def storage_class(api: client.StorageV1Api, created: list[str], parameters: dict[str, str]) -> str:
    name = f"e2e-curvine-{secrets.token_hex(4)}"
    api.create_storage_class(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "provisioner": names.CSI_DRIVER,
            "parameters": parameters,
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "Immediate",
        }
    )
    created.append(name)
    return name


def claim(
    core: client.CoreV1Api, namespace: str, name: str, storage_class_name: str
) -> client.V1PersistentVolumeClaim:
    return core.create_namespaced_persistent_volume_claim(
        namespace,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": storage_class_name,
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )


def test_claim_is_provisioned_as_a_directory_and_deleted_with_it(
    provisioning: Provisioning,
    core: client.CoreV1Api,
    namespace: str,
    storage: tuple[client.StorageV1Api, list[str]],
) -> None:
    fs_path = f"/e2e/{secrets.token_hex(4)}"
    parameters = {
        names.PARAM_MASTER_ADDRS: MASTERS,
        names.PARAM_FS_PATH: fs_path,
        names.PARAM_PATH_TYPE: names.PATH_TYPE_DIRECTORY_OR_CREATE,
    }
    sc = storage_class(*storage, parameters)
    pvc = claim(core, namespace, "data", sc)

    def bound() -> str | None:
        provisioning.check_alive()
        read = core.read_namespaced_persistent_volume_claim("data", namespace)
        return str(read.spec.volume_name) if read.status.phase == "Bound" else None

    pv_name = eventually(bound, "the claim bound to a provisioned PV", timeout=60)
    # Computed here from SPEC §5, not with the driver's helpers.
    cluster_id = hashlib.sha256(MASTERS.encode()).hexdigest()[:8]
    assert pv_name == f"pvc-{pvc.metadata.uid}"
    pv = core.read_persistent_volume(pv_name)
    assert pv.spec.csi.driver == names.CSI_DRIVER
    assert pv.spec.csi.volume_handle == f"{cluster_id}@{fs_path}@{pv_name}"
    attributes = pv.spec.csi.volume_attributes
    assert attributes["cluster-id"] == cluster_id
    assert attributes["curvine-path"] == f"{fs_path}/{pv_name}"
    assert {k: attributes[k] for k in parameters} == parameters
    assert pv.spec.persistent_volume_reclaim_policy == "Delete"
    assert pv.spec.claim_ref.name == "data"
    assert pv.spec.claim_ref.namespace == namespace
    assert PV_FINALIZER in (pv.metadata.finalizers or [])
    directory = provisioning.backend / cluster_id / fs_path.lstrip("/") / pv_name
    assert directory.is_dir()

    core.delete_namespaced_persistent_volume_claim("data", namespace)
    wait_until_gone(core.read_persistent_volume, pv_name, what=f"PV {pv_name} deleted after its claim")
    assert not directory.exists()
    assert directory.parent.is_dir()  # only the volume's own directory goes
    provisioning.check_alive()


# (the parameter the event must name, the StorageClass parameters besides master-addrs)
BAD_PARAMETERS = [
    ("bogus-key", {"bogus-key": "1"}),
    (names.PARAM_PATH_TYPE, {names.PARAM_PATH_TYPE: "Sometimes"}),
    (names.PARAM_MASTER_ADDRS, {names.PARAM_MASTER_ADDRS: "m1.e2e.svc"}),
    (names.PARAM_FS_PATH, {names.PARAM_FS_PATH: "relative/path"}),
]


@pytest.mark.parametrize("case", BAD_PARAMETERS, ids=[key for key, _ in BAD_PARAMETERS])
def test_bad_parameter_fails_provisioning_with_an_event_naming_it(
    provisioning: Provisioning,
    core: client.CoreV1Api,
    namespace: str,
    storage: tuple[client.StorageV1Api, list[str]],
    case: tuple[str, dict[str, str]],
) -> None:
    key, parameters = case
    sc = storage_class(*storage, {names.PARAM_MASTER_ADDRS: MASTERS, **parameters})
    before = sorted(provisioning.backend.rglob("*"))
    claim(core, namespace, "bad", sc)

    def failed() -> list[str]:
        provisioning.check_alive()
        events = core.list_namespaced_event(
            namespace, field_selector="involvedObject.kind=PersistentVolumeClaim,involvedObject.name=bad"
        )
        return [str(e.message) for e in events.items if e.reason == "ProvisioningFailed"]

    messages = eventually(failed, "a ProvisioningFailed event on the claim", timeout=60)
    assert any("InvalidArgument" in m and f'"{key}"' in m for m in messages), messages
    # Nothing was made: the claim waits, no PV names it, the backend stays empty.
    time.sleep(1)
    assert core.read_namespaced_persistent_volume_claim("bad", namespace).status.phase == "Pending"
    claimed = [
        pv.metadata.name
        for pv in core.list_persistent_volume().items
        if pv.spec.claim_ref is not None and pv.spec.claim_ref.namespace == namespace
    ]
    assert claimed == []
    assert sorted(provisioning.backend.rglob("*")) == before
