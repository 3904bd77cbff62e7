"""Client mode (SPEC §7) on a real API server: a Dataset's PV (upstream's ``fluid_path`` and runtime,
no ``master-addrs``) is served by its runtime's client. The node service runs as the node
DaemonSet's ServiceAccount (the RBAC of manifests/csi): NodeStage labels its Node for the client
DaemonSet, waits for the client's FUSE at fluid_path and binds beneath it; two pods share it; the
client replaced gets the running targets bound again; the last unstage removes the label under
cleanPolicy OnDemand and leaves no mount of the node service's; a client that never mounts is a
FailedPrecondition naming what its pod does. The client is the FUSE stand-in started by the test at
fluid_path, as the client pod's container would; its pod is a pod of the client's labels on the node.
A real node running the runtime's real client image is the next step (the issue's Curvine run).

Read back through the official client, kubectl fluid and the kernel's mount table."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from kubernetes import client

from csi.model.clientvolume import client_mount_key
from csi.proto import csi_pb2, csi_pb2_grpc
from kubectl_fluid.api import names
from tests.e2e.csi import CsiNode, node_object
from tests.e2e.csicalls import stage_and_publish, unpublish_and_unstage
from tests.e2e.fluid import service_account_kubeconfig
from tests.e2e.test_csi_node import fusemounts, plugin_mounts
from tests.e2e.wait import eventually
from tests.standinclient import StandinClient

pytestmark = pytest.mark.skipif(
    not Path("/dev/fuse").exists() or os.geteuid() != 0, reason="real FUSE mounts need root and /dev/fuse"
)

WAIT = 4.0


def client_at(root: Path) -> StandinClient:
    return StandinClient(root / "runtime-mnt" / "cache-fuse", root / "data")


@pytest.fixture
def node_name(core: client.CoreV1Api) -> Iterator[str]:
    name = f"e2e-client-{os.urandom(3).hex()}"
    core.create_node(node_object(name))
    try:
        yield name
    finally:
        core.delete_node(name)


@pytest.fixture
def csi_node(
    fluid: Path, core: client.CoreV1Api, node_name: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CsiNode]:
    root = tmp_path_factory.mktemp("c", numbered=True)
    kubeconfig = service_account_kubeconfig(fluid, core, root / "kubeconfig", account="fluid-csi-node")
    node = CsiNode(node_name, root, kubeconfig, extra=["--client-wait", str(WAIT)])
    node.start()
    try:
        yield node
    finally:
        node.stop()
        node.stop_leftovers_then_complain()


@pytest.fixture
def runtime_client(tmp_path: Path) -> Iterator[StandinClient]:
    c = client_at(tmp_path / "client")
    try:
        yield c
    finally:
        c.stop()


def cache_runtime(k8s: client.ApiClient, namespace: str, clean_policy: str) -> None:
    body = {
        "apiVersion": names.API_VERSION,
        "kind": "CacheRuntime",
        "metadata": {"name": "ds", "namespace": namespace},
        "spec": {"runtimeClassName": "curvine", "client": {"cleanPolicy": clean_policy}},
    }
    client.CustomObjectsApi(k8s).create_namespaced_custom_object(
        names.GROUP, names.VERSION, namespace, "cacheruntimes", body
    )


def context_of(namespace: str, fluid_path: Path) -> dict[str, str]:
    """The volume context of the controller's PV of Dataset ``{namespace}/ds`` (storage.py), with the
    client's mount where this test's client makes it."""
    return {
        names.VOLUME_ATTR_DATASET_NAME: "ds",
        names.VOLUME_ATTR_DATASET_NAMESPACE: namespace,
        names.VOLUME_ATTR_FLUID_PATH: str(fluid_path),
        names.VOLUME_ATTR_MOUNT_TYPE: "curvine",
        names.VOLUME_ATTR_RUNTIME_NAMESPACE: namespace,
        names.VOLUME_ATTR_RUNTIME_NAME: "ds",
    }


def client_pod(core: client.CoreV1Api, namespace: str, node: str) -> None:
    """The client DaemonSet's pod on the node (kwok reports it Running; its FUSE is the test's)."""
    labels = dict(pair.split("=") for pair in names.client_pod_selector("ds").split(","))
    core.create_namespaced_pod(
        namespace,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "ds-client-x", "labels": labels},
            "spec": {"nodeName": node, "containers": [{"name": "fuse", "image": "curvine"}]},
        },
    )


def labelled(core: client.CoreV1Api, node: str, namespace: str) -> bool:
    labels = core.read_node(node).metadata.labels or {}
    return labels.get(names.fuse_node_label(namespace, "ds")) == names.TRUE


def read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def test_the_runtimes_client_serves_a_datasets_pv_shared_rebound_and_unlabelled(
    core: client.CoreV1Api,
    k8s: client.ApiClient,
    namespace: str,
    csi_node: CsiNode,
    runtime_client: StandinClient,
) -> None:
    cache_runtime(k8s, namespace, names.CLEAN_POLICY_ON_DEMAND)
    client_pod(core, namespace, csi_node.name)
    context = context_of(namespace, runtime_client.fluid_path)
    staging = csi_node.root / "staging"
    a, b = (csi_node.kubelet_root / "pods" / pod for pod in ("a", "b"))

    # The first NodeStage labels the node, and waits for the client (started once the label is there).
    def first() -> None:
        stage_and_publish(csi_node.socket, "pv-ds", staging, a, context)

    staged = threading.Thread(target=first)
    staged.start()
    eventually(lambda: labelled(core, csi_node.name, namespace), "the node labelled for the client", 10)
    runtime_client.start()
    staged.join(WAIT + 10)
    stage_and_publish(csi_node.socket, "pv-ds", staging, b, context)  # the second pod shares it
    (a / "f").write_text("from a")
    assert read(b / "f") == "from a"
    assert read(runtime_client.data / names.cluster_id("client:1") / "f") == "from a"

    key = client_mount_key(namespace, "ds")

    def targets(mount: dict[str, Any]) -> list[str]:
        return sorted(t["path"] for v in mount["status"].get("volumes") or () for t in v["targets"])

    # The mirror publishes in the background (it never holds up a CSI call): the second pod's target
    # comes in a later write than the Ready phase may.
    mount = eventually(
        lambda: next(
            (
                m
                for m in fusemounts(k8s, csi_node.name)
                if m["status"].get("phase") == "Ready" and targets(m) == [str(a), str(b)]
            ),
            None,
        ),
        "a Ready FuseMount of mode client with both pods' targets",
        timeout=30,
    )
    assert mount["spec"]["mode"] == "client"
    assert mount["spec"]["dataset"] == {"namespace": namespace, "name": "ds"}
    assert mount["status"]["podName"] == "ds-client-x"
    assert plugin_mounts(csi_node.name) == {key[: names.FUSE_MOUNT_KEY_PREFIX_LENGTH]: 1}
    assert csi_node.fuse_pids() == []  # no FUSE of the node service's own

    # The client killed -9 and replaced: the running pods read again without a restart.
    before = runtime_client.mounted()
    runtime_client.kill_9()
    assert read(a / "f") is None
    runtime_client.start()
    assert runtime_client.mounted() not in (None, before)
    eventually(lambda: read(a / "f") == read(b / "f") == "from a", "both targets bound again", timeout=10)

    # The last unstage: the label goes (OnDemand), nothing of the node service's stays mounted.
    with grpc.insecure_channel(f"unix://{csi_node.socket}") as channel:  # pod b goes: kubelet unpublishes
        request = csi_pb2.NodeUnpublishVolumeRequest(volume_id="pv-ds", target_path=str(b))
        csi_pb2_grpc.NodeStub(channel).NodeUnpublishVolume(request, timeout=10)
    assert labelled(core, csi_node.name, namespace)  # pod a still uses it: still staged
    unpublish_and_unstage(csi_node.socket, "pv-ds", staging, a)
    assert not labelled(core, csi_node.name, namespace)
    eventually(lambda: fusemounts(k8s, csi_node.name) == [], "the FuseMount deleted", timeout=30)
    assert csi_node.mounts() == []
    assert runtime_client.mounted() is not None  # the client's own: left alone


def test_a_missing_client_is_failed_precondition_and_on_runtime_deleted_keeps_the_label(
    core: client.CoreV1Api,
    k8s: client.ApiClient,
    namespace: str,
    csi_node: CsiNode,
    runtime_client: StandinClient,
) -> None:
    cache_runtime(k8s, namespace, names.CLEAN_POLICY_ON_DEMAND)
    client_pod(core, namespace, csi_node.name)
    context = context_of(namespace, runtime_client.fluid_path)
    staging, target = csi_node.root / "staging", csi_node.kubelet_root / "pods" / "a"
    with pytest.raises(grpc.RpcError) as caught:
        stage_and_publish(csi_node.socket, "pv-ds", staging, target, context)
    error: Any = caught.value
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert f"not mounted at {runtime_client.fluid_path} on this node after {WAIT:.0f} s" in error.details()
    assert "client pod ds-client-x is" in error.details()
    # Even under OnDemand: taken off at each failure, the label would end the client before it starts.
    assert labelled(core, csi_node.name, namespace)

    runtime_client.start()
    stage_and_publish(csi_node.socket, "pv-ds", staging, target, context)
    patch = {"spec": {"client": {"cleanPolicy": names.CLEAN_POLICY_ON_RUNTIME_DELETED}}}
    client.CustomObjectsApi(k8s).patch_namespaced_custom_object(
        names.GROUP, names.VERSION, namespace, "cacheruntimes", "ds", patch
    )
    unpublish_and_unstage(csi_node.socket, "pv-ds", staging, target)
    assert labelled(core, csi_node.name, namespace)  # OnRuntimeDeleted: for the runtime's life
    assert csi_node.mounts() == []
