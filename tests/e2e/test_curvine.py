"""The CSI driver on the real Curvine (bff4e7d: curvine-server as master and worker, curvine-fuse,
from ../shared/peers/curvine), on the real API server with the real csi-provisioner, for what a real
node does not run (tests/e2e/test_real_node_curvine.py runs the rest: standalone FUSE pods, curvine-fuse
killed -9 in its pod, a master restart):

- a dynamic PVC gets its directory in Curvine, and loses it when the claim is deleted (the CSI
  controller on the host reaches the masters on loopback, as the manifests' controller, which serves
  the stand-in's tree, does not);
- embedded mode, the node service's own children: two pods on one node share one real curvine-fuse
  (``kubectl fluid mounts`` REFS 1, two targets); what one writes the other reads, and so does a
  curvine-fuse of its own on the same fs-path; curvine-fuse killed -9 (ENOTCONN) is remounted and the
  targets bound again; the node service killed -9 adopts the running curvine-fuse (in a container
  its restart would end its children: only a host process has this path); the last unstage SIGTERMs
  it (exit 0, mount gone).

Curvine is seen through the test's own curvine-fuse mounts (hack/localcluster/peers/curvinecluster.py), never
through the driver; the cluster through the official client and the kernel's mount table."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubectl_fluid.api import names
from localcluster.peers import curvinebins, curvinecluster
from tests.e2e.csi import CsiNode, KubeletStandin, node_object
from tests.e2e.fluid import MANIFESTS, kubectl, kubectl_binary, service_account_kubeconfig, wait_until_gone
from tests.e2e.test_csi_node import CSI_NODE_ACCOUNT
from tests.e2e.test_csi_provisioning import (
    CONTROLLER_ACCOUNT,
    Process,
    claim,
    provisioner_binary,
    storage_class,
)
from tests.e2e.wait import eventually

pytestmark = [
    pytest.mark.skipif(
        not Path("/dev/fuse").exists(), reason="curvine-fuse mounts real FUSE: needs /dev/fuse"
    ),
    pytest.mark.skipif(
        curvinebins.find() is None,
        reason=f"the real Curvine is unpacked from {curvinebins.peer_dir()} (CURVINE_PEER_DIR): not there",
    ),
    pytest.mark.skipif(provisioner_binary() is None, reason="csi-provisioner is built by hack/build-bins.sh"),
]

FIGURES: dict[str, float] = {}


@pytest.fixture(scope="module")
def curvine() -> Iterator[curvinecluster.LocalCurvine]:
    # Short, private and outside pytest's tree: the worker's data and the master's journal live here.
    root = Path(tempfile.mkdtemp(prefix="cv-e2e-"))
    with curvinecluster.running(root) as cv:
        FIGURES["first write after the probe FUSE mounted (s)"] = round(cv.first_write_s, 2)
        yield cv
    assert_nothing_left(root, "the module's Curvine")
    if not os.environ.get("KEEP_CURVINE"):
        subprocess.run(["rm", "-rf", str(root)], check=False)


@pytest.fixture(scope="module")
def eyes_root() -> Iterator[Path]:
    """Where the test's own curvine-fuse mounts go: outside every node's root."""
    root = Path(tempfile.mkdtemp(prefix="cv-eyes-"))
    yield root
    subprocess.run(["rm", "-rf", str(root)], check=False)


@pytest.fixture(scope="module")
def provisioning(
    fluid: Path,
    core: client.CoreV1Api,
    curvine: curvinecluster.LocalCurvine,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Process]:
    """``fluid-csi --mode controller --backend curvine`` and the real csi-provisioner beside it."""
    kubectl(fluid, "apply", "-f", str(MANIFESTS / "csi" / "rbac.yaml"))
    logs = tmp_path_factory.mktemp("cv-prov")
    account = service_account_kubeconfig(fluid, core, logs / "controller.kubeconfig", CONTROLLER_ACCOUNT)
    run_dir = Path(tempfile.mkdtemp(prefix="cv-ctl-"))
    socket = run_dir / "csi.sock"
    driver = Process(
        [sys.executable, "-m", "csi.main", "--mode=controller", f"--endpoint=unix://{socket}",
         "--backend=curvine", f"--fuse-binary={curvine.layout.fuse}",
         f"--fuse-config={curvine.layout.node_settings}", f"--state-dir={run_dir / 'state'}",
         f"--kubeconfig={account}", "--log-format=text"],
        logs / "fluid-csi.log",
    )  # fmt: skip
    binary = provisioner_binary()
    assert binary is not None
    provisioner = Process(
        [str(binary), f"--csi-address={socket}", f"--kubeconfig={account}", "--leader-election=false",
         "--node-deployment=false", "--timeout=30s"],
        logs / "csi-provisioner.log",
    )  # fmt: skip
    try:
        driver.start()
        eventually(lambda: socket.is_socket() or not driver.alive(), "the driver's socket", timeout=30)
        assert driver.alive(), driver.tail()
        provisioner.start()
        yield driver
    finally:
        provisioner.stop()
        driver.stop()
        try:
            assert_nothing_left(run_dir, "the CSI controller's own curvine-fuse")
        finally:
            subprocess.run(["rm", "-rf", str(run_dir)], check=False)


def assert_nothing_left(root: Path, what: str) -> None:
    """No live process naming ``root`` in its command line (curvine-server, curvine-fuse), no mount
    under it: ``what`` stopped cleanly."""
    prefix = str(root).encode()
    procs = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if entry.name.isdigit() and any(a.startswith(prefix) for a in argv):
            procs.append(b" ".join(argv).decode(errors="replace"))
    mounted = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if str(root) in line]
    assert (procs, mounted) == ([], []), f"{what} left processes {procs} and mounts {mounted}"


@pytest.fixture(scope="module")
def node_account(fluid: Path, core: client.CoreV1Api, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cv-sa") / "csi-node.kubeconfig"
    return service_account_kubeconfig(fluid, core, out, account=CSI_NODE_ACCOUNT)


@pytest.fixture
def mount_mode() -> str:
    return "embedded"


@pytest.fixture
def storage(k8s: client.ApiClient) -> Iterator[tuple[client.StorageV1Api, list[str]]]:
    api = client.StorageV1Api(k8s)
    created: list[str] = []
    yield api, created
    for name in created:
        api.delete_storage_class(name)


@pytest.fixture
def node(
    core: client.CoreV1Api, node_account: Path, curvine: curvinecluster.LocalCurvine, mount_mode: str
) -> Iterator[CsiNode]:
    """A Node (kwok makes it Ready) with a CSI node service whose FUSE is the real curvine-fuse."""
    name = f"e2e-cv-{secrets.token_hex(3)}"
    core.create_node(node_object(name))
    root = Path(tempfile.mkdtemp(prefix="cvn-"))  # unix socket paths are short
    fuse = ["--fuse-binary", str(curvine.layout.fuse), "--fuse-config", str(curvine.layout.node_settings)]
    csi = CsiNode(name, root, node_account, extra=[f"--mount-mode={mount_mode}"], fuse=fuse)
    csi.start()
    try:
        yield csi
    finally:
        csi.stop()
        try:
            csi.stop_leftovers_then_complain()
        finally:
            core.delete_node(name)
            subprocess.run(["rm", "-rf", str(root)], check=False)


@pytest.fixture
def kubelet(fluid: Path, node: CsiNode) -> Iterator[KubeletStandin]:
    standin = KubeletStandin(fluid, [node], node.root / "kubelet-standin.log")
    standin.start()
    try:
        yield standin
    finally:
        standin.stop()


# ------------------------------------------------------------------------ helpers


@dataclass
class Bed:
    """One test's world: a namespace, a node with its CSI node service and kubelet stand-in, the
    module's Curvine and provisioner."""

    core: client.CoreV1Api
    k8s: client.ApiClient
    namespace: str
    curvine: curvinecluster.LocalCurvine
    classes: tuple[client.StorageV1Api, list[str]]
    node: CsiNode
    eyes: Path

    def claim(self, **tuning: str) -> tuple[str, str]:
        """A claim ``data`` of a fresh curvine StorageClass, bound: (PV name, its curvine-path)."""
        fs_path = f"/e2e/{secrets.token_hex(4)}"
        parameters = {
            names.PARAM_MASTER_ADDRS: self.curvine.master_addrs,
            names.PARAM_FS_PATH: fs_path,
            names.PARAM_PATH_TYPE: names.PATH_TYPE_DIRECTORY_OR_CREATE,
            **tuning,
        }
        claim(self.core, self.namespace, "data", storage_class(*self.classes, parameters))

        def bound() -> str | None:
            read = self.core.read_namespaced_persistent_volume_claim("data", self.namespace)
            return str(read.spec.volume_name) if read.status.phase == "Bound" else None

        pv = eventually(bound, "claim data bound", timeout=60)
        assert pv is not None
        return pv, f"{fs_path}/{pv}"

    def pod(self, name: str) -> str:
        """A pod on the node using claim ``data``; its uid."""
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {
                "nodeName": self.node.name,
                "containers": [{"name": "app", "image": "busybox", "command": ["sleep", "3600"]}],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
            },
        }
        return str(self.core.create_namespaced_pod(self.namespace, body).metadata.uid)

    def delete_pod(self, name: str) -> None:
        self.core.delete_namespaced_pod(name, self.namespace, grace_period_seconds=0)

    def target(self, uid: str, pv: str) -> Path:
        return Path(names.csi_publish_target(uid, pv, str(self.node.kubelet_root)))

    def fusemount(self) -> dict[str, Any] | None:
        items = client.CustomObjectsApi(self.k8s).list_cluster_custom_object(
            names.GROUP,
            names.VERSION,
            "fusemounts",
            label_selector=names.fuse_mount_node_selector(self.node.name),
        )["items"]
        return items[0] if len(items) == 1 else None

    def ready_with(self, *uids: str) -> dict[str, Any] | None:
        """The node's one FuseMount once Ready with exactly the targets of ``uids``."""
        mount = self.fusemount()
        status = (mount or {}).get("status", {})
        targets = {t.get("podUID") for v in status.get("volumes", []) for t in v.get("targets", [])}
        return mount if status.get("phase") == "Ready" and targets == set(uids) else None

    def mounted_for(self, *uids: str) -> dict[str, Any]:
        found = eventually(lambda: self.ready_with(*uids), f"a Ready FuseMount of {uids}", 60)
        assert found is not None
        return found

    def all_gone(self) -> None:
        eventually(lambda: self.fusemount() is None and not self.node.fuse_pids(), "curvine-fuse stopped", 60)
        assert self.node.mounts() == []

    def is_real_curvine_fuse(self, pid: int) -> bool:
        return os.readlink(f"/proc/{pid}/exe") == str(self.curvine.layout.fuse)

    def look(self, fs_path: str) -> Any:
        """A curvine-fuse of the test's own serving ``fs_path`` (a context manager of its process)."""
        return curvinecluster.mounted(
            self.curvine.layout, fs_path, self.eyes / secrets.token_hex(4) / "fuse-mount"
        )

    def in_curvine(self, path: str) -> bool:
        """Whether ``path`` is a directory in Curvine, as a fresh mount of its root shows it."""
        with self.look("/") as own:
            return (mount_point(own) / path.lstrip("/")).is_dir()


def mount_point(fuse: subprocess.Popen[bytes]) -> Path:
    argv = [str(a) for a in fuse.args]
    return Path(argv[argv.index("--mnt-path") + 1])


@pytest.fixture
def bed(
    *,
    core: client.CoreV1Api,
    k8s: client.ApiClient,
    namespace: str,
    curvine: curvinecluster.LocalCurvine,
    provisioning: Process,
    storage: tuple[client.StorageV1Api, list[str]],
    node: CsiNode,
    kubelet: KubeletStandin,
    eyes_root: Path,
) -> Bed:
    return Bed(core, k8s, namespace, curvine, storage, node, eyes_root)


def plugin_rows(node: str) -> list[dict[str, str]]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    run = subprocess.run(
        [kubectl_binary(), "fluid", "mounts", "--node", node, "-o", "wide"],
        capture_output=True, text=True, env=env, check=True, timeout=60,
    )  # fmt: skip
    header, *rows = [line.split() for line in run.stdout.splitlines() if line.strip()]
    return [dict(zip(header, row, strict=False)) for row in rows]


def served(path: Path, name: str, text: str) -> bool:
    try:
        return (path / name).read_text() == text
    except OSError:
        return False


# ------------------------------------------------------------------------ tests


def test_a_dynamic_volume_is_a_directory_in_curvine_shared_by_two_pods_through_one_real_curvine_fuse(
    bed: Bed,
) -> None:
    pv, curvine_path = bed.claim()
    assert bed.in_curvine(curvine_path), f"{curvine_path} is not in Curvine"

    t0 = time.monotonic()
    uid_a, uid_b = bed.pod("a"), bed.pod("b")
    mount = bed.mounted_for(uid_a, uid_b)
    FIGURES["two pods' volumes mounted through a new curvine-fuse (s)"] = round(time.monotonic() - t0, 2)
    assert mount["status"]["refCount"] == 1
    assert mount["spec"]["masterAddrs"] == bed.curvine.master_addrs
    (row,) = plugin_rows(bed.node.name)
    assert (row["REFS"], row["TARGETS"], row["MASTER-ADDRS"]) == ("1", "2", bed.curvine.master_addrs)
    (pid,) = bed.node.fuse_pids()
    assert bed.is_real_curvine_fuse(pid)
    assert mount["status"]["pid"] == pid
    assert mount["spec"]["fuseArgs"][:2] == ["--conf", names.fuse_config_path(mount["spec"]["mntPath"])]

    text = f"written through pod a {secrets.token_hex(4)}"
    (bed.target(uid_a, pv) / "hello.txt").write_text(text)
    assert (bed.target(uid_b, pv) / "hello.txt").read_text() == text
    with bed.look(curvine_path) as own:
        assert own.pid != pid
        assert (mount_point(own) / "hello.txt").read_text() == text

    bed.delete_pod("a")
    eventually(lambda: bed.ready_with(uid_b), "the FuseMount without pod a's target", 30)
    assert (bed.target(uid_b, pv) / "hello.txt").read_text() == text
    bed.delete_pod("b")
    bed.all_gone()
    assert "stopped FUSE (exit 0)" in bed.node.log.read_text(), (
        "the last unstage did not SIGTERM it to exit 0"
    )

    bed.core.delete_namespaced_persistent_volume_claim("data", bed.namespace)
    wait_until_gone(bed.core.read_persistent_volume, pv, what=f"PV {pv} deleted after its claim")
    assert not bed.in_curvine(curvine_path), "DeleteVolume left the directory in Curvine"
    assert bed.in_curvine(curvine_path.rsplit("/", 1)[0])


def test_curvine_fuse_killed_9_is_remounted_and_the_targets_bound_again(bed: Bed) -> None:
    pv, _ = bed.claim()
    uid = bed.pod("app")
    bed.mounted_for(uid)
    where = bed.target(uid, pv)
    (where / "before").write_text("written before curvine-fuse died")
    (pid,) = bed.node.fuse_pids()

    killed = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    eventually(
        lambda: served(where, "before", "written before curvine-fuse died"), "the target served again", 30
    )
    FIGURES["curvine-fuse killed -9 to the pod's target served again (s)"] = round(
        time.monotonic() - killed, 2
    )
    (new,) = bed.node.fuse_pids()
    assert new != pid
    assert bed.is_real_curvine_fuse(new)
    (where / "after").write_text("written through the new curvine-fuse")
    eventually(
        lambda: (bed.ready_with(uid) or {}).get("status", {}).get("pid") == new, "the new pid, Ready", 30
    )
    bed.delete_pod("app")
    bed.all_gone()


def test_the_node_service_killed_9_adopts_the_running_curvine_fuse(bed: Bed) -> None:
    pv, _ = bed.claim()
    uid = bed.pod("app")
    bed.mounted_for(uid)
    (pid,) = bed.node.fuse_pids()
    assert bed.node.proc is not None
    bed.node.proc.kill()
    bed.node.proc.wait()
    bed.node.start()
    eventually(
        lambda: "adopted FUSE" in bed.node.log.read_text(), "the restarted node service adopting it", 30
    )
    assert bed.node.fuse_pids() == [pid], "the restarted node service started another curvine-fuse"
    (bed.target(uid, pv) / "after-restart").write_text("still served")
    assert (bed.target(uid, pv) / "after-restart").read_text() == "still served"
    bed.delete_pod("app")
    bed.all_gone()


def test_zz_figures() -> None:
    """The measurements of this module, for the notes (not thresholds)."""
    for what, value in FIGURES.items():
        print(f"{what}: {value}")
