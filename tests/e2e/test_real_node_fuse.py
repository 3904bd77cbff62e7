"""The FUSE path on a real node, from the product's image and manifests: ``kubectl apply -k manifests/``
on a cluster of its own whose one node is a real, untainted kubelet. The fluid-csi-node DaemonSet pod
registers the driver with kubelet itself; a FUSE Dataset's PVC and a second volume of the same mount
key are mounted by two real pods; the FUSE program runs in its standalone pod (the image's
curvine-fuse-standin, as the DaemonSet says), is killed and replaced while the pods keep running;
``kubectl fluid mounts`` shows the node's reference counts; deleting the pods stops the FUSE and leaves
nothing of the mount key mounted, on the host or in the node's own mount namespace.

The tests run in order on one cluster (module fixture); each one's state is the next one's start."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import localcluster
from kubectl_fluid.api import names
from localcluster import realnodes
from tests.e2e.fluid import MANIFESTS, kubectl
from tests.e2e.test_cli_inject import kubectl_fluid, ok
from tests.e2e.test_real_node_product import get, ready, users_cluster  # noqa: F401 (a fixture)
from tests.e2e.wait import eventually

SYSTEM = "fluid-system"
APPS = "default"
DATASET = "data"
# A second claim on the Dataset's own directory: same masters, same fs-path, so the same mount key.
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


def sh(bed: Bed, pod: str, script: str) -> str:
    return kubectl(bed.kc, "-n", APPS, "exec", pod, "--", "sh", "-c", script)


def fuse_pods(bed: Bed) -> list[dict[str, Any]]:
    return system_pods(bed, names.LABEL_MOUNT_KEY)


def mounts_json(bed: Bed) -> list[dict[str, Any]]:
    out = ok(kubectl_fluid(bed.kc, "mounts", "--node", NODE, "-o", "json"))
    listed = json.loads(out)
    return listed["items"] if isinstance(listed, dict) else listed  # type: ignore[no-any-return]


def refs(bed: Bed) -> int:
    [fm] = [m for m in mounts_json(bed) if m["spec"]["mountKey"] == bed.key]
    return int(fm.get("status", {}).get("refCount") or 0)


def test_two_real_pods_share_a_fuse_volume_of_the_dataset(bed: Bed) -> None:
    kubectl(bed.kc, "apply", "-f", str(MANIFESTS / "samples" / "cacheruntimeclass-curvine.yaml"))
    kubectl(bed.kc, "apply", "-f", str(MANIFESTS / "samples" / "dataset-curvine.yaml"))
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
    table = ok(kubectl_fluid(bed.kc, "mounts", "--node", NODE))
    assert NODE in table, table
    assert "standalone" in table, table


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
    for name in ("reader", "writer"):
        eventually(
            lambda n=name: sh(bed, n, "cat /data/hello").strip() == "written-by-writer",  # type: ignore[misc]
            f"{name} reading the file again through the new FUSE mount",
            timeout=120,
        )
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


def test_deleting_the_pods_drops_the_refcount_then_stops_the_fuse_leaving_nothing_mounted(bed: Bed) -> None:
    kubectl(bed.kc, "-n", APPS, "delete", "pod", "reader")
    eventually(lambda: refs(bed) == 1, "kubectl fluid mounts: REFS 1 after one pod deleted", timeout=90)
    assert fuse_pods(bed), "the FUSE pod went while a volume is still staged"
    # The FUSE was replaced under both pods (the test before): the reader's unpublish must leave the
    # writer's new bind alone, on the node and in the writer's container.
    assert sh(bed, "writer", "cat /data/hello").strip() == "written-by-writer"
    kubectl(bed.kc, "-n", APPS, "delete", "pod", "writer")
    eventually(lambda: not fuse_pods(bed), "the FUSE pod deleted once no volume is staged", timeout=90)
    eventually(lambda: not key_mounts(bed), "nothing of the mount key mounted, host or node", timeout=60)
    assert not [
        p
        for p in realnodes.namespace_mounts(bed.cluster, bed.node)
        if "/pods/" in p and "kubernetes.io~csi" in p
    ]
