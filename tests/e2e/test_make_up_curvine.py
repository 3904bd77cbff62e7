"""The real Curvine (curvine-server as master and worker, curvine-fuse, from ../shared/peers/curvine)
on ``make up``'s real node, the product as local processes: the CSI controller with the real
csi-provisioner on the host, the node's CSI node service in the node's own mount namespace
(product.ensure_real_node_csi), embedded FUSE, and a real kubelet making the calls to real containers:

- a dynamic PVC gets its directory in Curvine, and loses it when the claim is deleted;
- two pods share one real curvine-fuse (``kubectl fluid mounts`` REFS 1, two targets); what one
  writes the other reads, and so does a curvine-fuse of the host's own;
- curvine-fuse killed -9 is remounted and both running containers read again;
- one pod deleted, the other's volume stays whole;
- the node service killed -9 and started again adopts the running curvine-fuse;
- the last unstage stops curvine-fuse (a FUSE it started itself exits 0 on its SIGTERM), nothing
  left mounted; the claim's deletion removes its directory; ``make down`` leaves no process in the
  node's namespace.

Standalone mode, curvine-fuse killed in its FUSE pod and a master restart run on a user's shape of
cluster (test_real_node_curvine.py). A cluster of its own, as ``make up`` starts it; skipped, saying
why, where a real node cannot run or Curvine's binaries are not there."""

from __future__ import annotations

import json
import os
import secrets
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import localcluster
from kubectl_fluid.api import names
from localcluster import product, realnodes
from localcluster.peers import curvinebins, curvinecluster
from tests.e2e.fluid import kubectl
from tests.e2e.test_real_node import busybox_pod, in_namespace, namespace_processes, why_no_real_node
from tests.e2e.test_real_node_fuse import node_fusemounts
from tests.e2e.wait import eventually

NODE = f"{realnodes.NAME_PREFIX}0"
SERVICE = f"fluid-csi-{NODE}"
WRITTEN = "written-through-curvine"


@dataclass
class Bed:
    cluster: localcluster.Cluster
    layout: curvinecluster.Layout
    node: realnodes.RealNode
    view: str  # the node's mount namespace
    figures: dict[str, float] = field(default_factory=dict)
    fs_path: str = ""  # the claim's directory in Curvine, once bound
    pv: str = ""

    @property
    def kc(self) -> Path:
        return self.cluster.kubeconfig


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    reason = why_no_real_node()
    if reason is None and curvinebins.find() is None:
        reason = f"no real Curvine binaries: {curvinebins.peer_dir()} has none"
    if reason:
        pytest.skip(reason)
    state = tmp_path_factory.mktemp("make-up-curvine")
    cluster = localcluster.up(state, 0, None)
    view = ""
    try:
        product.install(cluster)
        [node] = realnodes.ensure(cluster, 1)
        layout = product.ensure_curvine(cluster)
        assert layout is not None
        product.ensure_real_node_csi(cluster, layout)
        product.ensure_csi_controller(cluster, layout)
        [containerd] = [p for p in cluster.procs if p.name == f"containerd-{node.name}"]
        view = os.readlink(f"/proc/{containerd.pid}/ns/mnt")
        yield Bed(cluster, layout, node, view)
    finally:
        localcluster.down(state)
    assert in_namespace(view) == [], "make down left processes in the node's mount namespace"
    with open("/proc/self/mountinfo") as table:
        assert str(state.resolve()) not in table.read()


def apply(bed: Bed, *objects: dict[str, Any]) -> None:
    kubectl(
        bed.kc, "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
    )


def app_pod(name: str) -> dict[str, Any]:
    pod = busybox_pod(name, f"{name} up")
    spec: dict[str, Any] = pod["spec"]  # type: ignore[assignment]
    # A remounted FUSE reaches the running container (the serverful webhook's injector sets it).
    spec["containers"][0]["volumeMounts"] = [
        {"name": "data", "mountPath": "/data", "mountPropagation": "HostToContainer"}
    ]
    spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    return pod


def sh(bed: Bed, pod: str, script: str) -> str:
    return kubectl(bed.kc, "exec", pod, "--", "sh", "-c", script)


def reads(bed: Bed, pod: str) -> bool:
    try:
        return sh(bed, pod, "cat /data/hello").strip() == WRITTEN
    except AssertionError:
        return False  # EIO / ENOTCONN while the FUSE is away


def fuse_pids(bed: Bed) -> list[int]:
    """The curvine-fuse programs in the node's namespace that serve a volume (not the CSI
    controller's own, which runs on the host)."""
    return [pid for pid, argv in namespace_processes(bed.view).items() if argv[0].endswith(b"curvine-fuse")]


def service_log(bed: Bed) -> str:
    return (bed.cluster.logs / f"{SERVICE}.log").read_text()


def the_mount(bed: Bed) -> dict[str, Any] | None:
    mounts = node_fusemounts(bed.kc)
    return mounts[0] if len(mounts) == 1 else None


def targets(mount: dict[str, Any] | None) -> int:
    volumes = ((mount or {}).get("status") or {}).get("volumes") or []
    return sum(len(v.get("targets") or []) for v in volumes)


def in_curvine(bed: Bed, path: str, tmp_path: Path) -> bool:
    with curvinecluster.mounted(bed.layout, "/", tmp_path / secrets.token_hex(3)) as own:
        argv = [str(a) for a in own.args]
        return (Path(argv[argv.index("--mnt-path") + 1]) / path.lstrip("/")).is_dir()


def test_a_dynamic_volume_is_a_directory_in_curvine_shared_by_two_real_pods_through_one_curvine_fuse(
    bed: Bed, tmp_path: Path
) -> None:
    fs_path = f"/e2e/{secrets.token_hex(4)}"
    storage_class = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "curvine-e2e"},
        "provisioner": names.CSI_DRIVER,
        "parameters": {
            names.PARAM_MASTER_ADDRS: bed.layout.master_addrs(),
            names.PARAM_FS_PATH: fs_path,
            names.PARAM_PATH_TYPE: names.PATH_TYPE_DIRECTORY_OR_CREATE,
        },
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    }
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "curvine-e2e",
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    apply(bed, storage_class, claim)

    def bound() -> str:
        read = json.loads(kubectl(bed.kc, "get", "pvc", "data", "-o", "json"))
        return str(read["spec"].get("volumeName") or "") if read["status"].get("phase") == "Bound" else ""

    bed.pv = eventually(bound, "claim data bound", timeout=60)
    bed.fs_path = f"{fs_path}/{bed.pv}"
    assert in_curvine(bed, bed.fs_path, tmp_path), f"{bed.fs_path} is not in Curvine"

    t0 = time.monotonic()
    apply(bed, app_pod("writer"), app_pod("reader"))
    for name in ("writer", "reader"):
        kubectl(bed.kc, "wait", "--for=condition=Ready", f"pod/{name}", "--timeout=120s")
    bed.figures["two real pods Running with the dynamic volume"] = time.monotonic() - t0
    mount = eventually(lambda: (m := the_mount(bed)) and targets(m) == 2 and m, "REFS 1, two targets")
    assert mount["status"]["refCount"] == 1
    assert mount["spec"]["masterAddrs"] == bed.layout.master_addrs()
    [pid] = fuse_pids(bed)
    assert os.readlink(f"/proc/{pid}/exe") == str(bed.layout.fuse)

    sh(bed, "writer", f"echo {WRITTEN} > /data/hello")
    assert reads(bed, "reader")
    with curvinecluster.mounted(bed.layout, bed.fs_path, tmp_path / "own") as own:
        argv = [str(a) for a in own.args]
        assert (Path(argv[argv.index("--mnt-path") + 1]) / "hello").read_text() == f"{WRITTEN}\n"


def test_curvine_fuse_killed_9_is_remounted_and_both_running_containers_read_again(bed: Bed) -> None:
    [pid] = fuse_pids(bed)
    t0 = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    for name in ("reader", "writer"):
        eventually(lambda n=name: reads(bed, n), f"{name} reading again after kill -9", timeout=60)  # type: ignore[misc]
    bed.figures["curvine-fuse killed -9 to both containers reading again"] = time.monotonic() - t0
    [new] = fuse_pids(bed)
    assert new != pid
    restarts = {
        json.loads(kubectl(bed.kc, "get", "pod", n, "-o", "json"))["status"]["containerStatuses"][0][
            "restartCount"
        ]
        for n in ("reader", "writer")
    }
    assert restarts == {0}


def test_one_pod_deleted_leaves_the_others_volume_whole(bed: Bed) -> None:
    kubectl(bed.kc, "delete", "pod", "reader", "--wait=true")
    eventually(lambda: targets(the_mount(bed)) == 1, "one target left", timeout=60)
    assert reads(bed, "writer")
    assert (the_mount(bed) or {})["status"]["refCount"] == 1


def test_the_node_service_killed_9_adopts_the_running_curvine_fuse(bed: Bed) -> None:
    [pid] = fuse_pids(bed)
    [service] = [p for p in bed.cluster.procs if p.name == SERVICE]
    os.kill(service.pid, signal.SIGKILL)
    os.waitpid(service.pid, 0)  # started by this process (make up's are the init process's to reap)
    product.ensure_real_node_csi(bed.cluster, bed.layout)
    eventually(lambda: "adopted FUSE" in service_log(bed), "the restarted node service adopting it", 30)
    assert fuse_pids(bed) == [pid], "the restarted node service started another curvine-fuse"
    sh(bed, "writer", "echo after-restart > /data/again")
    assert sh(bed, "writer", "cat /data/again").strip() == "after-restart"


def test_the_last_unstage_stops_curvine_fuse_and_the_claims_deletion_its_directory(
    bed: Bed, tmp_path: Path
) -> None:
    def stopped(pod: str) -> None:
        kubectl(bed.kc, "delete", "pod", pod, "--wait=true")
        eventually(lambda: not node_fusemounts(bed.kc) and not fuse_pids(bed), "curvine-fuse stopped", 60)
        key_mounts = [p for p in realnodes.namespace_mounts(bed.cluster, bed.node) if "/csi/curvine/" in p]
        assert key_mounts == []

    # The adopted curvine-fuse (not this node service's child: its exit status is not its to see).
    stopped("writer")
    assert "stopped FUSE (exit unknown)" in service_log(bed)
    # One it started itself, which it SIGTERMs and sees exit 0.
    apply(bed, app_pod("again"))
    kubectl(bed.kc, "wait", "--for=condition=Ready", "pod/again", "--timeout=120s")
    assert sh(bed, "again", "cat /data/again").strip() == "after-restart"
    stopped("again")
    assert "stopped FUSE (exit 0)" in service_log(bed), "the last unstage did not SIGTERM it to exit 0"

    kubectl(bed.kc, "delete", "pvc", "data", "--wait=true")
    eventually(
        lambda: bed.pv not in kubectl(bed.kc, "get", "pv", "-o", "name"), f"PV {bed.pv} deleted", timeout=60
    )
    assert not in_curvine(bed, bed.fs_path, tmp_path), "DeleteVolume left the directory in Curvine"


def test_zz_figures(bed: Bed) -> None:
    """The module's measurements, for the notes (not thresholds)."""
    for what, seconds in bed.figures.items():
        print(f"{what}: {seconds:.1f}s")
