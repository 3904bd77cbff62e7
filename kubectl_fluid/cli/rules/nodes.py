"""Rules about the nodes pods of datasets run on: the product's CSI driver not registered on a pod's
node (``csi-node-not-registered``: kubelet cannot stage or publish its volumes there), and a node
NotReady or Unknown that carries FUSE mounts or app pods in scope (``node-not-ready-with-fuse``:
nothing there reports or repairs them). Pure.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kubectl_fluid.api import names
from kubectl_fluid.cli.rules import inscope
from kubectl_fluid.cli.rules.finding import Finding, ObjectRef
from kubectl_fluid.cli.rules.needs import rule
from kubectl_fluid.cli.snapshot import key, name_of

if TYPE_CHECKING:
    from kubectl_fluid.cli.rules.finding import Rule, Scope
    from kubectl_fluid.cli.snapshot import Snapshot

CSI_NODE_NOT_REGISTERED = "csi-node-not-registered"
NODE_NOT_READY_WITH_FUSE = "node-not-ready-with-fuse"


@rule(CSI_NODE_NOT_REGISTERED, "pods", "csinodes", "persistentvolumeclaims", "persistentvolumes")
def csi_node_not_registered(snap: Snapshot, scope: Scope) -> Iterator[Finding]:
    by_node: dict[str, list[str]] = {}
    for pod in inscope.pods(snap, scope):
        node = inscope.node_of(pod)
        if not node or not inscope.uses_csi(snap, pod):
            continue
        drivers = snap.csi_drivers(node)
        if drivers is None or names.CSI_DRIVER in drivers:
            continue
        by_node.setdefault(node, []).append("/".join(key(pod)))
    for node, pods in sorted(by_node.items()):
        registered = sorted(snap.csi_drivers(node) or ())
        has = snap.get("csinodes", "", node) is not None
        yield Finding(
            rule=CSI_NODE_NOT_REGISTERED,
            severity="error",
            object=ObjectRef("Node", node),
            message=(
                f"the CSI driver {names.CSI_DRIVER} is not registered on node {node}, so kubelet cannot "
                f"mount the volumes of {len(pods)} pod(s) there"
            ),
            evidence=(
                f"CSINode {node}: spec.drivers: {', '.join(registered) or '<none>'}"
                if has
                else f"no CSINode {node}",
                f"pods: {', '.join(pods)}",
            ),
            advice=(
                f"the CSI node pod (DaemonSet {names.FLUID_NAMESPACE}/{names.CSI_NODE_DAEMONSET}) must "
                f"run on {node} and register: kubectl -n {names.FLUID_NAMESPACE} get pods -o wide "
                f"-l {names.LABEL_APP_COMPONENT}={names.CSI_NODE_COMPONENT}; check its nodeSelector, taints "
                "and its log"
            ),
        )


@rule(NODE_NOT_READY_WITH_FUSE, "nodes")
def node_not_ready_with_fuse(snap: Snapshot, scope: Scope) -> Iterator[Finding]:
    mounts: dict[str, list[str]] = {}
    for m in inscope.fusemounts(snap, scope):
        mounts.setdefault(str((m.get("spec") or {}).get("nodeName") or ""), []).append(name_of(m))
    pods: dict[str, list[str]] = {}
    for p in inscope.pods(snap, scope):
        pods.setdefault(inscope.node_of(p), []).append("/".join(key(p)))
    for node in sorted((set(mounts) | set(pods)) - {""}):
        obj = snap.get("nodes", "", node)
        if obj is None:
            continue  # gone, or nodes unreadable: nothing says it is not ready
        ready = _ready(obj)
        # No Ready condition at all: a node its kubelet has not reported for yet (or a hand-made
        # one), which the node controller marks Unknown once its grace period passes: not evidence.
        if not ready or ready.get("status") == "True":
            continue
        evidence = [
            f"condition Ready: {ready.get('status', 'absent')}"
            + (f" ({ready['reason']})" if ready.get("reason") else "")
            + (f": {ready['message']}" if ready.get("message") else "")
        ]
        if ready.get("lastHeartbeatTime"):
            evidence.append(f"lastHeartbeatTime: {ready['lastHeartbeatTime']}")
        if mounts.get(node):
            evidence.append(f"FuseMounts: {', '.join(mounts[node])}")
        if pods.get(node):
            evidence.append(f"pods: {', '.join(pods[node])}")
        yield Finding(
            rule=NODE_NOT_READY_WITH_FUSE,
            severity="error",
            object=ObjectRef("Node", node),
            message=(
                f"node {node} is not Ready ({ready.get('status', 'no condition')}) and holds "
                f"{len(mounts.get(node, []))} FUSE mount(s) and {len(pods.get(node, []))} pod(s) in scope: "
                "nothing there mounts, reports or repairs them"
            ),
            evidence=tuple(evidence),
            advice=(
                f"bring the node's kubelet back (kubectl describe node {node}); or drain it so the pods "
                "move (their volumes are mounted again on the new node)"
            ),
        )


def _ready(node: dict[str, Any]) -> dict[str, Any]:
    conditions = (node.get("status") or {}).get("conditions") or ()
    return next((dict(c) for c in conditions if c.get("type") == "Ready"), {})


RULES: list[Rule] = [csi_node_not_registered, node_not_ready_with_fuse]
