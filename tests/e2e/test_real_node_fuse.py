"""The CSI node's own mechanics on a real node, from the product's image and manifests: ``kubectl apply -k
manifests/`` on a cluster of its own whose one node is a real, untainted kubelet, then the FUSE program
changed to the development stand-in (tests/e2e/standin_install.py: these tests need no cache behind the
FUSE; test_real_node_curvine.py runs the default install's real curvine-fuse). The fluid-csi-node
DaemonSet pod registers the driver with kubelet itself; a FUSE Dataset's PVC and a second volume of the
same mount key are mounted by two real pods (the Dataset's PV as a controller before SPEC §7 made it,
with master-addrs: the CSI node's own FUSE, kept over an upgrade); the FUSE program runs in its
standalone pod (admitted by the FUSE pod policy); its pod deleted, then the program killed -9, it is
replaced while the pods keep running; ``kubectl fluid mounts`` shows the node's reference counts and
each pod's target; deleting one pod leaves the other's volume whole; deleting both stops the FUSE and
leaves nothing of the mount key mounted, on the host or in the node's own mount namespace. Then what the
driver refuses (a clientless dataset's PV, a symlink at a volume's directory): the pod's Events say why,
and nothing is mounted or started. Last, a ReadOnlyMany claim: read-only at its target on the node, and
(an expected failure, the test says why) in its pod.

The tests run in order on one cluster (module fixture); each one's state is the next one's start."""

from __future__ import annotations

import copy
import json
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

import localcluster
from controller.desired import desired_children
from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset
from localcluster import realnodes
from tests.e2e.fluid import MANIFESTS, kubectl
from tests.e2e.standin_install import use_standin
from tests.e2e.test_cli_inject import kubectl_fluid, ok
from tests.e2e.test_real_node_product import get, ready, users_cluster  # noqa: F401 (a fixture)
from tests.e2e.wait import eventually

SYSTEM = "fluid-system"
APPS = "default"
DATASET = "data"
# A second claim on the Dataset's own directory: same masters, same fs-path, so the same mount key.
# (Had the driver bound each volume at kubelet's staging path, kubelet would unstage neither: each
# bind is a device reference of the other; csi/model/mountkey.py.)
ALIAS = "data-alias"
NODE = f"{realnodes.NAME_PREFIX}0"


@dataclass
class Bed:
    cluster: localcluster.Cluster
    node: realnodes.RealNode
    figures: dict[str, float] = field(default_factory=dict)
    key: str = ""

    @property
    def kc(self) -> Path:
        return self.cluster.kubeconfig


@pytest.fixture(scope="module")
def bed(users_cluster: localcluster.Cluster) -> Iterator[Bed]:  # noqa: F811 (the imported fixture)
    node = realnodes.RealNode.load(users_cluster.state_dir / realnodes.NODES_DIR / NODE)
    assert node is not None
    t0 = time.monotonic()
    kubectl(users_cluster.kubeconfig, "apply", "-k", str(MANIFESTS))
    use_standin(users_cluster.kubeconfig)
    b = Bed(users_cluster, node, {"apply": t0})
    yield b
    print("figures (s):", {k: round(v, 1) for k, v in b.figures.items() if k != "apply"})


def kget(bed: Bed, *args: str) -> Any:
    return get(bed.kc, *args)


def system_pods(bed: Bed, selector: str) -> list[dict[str, Any]]:
    return kget(bed, "-n", SYSTEM, "pods", "-l", selector)["items"]  # type: ignore[no-any-return]


def since(b: Bed) -> float:
    return time.monotonic() - b.figures["apply"]


def test_the_csi_node_pod_is_ready_and_registered_with_kubelet(bed: Bed) -> None:
    def all_ready() -> list[dict[str, Any]]:
        listed = system_pods(bed, "app.kubernetes.io/name=fluid-csi-node")
        return listed if listed and all(ready(p) for p in listed) else []

    [pod] = eventually(all_ready, "the fluid-csi-node pod Running and Ready on the real node", timeout=240)
    assert pod["spec"]["nodeName"] == NODE
    bed.figures["csi-node Ready after apply"] = since(bed)
    drivers = eventually(
        lambda: kget(bed, "csinode", NODE)["spec"].get("drivers"),
        "the CSINode listing the driver",
    )
    assert [d["name"] for d in drivers] == [names.CSI_DRIVER]
    assert drivers[0]["nodeID"] == NODE
    # kubelet dialled the driver's socket where the DaemonSet says: /var/lib/kubelet, the node's view.
    assert (bed.node.kubelet_root / "plugins_registry" / f"{names.CSI_DRIVER}-reg.sock").is_socket()


def app_pod(name: str, claim: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": APPS},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "app",
                    "image": realnodes.busybox_image("1.35.0"),
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["sh", "-c", f"echo {name} up; exec sleep 100000"],
                    # A remounted FUSE reaches the running container (what the serverful webhook's
                    # MountPropagationInjector sets on Fluid PVCs).
                    "volumeMounts": [
                        {"name": "data", "mountPath": "/data", "mountPropagation": "HostToContainer"}
                    ],
                }
            ],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
        },
    }


def alias_volume(pv: dict[str, Any]) -> list[dict[str, Any]]:
    """A static PV and its claim on the Dataset PV's directory, under another volume handle."""
    spec = copy.deepcopy(pv["spec"])
    spec.pop("claimRef", None)
    spec["csi"]["volumeHandle"] = ALIAS
    spec["storageClassName"] = ""
    spec["claimRef"] = {"namespace": APPS, "name": ALIAS}
    return [
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": ALIAS}, "spec": spec},
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": ALIAS, "namespace": APPS},
            "spec": {
                "accessModes": spec["accessModes"],
                "storageClassName": "",
                "volumeName": ALIAS,
                "resources": {"requests": {"storage": spec["capacity"]["storage"]}},
            },
        },
    ]


def apply_dataset_with_its_pv_of_before(bed: Bed) -> None:
    """The sample Dataset, then its PV as a controller before SPEC §7 made it (``master-addrs``: the
    CSI node's own FUSE serves it, this module's subject; a new PV names the runtime's client, which
    test_csi_node_client_mode.py covers), then its runtime: the controller keeps that PV, as in an
    upgrade (controller/desired/storage.py: kept_volume_source)."""
    samples = MANIFESTS / "samples"
    docs = [d for d in yaml.safe_load_all((samples / "dataset-curvine.yaml").read_text()) if d]
    [runtime] = [d for d in docs if d["kind"] == "CacheRuntime"]
    rest = [d for d in docs if d["kind"] != "CacheRuntime"]
    kubectl(bed.kc, "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": rest}))
    [dataset] = [d for d in rest if d["kind"] == "Dataset"]
    eventually(
        lambda: (
            names.DATASET_FINALIZER
            in kget(bed, "-n", APPS, "dataset", DATASET)["metadata"].get("finalizers", [])
        ),
        "the Dataset held by the controller",
    )
    runtime_class = yaml.safe_load((samples / "cacheruntimeclass-curvine.yaml").read_text())
    # A uid for the builder only: the PV carries no owner (controller/desired/storage.py says why).
    stored = {**runtime, "metadata": {**runtime["metadata"], "uid": "0"}}
    pv = desired_children(
        Dataset.model_validate(dataset),
        CacheRuntime.model_validate(stored),
        CacheRuntimeClass.model_validate(runtime_class),
        APPS,
    ).pv
    pv["spec"]["csi"]["volumeAttributes"] = {
        names.VOLUME_ATTR_DATASET_NAME: DATASET,
        names.VOLUME_ATTR_DATASET_NAMESPACE: APPS,
        names.PARAM_MASTER_ADDRS: f"svc-{DATASET}-master.{APPS}.svc:8995",
        names.PARAM_FS_PATH: "/",
        names.PARAM_CURVINE_PATH: f"/{APPS}/{DATASET}",
    }
    kubectl(bed.kc, "create", "-f", "-", stdin=json.dumps(pv))
    kubectl(bed.kc, "apply", "-f", "-", stdin=json.dumps(runtime))


def sh(bed: Bed, pod: str, script: str) -> str:
    return kubectl(bed.kc, "-n", APPS, "exec", pod, "--", "sh", "-c", script)


def fuse_pods(bed: Bed) -> list[dict[str, Any]]:
    return system_pods(bed, names.LABEL_MOUNT_KEY)


def mounts_json(bed: Bed) -> list[dict[str, Any]]:
    return node_fusemounts(bed.kc)


def node_fusemounts(kc: Path) -> list[dict[str, Any]]:
    """The real node's FuseMounts, as ``kubectl fluid mounts -o json`` lists them."""
    listed = json.loads(ok(kubectl_fluid(kc, "mounts", "--node", NODE, "-o", "json")))
    return listed["items"] if isinstance(listed, dict) else listed  # type: ignore[no-any-return]


def refs(bed: Bed) -> int:
    [fm] = [m for m in mounts_json(bed) if m["spec"]["mountKey"] == bed.key]
    return int(fm.get("status", {}).get("refCount") or 0)


def test_two_real_pods_share_a_fuse_volume_of_the_dataset(bed: Bed) -> None:
    kubectl(bed.kc, "apply", "-f", str(MANIFESTS / "samples" / "cacheruntimeclass-curvine.yaml"))
    apply_dataset_with_its_pv_of_before(bed)
    t0 = time.monotonic()
    pv = eventually(
        lambda: kget(bed, "pv", names.dataset_pv(APPS, DATASET)),
        "the Dataset's PV made by the controller",
        timeout=120,
    )
    attrs = pv["spec"]["csi"]["volumeAttributes"]
    eventually(
        lambda: kget(bed, "-n", APPS, "pvc", names.dataset_pvc(DATASET))["status"].get("phase") == "Bound",
        "the Dataset's PVC Bound",
    )
    bed.figures["dataset PVC Bound"] = time.monotonic() - t0
    kubectl(
        bed.kc,
        "apply",
        "-f",
        "-",
        stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": alias_volume(pv)}),
    )
    # The Dataset's directory in the stand-in's Curvine cluster (what a Curvine master would hold), in
    # the node's own /var/lib/curvine-standin.
    data = bed.node.root / "curvine-standin" / names.cluster_id(attrs["master-addrs"])
    (data / attrs["curvine-path"].lstrip("/")).mkdir(parents=True, exist_ok=True)

    t0 = time.monotonic()
    kubectl(bed.kc, "apply", "-f", "-", stdin=json.dumps(app_pod("writer", names.dataset_pvc(DATASET))))
    kubectl(bed.kc, "apply", "-f", "-", stdin=json.dumps(app_pod("reader", ALIAS)))
    for name in ("writer", "reader"):
        eventually(
            lambda n=name: ready(kget(bed, "-n", APPS, "pod", n)),  # type: ignore[misc]
            f"pod {name} Running with its volume on the real node",
            timeout=180,
        )
    bed.figures["pods with the volume Running"] = time.monotonic() - t0
    sh(bed, "writer", "echo written-by-writer > /data/hello")
    assert sh(bed, "reader", "cat /data/hello").strip() == "written-by-writer"
    # The FUSE mount served it: the file is in the Dataset's directory of the stand-in's cluster.
    assert (data / attrs["curvine-path"].lstrip("/") / "hello").read_text() == "written-by-writer\n"
    assert "writer up" in kubectl(bed.kc, "-n", APPS, "logs", "writer")
    assert "reader up" in kubectl(bed.kc, "-n", APPS, "logs", "reader")


def test_standalone_fuse_pod_is_a_real_pod_and_mounts_shows_refcount_two(bed: Bed) -> None:
    [fuse] = eventually(lambda: fuse_pods(bed), "the standalone FUSE pod")
    bed.key = fuse["metadata"]["labels"][names.LABEL_MOUNT_KEY]
    assert fuse["metadata"]["name"] == names.fuse_pod_name(NODE, bed.key)
    assert fuse["spec"]["nodeName"] == NODE
    assert fuse["status"]["phase"] == "Running"
    # The stand-in runs in it; kubelet serves its log.
    kubectl(bed.kc, "-n", SYSTEM, "logs", fuse["metadata"]["name"])
    assert names.fuse_mount_path(bed.key) in json.dumps(fuse["spec"]["containers"][0])
    eventually(lambda: refs(bed) == 2, "kubectl fluid mounts: the real node's key with REFS 2")
    [mirrored] = [m for m in mounts_json(bed) if m["spec"]["mountKey"] == bed.key]
    assert mirrored["status"]["podName"] == fuse["metadata"]["name"]
    assert mirrored["spec"]["mode"] == "standalone"
    command = fuse["spec"]["containers"][0]["command"]
    assert command[command.index("--master-addrs") + 1] == mirrored["spec"]["masterAddrs"]
    listed = kubectl_fluid(bed.kc, "mounts", "--node", NODE, "-o", "wide")
    table = ok(listed)
    assert NODE in table, table
    assert "standalone" in table, table
    # Issue 28, item 3: the program that serves the mount, and the stand-in said to be one.
    assert mirrored["spec"]["program"] == command[0], mirrored["spec"]
    assert "curvine-fuse-standin(stand-in)" in table, table
    assert f"node(s) {NODE} are served by curvine-fuse-standin, the test bed's stand-in" in listed.stderr


def both_read_again(bed: Bed, when: str) -> None:
    """Both running pods read the writer's file again (their containers were not restarted)."""
    for name in ("reader", "writer"):
        eventually(
            lambda n=name: sh(bed, n, "cat /data/hello").strip() == "written-by-writer",  # type: ignore[misc]
            f"{name} reading the file again {when}",
            timeout=120,
        )


def test_a_killed_fuse_is_replaced_and_running_pods_see_the_data_again(bed: Bed) -> None:
    [old] = fuse_pods(bed)
    before = {n: kget(bed, "-n", APPS, "pod", n)["status"] for n in ("writer", "reader")}
    t0 = time.monotonic()
    kubectl(bed.kc, "-n", SYSTEM, "delete", "pod", old["metadata"]["name"], "--wait=false")

    def replaced() -> bool:
        now = fuse_pods(bed)
        return (
            bool(now)
            and now[0]["metadata"]["uid"] != old["metadata"]["uid"]
            and now[0]["status"]["phase"] == "Running"
        )

    eventually(replaced, "the FUSE pod replaced by the node service", timeout=120)
    both_read_again(bed, "through the new FUSE mount")
    bed.figures["FUSE recovery (delete to data readable)"] = time.monotonic() - t0
    sh(bed, "reader", "echo after-recovery > /data/again")
    assert sh(bed, "writer", "cat /data/again").strip() == "after-recovery"
    for name, status in before.items():
        now = kget(bed, "-n", APPS, "pod", name)["status"]
        [c0], [c1] = status["containerStatuses"], now["containerStatuses"]
        assert c1["restartCount"] == c0["restartCount"] == 0, (name, c1)
        assert c1["state"]["running"]["startedAt"] == c0["state"]["running"]["startedAt"]


def key_mounts(bed: Bed) -> list[str]:
    """Mount points of the key on the host and in the node's own mount namespace."""
    with open("/proc/self/mountinfo") as table:
        host = [line.split()[4] for line in table]
    inside = realnodes.namespace_mounts(bed.cluster, bed.node)
    return [p for p in host + inside if bed.key in p]


def pod_uid(bed: Bed, name: str) -> str:
    return str(kget(bed, "-n", APPS, "pod", name)["metadata"]["uid"])


def target_pods(bed: Bed) -> set[str]:
    """The pod UIDs of the key's targets, as its FuseMount's status lists them."""
    [fm] = [m for m in mounts_json(bed) if m["spec"]["mountKey"] == bed.key]
    return {t["podUID"] for v in fm.get("status", {}).get("volumes", []) for t in v.get("targets", [])}


def fuse_processes(node: realnodes.RealNode, key: str | None = None) -> list[int]:
    """The FUSE programs of the node's keys (of ``key`` alone when given), seen from this machine
    (their standalone pods' containers are processes of it)."""
    under = (names.fuse_mount_path(key) if key else names.fuse_mounts_root()).encode()
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            # The node's own: under its cgroup root (another cluster's node may run beside it).
            ours = node.cgroup_root in (proc / "cgroup").read_text()
        except OSError:
            continue
        if ours and any(b"curvine-fuse" in a for a in argv[:2]) and any(under in a for a in argv):
            found.append(int(proc.name))
    return found


def test_a_fuse_killed_9_in_its_pod_is_replaced_and_running_pods_see_the_data_again(bed: Bed) -> None:
    [old] = fuse_pods(bed)
    [pid] = eventually(
        lambda: fuse_processes(bed.node, bed.key), "the FUSE program of the key running on the node"
    )
    t0 = time.monotonic()
    os.kill(pid, signal.SIGKILL)

    def replaced() -> dict[str, Any] | None:
        now = fuse_pods(bed)
        fresh = [p for p in now if p["metadata"]["uid"] != old["metadata"]["uid"]]
        return fresh[0] if fresh and fresh[0]["status"]["phase"] == "Running" else None

    new = eventually(replaced, "the killed FUSE's pod replaced by the node service", timeout=120)
    assert new["metadata"]["name"] == old["metadata"]["name"]
    both_read_again(bed, "after kill -9 of the FUSE")
    bed.figures["FUSE recovery (kill -9 to data readable)"] = time.monotonic() - t0
    assert pid not in fuse_processes(bed.node, bed.key)
    assert {kget(bed, "-n", APPS, "pod", n)["status"]["containerStatuses"][0]["restartCount"] for n in (
        "reader", "writer")} == {0}  # fmt: skip


def test_deleting_the_pods_drops_the_refcount_then_stops_the_fuse_leaving_nothing_mounted(bed: Bed) -> None:
    writer = pod_uid(bed, "writer")
    assert target_pods(bed) == {writer, pod_uid(bed, "reader")}
    kubectl(bed.kc, "-n", APPS, "delete", "pod", "reader")
    eventually(lambda: refs(bed) == 1, "kubectl fluid mounts: REFS 1 after one pod deleted", timeout=90)
    assert target_pods(bed) == {writer}
    assert fuse_pods(bed), "the FUSE pod went while a volume is still staged"
    # The FUSE was replaced under both pods (the test before): the reader's unpublish must leave the
    # writer's new bind alone, on the node and in the writer's container.
    assert sh(bed, "writer", "cat /data/hello").strip() == "written-by-writer"
    kubectl(bed.kc, "-n", APPS, "delete", "pod", "writer")
    eventually(lambda: not fuse_pods(bed), "the FUSE pod deleted once no volume is staged", timeout=90)
    eventually(lambda: not key_mounts(bed), "nothing of the mount key mounted, host or node", timeout=60)
    eventually(
        lambda: not fuse_processes(bed.node, bed.key),
        "no FUSE program of the key left on the node",
        timeout=30,
    )
    # The mirror deletes the FuseMount in the background after the state changed (it never blocks a
    # CSI call), so it may trail the unmount: once a CI run looked before it had.
    eventually(
        lambda: not [m for m in mounts_json(bed) if m["spec"]["mountKey"] == bed.key],
        "the key's FuseMount deleted by the node's mirror",
        timeout=30,
    )
    assert not [
        p
        for p in realnodes.namespace_mounts(bed.cluster, bed.node)
        if "/pods/" in p and "kubernetes.io~csi" in p
    ]


# --- refusals: what the pod's Events say, and nothing mounted or started --------------------------


def failed_mount(bed: Bed, pod: str) -> str:
    """The message of the pod's FailedMount Event, "" while there is none."""
    events = kget(bed, "-n", APPS, "events", "--field-selector", f"involvedObject.name={pod}")["items"]
    return next((str(e["message"]) for e in events if e["reason"] == "FailedMount"), "")


def static_claim(bed: Bed, name: str, access: str = "ReadWriteMany", **attrs: str) -> None:
    """A static PV ``name`` of the driver on the Dataset's masters (no fs-path: the cache's root), its
    directory ``/{name}``, with ``attrs``; and its claim ``name``, both of access mode ``access``."""
    dataset_pv = kget(bed, "pv", names.dataset_pv(APPS, DATASET))
    masters = dataset_pv["spec"]["csi"]["volumeAttributes"][names.PARAM_MASTER_ADDRS]
    attributes = {names.PARAM_MASTER_ADDRS: masters, names.PARAM_CURVINE_PATH: f"/{name}", **attrs}
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": [access],
            "storageClassName": "",
            "claimRef": {"namespace": APPS, "name": name},
            "csi": {"driver": names.CSI_DRIVER, "volumeHandle": name, "volumeAttributes": attributes},
        },
    }
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": APPS},
        "spec": {
            "accessModes": [access],
            "storageClassName": "",
            "volumeName": name,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    items = [volume, claim]
    kubectl(
        bed.kc, "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
    )


def delete_claim(bed: Bed, name: str) -> None:
    kubectl(bed.kc, "-n", APPS, "delete", "pod", name, "--wait=true", "--ignore-not-found")
    kubectl(bed.kc, "-n", APPS, "delete", "pvc", name, "--ignore-not-found")
    kubectl(bed.kc, "delete", "pv", name, "--ignore-not-found")


def node_mounts_under(bed: Bed, *parts: str) -> list[str]:
    return [p for p in realnodes.namespace_mounts(bed.cluster, bed.node) if all(x in p for x in parts)]


def test_a_clientless_datasets_pv_is_refused_and_the_pod_says_why(bed: Bed) -> None:
    name = "clientless"
    static_claim(bed, name, **{names.VOLUME_ATTR_CLIENTLESS: "true"})
    try:
        kubectl(bed.kc, "apply", "-f", "-", stdin=json.dumps(app_pod(name, name)))
        message = eventually(lambda: failed_mount(bed, name), "a FailedMount Event on the pod", timeout=120)
        assert "FailedPrecondition" in message, message
        assert names.LABEL_INJECT in message, message
        assert kget(bed, "-n", APPS, "pod", name)["status"]["phase"] == "Pending"
        # Issue 28, item 8: explain shows the real kubelet's FailedMount for the pod stuck on it.
        explained = ok(kubectl_fluid(bed.kc, "explain", f"pod/{name}", "-n", APPS))
        [mounting] = [line for line in explained.splitlines() if line.startswith("Mounting:")]
        assert "FailedPrecondition" in mounting, explained
        assert fuse_pods(bed) == []
        assert node_mounts_under(bed, names.csi_staging_root(names.KUBELET_PLUGINS_ROOT) + "/") == []
        assert node_mounts_under(bed, "kubernetes.io~csi", name) == []
    finally:
        delete_claim(bed, name)


def standin_cluster(bed: Bed) -> Path:
    """The stand-in's Curvine cluster of the Dataset's masters, in the node's own directory."""
    masters = kget(bed, "pv", names.dataset_pv(APPS, DATASET))["spec"]["csi"]["volumeAttributes"][
        names.PARAM_MASTER_ADDRS
    ]
    return bed.node.root / "curvine-standin" / names.cluster_id(masters)


def test_a_symlink_at_a_volumes_directory_is_refused_and_the_pod_says_where(bed: Bed) -> None:
    name = "linked"
    cluster = standin_cluster(bed)
    # A tenant replaced a volume's directory in the cache with a link to a directory of the node.
    secrets = bed.node.root / "host-secrets"
    secrets.mkdir(exist_ok=True)
    (secrets / "token").write_text("a service account token")
    (cluster / name).symlink_to(secrets)
    static_claim(bed, name)
    try:
        kubectl(bed.kc, "apply", "-f", "-", stdin=json.dumps(app_pod(name, name)))
        message = eventually(lambda: failed_mount(bed, name), "a FailedMount Event on the pod", timeout=120)
        assert "FailedPrecondition" in message, message
        assert f"{names.PARAM_CURVINE_PATH} /{name}" in message, message
        assert "symbolic link" in message, message
        assert kget(bed, "-n", APPS, "pod", name)["status"]["phase"] == "Pending"
        # Nothing staged (the FUSE tests before staged nothing that is still there) nor published.
        assert node_mounts_under(bed, names.csi_staging_root(names.KUBELET_PLUGINS_ROOT) + "/") == []
        assert node_mounts_under(bed, "kubernetes.io~csi", name) == []
    finally:
        delete_claim(bed, name)
        (cluster / name).unlink()
    eventually(lambda: fuse_pods(bed) == [], "no FUSE pod left once the pod is gone", timeout=90)
    eventually(lambda: not fuse_processes(bed.node), "no FUSE program left once the pod is gone", timeout=30)


def test_a_read_only_many_claim_is_mounted_read_only_in_the_pod(bed: Bed) -> None:
    # kubelet publishes a ReadOnlyMany claim with readonly=false unless the pod says readOnly (this
    # one does not), and containerd then asks runc for a read-write bind, which clears a read-only
    # bind's flag: the access mode alone must keep a reader from writing the shared data, and does
    # through its FUSE, mounted read-only at NodeStage.
    name = "reader-only"
    before = {p["metadata"]["uid"] for p in fuse_pods(bed)}
    shared = standin_cluster(bed) / name
    shared.mkdir(parents=True, exist_ok=True)
    (shared / "shared").write_text("the dataset\n")
    static_claim(bed, name, access="ReadOnlyMany")
    try:
        kubectl(bed.kc, "apply", "-f", "-", stdin=json.dumps(app_pod(name, name)))
        eventually(
            lambda: ready(kget(bed, "-n", APPS, "pod", name)), "the pod Running with its volume", timeout=180
        )
        assert sh(bed, name, "cat /data/shared").strip() == "the dataset"
        uid = pod_uid(bed, name)
        with open("/proc/self/mountinfo") as table:
            # The target's per-mount options on the node: what the driver made.
            [target] = [line.split()[5] for line in table if uid in line and "kubernetes.io~csi" in line]
        assert "ro" in target.split(","), target
        seen = sh(bed, name, "grep ' /data ' /proc/self/mounts")
        tried = sh(bed, name, "(echo overwritten > /data/shared) 2>&1; (echo x > /data/new) 2>&1; true")
        assert tried.count("Read-only file system") == 2, (tried, seen)
        assert (shared / "shared").read_text() == "the dataset\n"
        assert not (shared / "new").exists()
    finally:
        delete_claim(bed, name)
    eventually(
        lambda: {p["metadata"]["uid"] for p in fuse_pods(bed)} == before,
        "its FUSE pod gone once the pod is",
        timeout=90,
    )
