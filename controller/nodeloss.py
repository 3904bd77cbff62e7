"""What the controller says of a FuseMount whose node is lost (pure; the I/O is lostnodes.py).

A FuseMount is written by the CSI node service of its node, and only while that node lives. When the
node is lost (its Ready condition False or Unknown, as after kubelet and containerd were killed, or its
Node object deleted) nobody reports for it, and its FuseMounts would stay Ready for ever. The
controller watches Nodes and marks them: phase ``Unknown``, a reason that says which node, since when,
the last phase known and what to do. It takes back what it said (``Release``) once the node is Ready:
the node service publishes its mounts again then, and their phase and reason are its own again.

One judgement per FuseMount, from the object and its node's readiness, so that it holds level-triggered
(a new leader judges every FuseMount once) and never loops against the node service: a FuseMount
already Unknown is left alone, unless the node's loss has changed (NotReady, then deleted) and the
words must follow; a Ready node's FuseMounts are written only while the controller still owns fields
of their status.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubectl_fluid.api import names
from kubectl_fluid.kube.nodeready import ready_condition

UNKNOWN = "Unknown"


@dataclass(frozen=True)
class NodeView:
    """A node as the controller last saw it: its Ready condition's words, or gone."""

    name: str
    ready: str | None = None  # the Ready condition's status: True, False, Unknown; None: no condition
    since: str | None = None  # the condition's lastTransitionTime, or when the Node was seen deleted
    why: str | None = None  # the condition's message (or reason)
    gone: bool = False

    @property
    def lost(self) -> bool:
        return self.gone or self.ready != "True"


def node_view(name: str, node: dict[str, Any] | None, gone_since: str | None = None) -> NodeView:
    """The view of node ``name`` from its (trimmed) Node; ``None``: it has none (deleted, or never
    there), seen deleted at ``gone_since`` when known."""
    if node is None:
        return NodeView(name, since=gone_since, gone=True)
    condition = ready_condition(node) or {}
    return NodeView(
        name,
        ready=condition.get("status"),
        since=condition.get("lastTransitionTime"),
        why=condition.get("message") or condition.get("reason"),
    )


@dataclass(frozen=True)
class Mark:
    """Apply phase Unknown with these words, its time the node's loss (``now`` where that is not known)."""

    reason: str
    since: str | None

    def status(self, now: str) -> dict[str, Any]:
        return {"phase": UNKNOWN, "reason": self.reason, "lastTransitionTime": self.since or now}


@dataclass(frozen=True)
class Release:
    """Give up every status field the controller holds: the node is back and speaks for itself."""


Verdict = Mark | Release | None


def loss(node: NodeView) -> str:
    """How the node is lost, in a few words that name it."""
    if node.gone:
        seen = f" (seen deleted at {node.since})" if node.since else ""
        return f"node {node.name} is gone: its Node object was deleted{seen}"
    since = f" since {node.since}" if node.since else ""
    if node.ready is None:
        return f"node {node.name} has not reported Ready{since} (its Node has no Ready condition)"
    why = f": {node.why}" if node.why else ""
    return f"node {node.name} is NotReady{since} (Ready={node.ready}{why})"


def mark_reason(node: NodeView, last_known: str | None) -> str:
    """The reason of a FuseMount of a lost node: nobody reports it, what it was, what to do."""
    last = last_known or "no phase"
    then = (
        "If the node comes back, its CSI node service publishes it again; if not, delete its FuseMounts"
        if node.gone
        else "When the node is Ready again, its CSI node service publishes it again; if the node is gone"
        " for good, delete its Node and FuseMounts"
    )
    return (
        f"{loss(node)}: nothing reports this mount; it is shown as last known: {last} (its volumes and"
        f" targets as the node last published them). {then}"
        f" (kubectl delete fusemounts -l {names.fuse_mount_node_selector(node.name)})"
    )


def judge(fm: dict[str, Any], node: NodeView, last_known: str | None, owns_status: bool) -> Verdict:
    """What to write to FuseMount ``fm`` of ``node``. ``last_known``: its last phase other than Unknown
    that the controller saw (None when it saw none: it came to lead with the mark already there);
    ``owns_status``: whether the controller's field manager holds fields of its status."""
    status = fm.get("status") or {}
    phase = status.get("phase")
    if not node.lost:
        return Release() if owns_status else None
    if phase != UNKNOWN:
        # Ready (or Broken...) on a lost node: as first lost, or written again while it stays lost.
        return Mark(mark_reason(node, phase), node.since)
    if last_known is None:
        return None  # marked before; what it was is no longer known here, and the words stay
    reason = mark_reason(node, last_known)
    return Mark(reason, node.since) if status.get("reason") != reason else None


def owns_status(fm: dict[str, Any], manager: str = names.CONTROLLER_FIELD_MANAGER) -> bool:
    """Whether ``manager`` holds any field of the status (its managedFields entries of the status
    subresource)."""
    for entry in (fm.get("metadata") or {}).get("managedFields") or ():
        if entry.get("manager") != manager or entry.get("subresource") != "status":
            continue
        fields = (entry.get("fieldsV1") or {}).get("f:status")
        if fields:
            return True
    return False
