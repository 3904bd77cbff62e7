"""The CSI node service on a real API server: pods using one PVC on one node share one FUSE through
the kubelet stand-in's calls (embedded mode, the FUSE the node service's own child); the FuseMount
mirror follows the node's state and catches up after an API outage (a cut the real node's API
connection has no seam for). Standalone mode, a FUSE killed and replaced, and what the driver refuses
run on a real node, from the product's image and manifests: test_real_node_fuse.py.

Read back through the official client and the kernel's mount table, not through the driver."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubectl_fluid.api import names
from tests.e2e.csi import ApiProxy, CsiNode, KubeletStandin, node_object, upstream_of, via_proxy
from tests.e2e.csicalls import stage_and_publish, unpublish_and_unstage
from tests.e2e.fluid import free_port, kubectl_binary, metric_sum, service_account_kubeconfig
from tests.e2e.wait import eventually

pytestmark = pytest.mark.skipif(
    not Path("/dev/fuse").exists(), reason="the node service mounts real FUSE: needs /dev/fuse and root"
)

MASTERS = "127.0.0.1:18995"
CSI_NODE_ACCOUNT = "fluid-csi-node"  # manifests/csi/node-daemonset.yaml


@pytest.fixture
def node_name(core: client.CoreV1Api) -> Iterator[str]:
    name = f"e2e-csi-{secrets.token_hex(3)}"
    core.create_node(node_object(name))
    try:
        yield name
    finally:
        core.delete_node(name)


@pytest.fixture
def proxy(kubeconfig: Path) -> Iterator[ApiProxy]:
    p = ApiProxy(upstream_of(kubeconfig))
    p.restore()
    try:
        yield p
    finally:
        p.cut()


@pytest.fixture(scope="session")
def csi_node_kubeconfig(
    fluid: Path, core: client.CoreV1Api, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The node DaemonSet's ServiceAccount: the node service gets exactly the RBAC of manifests/csi."""
    out = tmp_path_factory.mktemp("sa") / "csi-node.kubeconfig"
    return service_account_kubeconfig(fluid, core, out, account=CSI_NODE_ACCOUNT)


@pytest.fixture
def mount_mode() -> str:
    return "embedded"


@pytest.fixture
def csi_node(
    csi_node_kubeconfig: Path,
    node_name: str,
    proxy: ApiProxy,
    mount_mode: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[CsiNode]:
    # Unix socket paths are short (108 bytes): a short private root.
    root = tmp_path_factory.mktemp("n", numbered=True)
    kubeconfig = via_proxy(csi_node_kubeconfig, proxy, root / "kubeconfig")
    node = CsiNode(node_name, root, kubeconfig, extra=[f"--mount-mode={mount_mode}"])
    node.start()
    try:
        yield node
    finally:
        node.stop()
        node.stop_leftovers_then_complain()


@pytest.fixture
def kubelet(fluid: Path, csi_node: CsiNode) -> Iterator[KubeletStandin]:
    standin = KubeletStandin(fluid, [csi_node], csi_node.root / "kubelet-standin.log")
    standin.start()
    try:
        yield standin
    finally:
        standin.stop()


def fusemounts(k8s: client.ApiClient, node: str) -> list[dict[str, Any]]:
    found = client.CustomObjectsApi(k8s).list_cluster_custom_object(
        names.GROUP, names.VERSION, "fusemounts", label_selector=names.fuse_mount_node_selector(node)
    )
    items: list[dict[str, Any]] = found["items"]
    return items


def static_pv(core: client.CoreV1Api, namespace: str, node: CsiNode, **attrs: str) -> str:
    """A static PV of the driver (no fs-path: ``/``) bound to PVC ``data`` in ``namespace``; its
    directory exists in the stand-in's data."""
    pv = f"pv-{namespace}"[:63]
    curvine_path = f"/{namespace}"
    (node.data / names.cluster_id(MASTERS) / namespace).mkdir(parents=True, exist_ok=True)
    attributes = {names.PARAM_MASTER_ADDRS: MASTERS, names.PARAM_CURVINE_PATH: curvine_path, **attrs}
    core.create_persistent_volume(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": pv},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "persistentVolumeReclaimPolicy": "Retain",
                "claimRef": {"namespace": namespace, "name": "data"},
                "csi": {"driver": names.CSI_DRIVER, "volumeHandle": pv, "volumeAttributes": attributes},
            },
        }
    )
    core.create_namespaced_persistent_volume_claim(
        namespace,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": pv,
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )
    return pv


def pod_using_pvc(core: client.CoreV1Api, namespace: str, name: str, node: str) -> str:
    pod = core.create_namespaced_pod(
        namespace,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {
                "nodeName": node,
                "containers": [{"name": "app", "image": "busybox", "command": ["sleep", "3600"]}],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
            },
        },
    )
    return str(pod.metadata.uid)


def delete_pod(core: client.CoreV1Api, namespace: str, name: str) -> None:
    core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)


@pytest.fixture
def cleanup_pv(core: client.CoreV1Api, namespace: str) -> Iterator[None]:
    yield
    for pv in core.list_persistent_volume().items:
        if pv.metadata.name == f"pv-{namespace}"[:63]:
            core.delete_persistent_volume(pv.metadata.name)


def node_state_refs(node: CsiNode) -> dict[str, int]:
    """Mount key → refcount, as the node service's own state file holds them."""
    state = json.loads((node.root / "state" / names.CSI_STATE_FILE).read_text())
    return {key: len(entry.get("volumes", {})) for key, entry in state.get("mounts", {}).items()}


def plugin_mounts(node: str) -> dict[str, int]:
    """Mount key (short) → REFS, from ``kubectl fluid mounts --node`` through a real kubectl."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    run = subprocess.run(
        [kubectl_binary(), "fluid", "mounts", "--node", node, "--no-headers"],
        capture_output=True, text=True, env=env, check=True, timeout=60,
    )  # fmt: skip
    rows = [line.split() for line in run.stdout.splitlines() if line.strip()]
    header = ["NODE", "MOUNT-KEY", "MASTER-ADDRS", "FS-PATH", "MODE", "REFS", "PHASE", "AGE"]
    return {row[header.index("MOUNT-KEY")]: int(row[header.index("REFS")]) for row in rows}


def agree(node: CsiNode) -> bool:
    """The plugin shows exactly the mount keys and refcounts the node service holds."""
    held = {key[: names.FUSE_MOUNT_KEY_PREFIX_LENGTH]: refs for key, refs in node_state_refs(node).items()}
    return plugin_mounts(node.name) == held


def fuse_pods(core: client.CoreV1Api, node: str) -> list[client.V1Pod]:
    pods = core.list_namespaced_pod(
        names.FLUID_NAMESPACE, label_selector=f"{names.LABEL_APP_COMPONENT}={names.FUSE_POD_COMPONENT}"
    ).items
    return [p for p in pods if p.spec.node_name == node and not p.metadata.deletion_timestamp]


@pytest.mark.usefixtures("kubelet", "cleanup_pv")
# Embedded mode (the FUSE the node service's own child); standalone mode's share-and-teardown runs on
# a real node, its FUSE in a real pod (test_real_node_fuse.py).
def test_two_pods_one_pvc_share_one_fuse_until_both_are_gone(
    core: client.CoreV1Api, k8s: client.ApiClient, namespace: str, csi_node: CsiNode, mount_mode: str
) -> None:
    pv = static_pv(core, namespace, csi_node)
    uid_a = pod_using_pvc(core, namespace, "a", csi_node.name)
    uid_b = pod_using_pvc(core, namespace, "b", csi_node.name)

    def mirrored_with(uids: set[str]) -> dict[str, Any] | None:
        items = fusemounts(k8s, csi_node.name)
        if len(items) != 1:
            return None
        status = items[0].get("status", {})
        targets = {t["podUID"] for v in status.get("volumes", []) for t in v.get("targets", [])}
        return items[0] if status.get("phase") == "Ready" and targets == uids else None

    mount = eventually(
        lambda: mirrored_with({uid_a, uid_b}), "a FuseMount with both pods' targets", timeout=30
    )
    assert mount["status"]["refCount"] == 1
    assert mount["spec"]["fsPath"] == "/"  # a static PV without fs-path
    assert mount["spec"]["masterAddrs"] == MASTERS
    assert mount["spec"]["mode"] == mount_mode
    eventually(lambda: agree(csi_node), "kubectl fluid mounts = the node's state (1 key, 1 ref)", 10)
    assert node_state_refs(csi_node) == {mount["spec"]["mountKey"]: 1}
    assert len(csi_node.fuse_pids()) == 1

    target_a = Path(names.csi_publish_target(uid_a, pv, str(csi_node.kubelet_root)))
    target_b = Path(names.csi_publish_target(uid_b, pv, str(csi_node.kubelet_root)))
    (target_a / "written-by-a").write_text("hello from a")
    assert (target_b / "written-by-a").read_text() == "hello from a"
    # Through FUSE into the cache's own directory for this PV.
    assert (csi_node.data / names.cluster_id(MASTERS) / namespace / "written-by-a").exists()

    delete_pod(core, namespace, "a")
    mount = eventually(lambda: mirrored_with({uid_b}), "the FuseMount without pod a's target", timeout=30)
    assert mount["status"]["refCount"] == 1
    assert str(target_a) not in csi_node.mounts()
    assert (target_b / "written-by-a").read_text() == "hello from a", "pod b lost its mount"
    assert len(csi_node.fuse_pids()) == 1
    assert agree(csi_node)

    delete_pod(core, namespace, "b")
    eventually(lambda: fusemounts(k8s, csi_node.name) == [], "the FuseMount deleted", timeout=30)
    eventually(lambda: csi_node.fuse_pids() == [], "the FUSE process stopped", timeout=15)
    assert csi_node.mounts() == []
    assert fuse_pods(core, csi_node.name) == []
    assert plugin_mounts(csi_node.name) == {}
    assert node_state_refs(csi_node) == {}


def test_kubelet_calls_succeed_while_the_api_server_is_unreachable_and_the_mirror_catches_up(
    k8s: client.ApiClient, csi_node: CsiNode, proxy: ApiProxy
) -> None:
    (csi_node.data / names.cluster_id(MASTERS) / "outage").mkdir(parents=True)
    staging = csi_node.root / "staging" / "v1"
    target = csi_node.root / "pods" / "p1" / "mount"
    context = {names.PARAM_MASTER_ADDRS: MASTERS, names.PARAM_CURVINE_PATH: "/outage"}
    proxy.cut()
    stage_and_publish(csi_node.socket, "v1", staging, target, context)
    assert str(target) in csi_node.mounts()
    time.sleep(1)  # the mirror is retrying against a closed port meanwhile
    assert fusemounts(k8s, csi_node.name) == [], "written while the API server was unreachable?"

    restored = time.monotonic()
    proxy.restore()

    def mirrored() -> dict[str, Any] | None:
        found = fusemounts(k8s, csi_node.name)
        return found[0] if found and found[0].get("status", {}).get("phase") == "Ready" else None

    mount = eventually(mirrored, "the FuseMount after the outage", 10)
    lag = time.monotonic() - restored
    print(f"mirror caught up {lag:.2f}s after the API server came back")
    assert mount["status"]["refCount"] == 1
    assert [t["path"] for t in mount["status"]["volumes"][0]["targets"]] == [str(target)]

    proxy.cut()
    unpublish_and_unstage(csi_node.socket, "v1", staging, target)
    assert csi_node.mounts() == []
    proxy.restore()
    eventually(lambda: fusemounts(k8s, csi_node.name) == [], "the FuseMount deleted after the outage", 10)


def mirror_writes(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return metric_sum(r.read().decode(), "fluid_csi_mirror_writes_total")


def test_the_mirrors_resync_writes_only_what_was_changed_by_hand(
    k8s: client.ApiClient, csi_node_kubeconfig: Path, node_name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A steady node writes nothing at its resync (once two applies per mount per period); an object
    edited or deleted by hand is put right at the next one."""
    root = tmp_path_factory.mktemp("n", numbered=True)
    port = free_port()
    node = CsiNode(
        node_name, root, csi_node_kubeconfig, extra=["--mirror-resync=0.5", f"--health-port={port}"]
    )
    node.start()
    custom = client.CustomObjectsApi(k8s)
    staging, target = root / "staging" / "v1", root / "pods" / "p1" / "mount"
    try:
        (node.data / names.cluster_id(MASTERS) / "steady").mkdir(parents=True)
        context = {names.PARAM_MASTER_ADDRS: MASTERS, names.PARAM_CURVINE_PATH: "/steady"}
        stage_and_publish(node.socket, "v1", staging, target, context)

        def ready() -> dict[str, Any] | None:
            found = fusemounts(k8s, node.name)
            return found[0] if found and found[0].get("status", {}).get("phase") == "Ready" else None

        name = eventually(ready, "the FuseMount", 15)["metadata"]["name"]
        time.sleep(1)  # the first resync after the first write
        before = mirror_writes(port)
        time.sleep(3)  # six resync periods
        assert mirror_writes(port) == before, "a steady node wrote at its resync"

        group = (names.GROUP, names.VERSION, "fusemounts", name)
        custom.patch_cluster_custom_object_status(*group, {"status": {"refCount": 9}})

        def put_right() -> bool:
            mount = ready()
            return mount is not None and mount["status"]["refCount"] == 1

        eventually(put_right, "the edit put right", 10)
        custom.delete_cluster_custom_object(*group)
        eventually(lambda: ready() is not None, "the deleted FuseMount written again", 10)
        assert mirror_writes(port) == before + 2
    finally:
        unpublish_and_unstage(node.socket, "v1", staging, target)
        node.stop()
        node.stop_leftovers_then_complain()
