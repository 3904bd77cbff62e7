"""What the controller writes to a FuseMount whose node is lost, and that it never writes twice:
controller/nodeloss.py. (The watches and writes against a real API server: tests/e2e/test_node_loss.py.)"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from controller.nodeloss import Mark, NodeView, Release, judge, mark_reason, node_view, owns_status
from kubectl_fluid.api import names
from kubectl_fluid.api.fusemount import FuseMountStatus
from kubectl_fluid.kube.nodeready import is_ready, trim_node

T0 = "2025-06-01T10:00:00Z"
NOW = "2025-06-01T10:05:00Z"
PHASES = ("Mounting", "Ready", "Broken", "Unmounting")


def node(status: str | None, *, message: str = "Kubelet stopped posting node status.") -> dict[str, Any]:
    conditions = [
        {"type": "MemoryPressure", "status": "False"},
        *(
            [
                {
                    "type": "Ready",
                    "status": status,
                    "reason": "NodeStatusUnknown",
                    "message": message,
                    "lastHeartbeatTime": "2025-06-01T09:59:00Z",
                    "lastTransitionTime": T0,
                }
            ]
            if status is not None
            else []
        ),
    ]
    return {
        "metadata": {"name": "n1", "resourceVersion": "7", "labels": {"a": "b"}},
        "spec": {"podCIDR": "10.0.0.0/24"},
        "status": {"conditions": conditions, "images": [{"names": ["x"]}]},
    }


def fuse_mount(phase: str | None, reason: str | None = None, *, ours: bool = False) -> dict[str, Any]:
    managed = [
        {"manager": names.CSI_NODE_FIELD_MANAGER, "subresource": "status", "fieldsV1": {"f:status": {}}}
    ]
    if ours:
        managed.append(
            {
                "manager": names.CONTROLLER_FIELD_MANAGER,
                "operation": "Apply",
                "subresource": "status",
                "fieldsV1": {"f:status": {"f:phase": {}, "f:reason": {}}},
            }
        )
    status = {"refCount": 1, **({"phase": phase} if phase else {}), **({"reason": reason} if reason else {})}
    return {
        "metadata": {"name": "n1-0123456789abcdef", "managedFields": managed},
        "spec": {"nodeName": "n1"},
        "status": status,
    }


def test_a_trimmed_node_keeps_its_readiness_and_not_its_heartbeat() -> None:
    trimmed = node("Unknown")
    trim_node(trimmed)
    assert trimmed == {
        "metadata": {"name": "n1", "resourceVersion": "7"},
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "Unknown",
                    "reason": "NodeStatusUnknown",
                    "message": "Kubelet stopped posting node status.",
                    "lastTransitionTime": T0,
                }
            ]
        },
    }
    fresh = node(None)
    trim_node(fresh)
    assert fresh["status"] == {}
    assert [is_ready(fresh), is_ready(node("True")), is_ready(node("False")), is_ready(None)] == [
        False,
        True,
        False,
        False,
    ]


def test_a_mount_of_a_node_that_stopped_posting_is_marked_unknown_saying_which_since_when_and_what_was() -> (
    None
):
    verdict = judge(fuse_mount("Ready"), node_view("n1", node("Unknown")), "Ready", owns_status=False)
    assert isinstance(verdict, Mark)
    assert verdict.reason.startswith(
        f"node n1 is NotReady since {T0} (Ready=Unknown: Kubelet stopped posting node status.): nothing"
        " reports this mount; it is shown as last known: Ready"
    )
    assert "kubectl delete fusemounts -l fluid.io/node=n1" in verdict.reason
    assert verdict.status(NOW) == {"phase": "Unknown", "reason": verdict.reason, "lastTransitionTime": T0}
    # The status it writes is one the CRD takes.
    FuseMountStatus.model_validate(verdict.status(NOW))


def test_a_deleted_node_says_it_is_gone() -> None:
    view = node_view("n1", None, gone_since=NOW)
    verdict = judge(fuse_mount("Broken", "fs-path gone"), view, "Broken", owns_status=False)
    assert isinstance(verdict, Mark)
    assert verdict.reason.startswith(f"node n1 is gone: its Node object was deleted (seen deleted at {NOW})")
    assert "last known: Broken" in verdict.reason
    assert verdict.status("later")["lastTransitionTime"] == NOW
    # Gone before this controller looked: no time to name, the time of the mark instead.
    unseen = judge(fuse_mount("Ready"), node_view("n1", None), "Ready", owns_status=False)
    assert isinstance(unseen, Mark)
    assert unseen.status(NOW)["lastTransitionTime"] == NOW
    assert "(seen deleted" not in unseen.reason


def test_a_node_without_a_ready_condition_has_not_reported() -> None:
    verdict = judge(fuse_mount("Mounting"), node_view("n1", node(None)), "Mounting", owns_status=False)
    assert isinstance(verdict, Mark)
    assert verdict.reason.startswith("node n1 has not reported Ready (its Node has no Ready condition)")


def test_an_unknown_mount_follows_its_node_from_notready_to_gone_once() -> None:
    marked = mark_reason(node_view("n1", node("Unknown")), "Ready")
    fm = fuse_mount("Unknown", marked, ours=True)
    assert judge(fm, node_view("n1", node("Unknown")), "Ready", owns_status=True) is None
    gone = judge(fm, node_view("n1", None, NOW), "Ready", owns_status=True)
    assert isinstance(gone, Mark)
    assert "is gone" in gone.reason
    assert "last known: Ready" in gone.reason
    # A controller that came to lead after the mark does not know the phase before it: words stay.
    assert judge(fm, node_view("n1", None, NOW), None, owns_status=True) is None


def test_a_ready_node_takes_its_mounts_back_only_from_a_controller_that_holds_fields() -> None:
    ready = node_view("n1", node("True", message="kubelet is posting ready status"))
    assert judge(fuse_mount("Unknown", "node n1 is NotReady", ours=True), ready, "Ready", True) == Release()
    assert judge(fuse_mount("Ready", "node n1 is NotReady", ours=True), ready, "Ready", True) == Release()
    assert judge(fuse_mount("Ready"), ready, "Ready", owns_status=False) is None
    assert owns_status(fuse_mount("Ready", ours=True))
    assert not owns_status(fuse_mount("Ready"))
    assert not owns_status({"metadata": {}})


VIEWS = st.one_of(
    st.builds(
        NodeView,
        name=st.just("n1"),
        ready=st.sampled_from(["True", "False", "Unknown", None]),
        since=st.sampled_from([T0, None]),
        why=st.sampled_from(["Kubelet stopped posting node status.", None]),
    ),
    st.builds(NodeView, name=st.just("n1"), since=st.sampled_from([NOW, None]), gone=st.just(True)),
)


@given(
    view=VIEWS,
    phase=st.sampled_from([*PHASES, None]),
    reason=st.sampled_from([None, "fs-path /x is gone"]),
    ours=st.booleans(),
)
def test_a_written_verdict_is_never_written_again(
    view: NodeView, phase: str | None, reason: str | None, ours: bool
) -> None:
    """Whatever the node service last wrote and whatever the node's state: once the controller's write
    is in, judging the FuseMount again asks for nothing (no loop with itself); and a Ready node's
    mounts are never marked, a lost node's never left in a phase of the node service's."""
    fm = fuse_mount(phase, reason, ours=ours)
    verdict = judge(fm, view, phase, owns_status(fm))
    if not view.lost:
        assert not isinstance(verdict, Mark)
        assert (verdict == Release()) == ours
        after = fuse_mount(phase, reason, ours=False)  # the controller's fields given up
    else:
        assert isinstance(verdict, Mark)
        assert f"node {view.name} " in verdict.reason
        assert f"last known: {phase or 'no phase'}" in verdict.reason
        after = fuse_mount("Unknown", verdict.reason, ours=True)
    assert judge(after, view, phase, owns_status(after)) is None
