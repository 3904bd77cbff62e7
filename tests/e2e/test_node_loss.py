"""A lost node's FuseMounts on a real API server (issue 29): the controller marks them Unknown, saying
which node, since when and their last known phase; ``kubectl fluid mounts`` and ``kubectl get`` show
it; the node back, a real node service publishes its mount again and it is Ready; the Node deleted,
they say it is gone.

The node is a Node object of the test's own, which kwok does not manage (no kwok annotation): its
Ready condition is what the test writes, as kubelet or the node lifecycle controller would
(kube-controller-manager turns it Unknown itself some 50 s after the last heartbeat the test wrote,
which is later than any step here waits). The controller runs with its ServiceAccount's RBAC of
manifests/, the node service with its own."""

from __future__ import annotations

import datetime
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubectl_fluid.api import names
from tests.e2e.csi import CsiNode
from tests.e2e.csicalls import stage_and_publish, unpublish_and_unstage
from tests.e2e.fluid import kubectl
from tests.e2e.test_cli_inject import kubectl_fluid, ok
from tests.e2e.test_cli_mounts import PLURAL, write_fusemount
from tests.e2e.test_csi_manifests import allowed
from tests.e2e.test_csi_node import csi_node_kubeconfig  # noqa: F401  (a fixture)
from tests.e2e.wait import eventually

STOPPED = "Kubelet stopped posting node status."


def set_ready(core: client.CoreV1Api, node: str, status: str) -> str:
    """Write the Node's Ready condition as kubelet (True) or the node lifecycle controller (Unknown)
    does; returns its transition time."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    reason, message = (
        ("KubeletReady", "kubelet is posting ready status")
        if status == "True"
        else ("NodeStatusUnknown", STOPPED)
    )
    condition = {
        "type": "Ready",
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    core.patch_node_status(node, {"status": {"conditions": [condition]}})
    return now


@pytest.fixture
def node(core: client.CoreV1Api) -> Iterator[str]:
    """A Ready Node no kwok manages, deleted afterwards (if the test has not)."""
    name = f"e2e-lost-{secrets.token_hex(3)}"
    core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    set_ready(core, name, "True")
    try:
        yield name
    finally:
        try:
            core.delete_node(name)
        except client.ApiException as e:
            if e.status != 404:
                raise


@pytest.fixture
def custom(k8s: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(k8s)


def fusemount(custom: client.CustomObjectsApi, name: str) -> dict[str, Any]:
    found = custom.get_cluster_custom_object(names.GROUP, names.VERSION, PLURAL, name)
    assert isinstance(found, dict)
    return found


def status_of(custom: client.CustomObjectsApi, name: str) -> dict[str, Any]:
    status: dict[str, Any] = fusemount(custom, name).get("status") or {}
    return status


def controller_holds_status(fm: dict[str, Any]) -> bool:
    return any(
        e.get("manager") == names.CONTROLLER_FIELD_MANAGER
        and e.get("subresource") == "status"
        and e.get("fieldsV1")
        for e in fm["metadata"].get("managedFields") or ()
    )


@pytest.mark.usefixtures("controller")
def test_a_lost_nodes_mounts_are_unknown_shown_as_such_and_given_back_when_it_is_ready(
    core: client.CoreV1Api,
    custom: client.CustomObjectsApi,
    node: str,
    kubeconfig: Path,
) -> None:
    key = secrets.token_hex(16)
    name = write_fusemount(custom, node, key, {"phase": "Ready", "refCount": 1})
    try:
        assert status_of(custom, name)["phase"] == "Ready"

        since = set_ready(core, node, "Unknown")
        status = eventually(
            lambda: (s := status_of(custom, name)).get("phase") == "Unknown" and s,
            "the FuseMount Unknown",
            20,
        )
        assert status["reason"].startswith(
            f"node {node} is NotReady since {since} (Ready=Unknown: {STOPPED}): nothing reports this mount;"
            " it is shown as last known: Ready"
        ), status["reason"]
        assert status["lastTransitionTime"] == since
        assert status["refCount"] == 1  # the rest as the node last published it

        # kubectl fluid mounts: PHASE, the reason in -o wide, and a line on stderr.
        run = kubectl_fluid(kubeconfig, "mounts", "--node", node, "-o", "wide")
        row = ok(run).splitlines()[1]
        assert row.split()[6] == "Unknown"
        assert row.endswith(status["reason"])
        assert f"node(s) {node} (1) are Unknown" in run.stderr
        # kubectl get: the CRD's Phase column.
        table = kubectl(kubeconfig, "get", "fusemounts", name, "--no-headers")
        assert table.split()[4] == "Unknown", table  # NAME NODE MODE REFS PHASE AGE

        # Back: the controller gives up what it held (with no node service here, nothing says a phase).
        set_ready(core, node, "True")
        eventually(
            lambda: not controller_holds_status(fusemount(custom, name)),
            "the controller's fields given up",
            20,
        )
        back = status_of(custom, name)
        assert back.get("phase") != "Unknown"
        assert "reason" not in back

        # Deleted: gone, in so many words.
        core.delete_node(node)
        status = eventually(
            lambda: (s := status_of(custom, name)).get("phase") == "Unknown" and s, "Unknown once deleted", 20
        )
        assert status["reason"].startswith(f"node {node} is gone: its Node object was deleted"), status[
            "reason"
        ]
    finally:
        custom.delete_cluster_custom_object(names.GROUP, names.VERSION, PLURAL, name)


@pytest.mark.skipif(
    not Path("/dev/fuse").exists(), reason="the node service mounts real FUSE: needs /dev/fuse"
)
@pytest.mark.usefixtures("controller")
def test_a_node_service_publishes_its_mount_again_when_its_node_is_back(
    core: client.CoreV1Api,
    custom: client.CustomObjectsApi,
    node: str,
    csi_node_kubeconfig: Path,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    root = tmp_path_factory.mktemp("n", numbered=True)
    service = CsiNode(node, root, csi_node_kubeconfig)
    masters = "127.0.0.1:18995"
    (service.data / names.cluster_id(masters) / "lost").mkdir(parents=True)
    staging, target = root / "staging" / "v1", root / "pods" / "p1" / "mount"
    context = {names.PARAM_MASTER_ADDRS: masters, names.PARAM_CURVINE_PATH: "/lost"}
    service.start()
    try:
        stage_and_publish(service.socket, "v1", staging, target, context)
        selector = names.fuse_mount_node_selector(node)

        def mount() -> dict[str, Any] | None:
            found = custom.list_cluster_custom_object(
                names.GROUP, names.VERSION, PLURAL, label_selector=selector
            )
            return found["items"][0] if found["items"] else None

        published = eventually(
            lambda: (m := mount()) and m.get("status", {}).get("phase") == "Ready" and m, "mirrored"
        )
        name = published["metadata"]["name"]

        set_ready(core, node, "Unknown")
        eventually(lambda: status_of(custom, name).get("phase") == "Unknown", "the FuseMount Unknown", 20)

        set_ready(core, node, "True")
        status = eventually(
            lambda: (s := status_of(custom, name)).get("phase") == "Ready" and "reason" not in s and s,
            "the node service's own phase again",
            20,
        )
        assert status["refCount"] == 1
        assert [t["path"] for t in status["volumes"][0]["targets"]] == [str(target)]
        eventually(
            lambda: not controller_holds_status(fusemount(custom, name)), "the controller holds nothing", 20
        )
        assert "node is Ready again: publishing every mount again" in service.log.read_text()

        unpublish_and_unstage(service.socket, "v1", staging, target)
        eventually(lambda: mount() is None, "the FuseMount deleted", 20)
    finally:
        service.stop()
        service.stop_leftovers_then_complain()


def test_the_controller_may_watch_nodes_and_mark_fusemounts_and_no_more(
    fluid: Path, k8s: client.ApiClient
) -> None:
    """Least privilege, as the API server's authorizer answers for the controller's ServiceAccount."""
    authz = client.AuthorizationV1Api(k8s)

    def can(verb: str, resource: str, group: str = "", **where: str) -> bool:
        return allowed(authz, "fluid-controller", verb, resource, group=group, **where)

    assert can("list", "nodes")
    assert can("watch", "nodes")
    # Patch, to take a deleted runtime's fluid.io/f-* labels off its nodes (controller/fuselabels.py),
    # and get and patch for the cache-node labels of its workers' nodes (controller/cachenodes.py);
    # nothing else on a Node.
    assert can("get", "nodes")
    assert can("patch", "nodes")
    for verb in ("create", "update", "delete"):
        assert not can(verb, "nodes"), verb
    assert not can("patch", "nodes", subresource="status")
    assert can("watch", "fusemounts", names.GROUP)
    assert can("patch", "fusemounts", names.GROUP, subresource="status")
    for verb in ("create", "patch", "delete"):
        assert not can(verb, "fusemounts", names.GROUP), verb
