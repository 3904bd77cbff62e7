"""A Node's readiness as the node lifecycle controller and ``kubectl get nodes`` judge it: its Ready
condition. Shared by the controller, which says that nobody reports the FuseMounts of a node that is
not Ready, and the CSI node service, which publishes its own again when its node is back.

Both hold Nodes in a watch cache trimmed to what this reads: a Node is mostly images, addresses and
capacity, and kubelet rewrites it every few seconds; ``lastHeartbeatTime`` is dropped so that a trimmed
Node changes only when its readiness does.
"""

from __future__ import annotations

from typing import Any

READY = "Ready"
# What a Ready condition keeps: whether, since when and why.
_KEPT = ("type", "status", "reason", "message", "lastTransitionTime")


def trim_node(node: dict[str, Any]) -> None:
    """Keep, in place, the name, the resourceVersion and the Ready condition (a watch cache's trim)."""
    meta = node.get("metadata") or {}
    node["metadata"] = {k: meta[k] for k in ("name", "resourceVersion", "uid") if k in meta}
    node.pop("spec", None)
    condition = ready_condition(node)
    node["status"] = {"conditions": [{k: condition[k] for k in _KEPT if k in condition}]} if condition else {}


def ready_condition(node: dict[str, Any]) -> dict[str, Any] | None:
    """The Node's Ready condition; None before kubelet first posted its status."""
    for condition in (node.get("status") or {}).get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == READY:
            return condition
    return None


def is_ready(node: dict[str, Any] | None) -> bool:
    """Ready is True: kubelet posts its status. False, Unknown (kubelet stopped posting), no condition
    yet, or no Node at all are not."""
    condition = None if node is None else ready_condition(node)
    return condition is not None and condition.get("status") == "True"
