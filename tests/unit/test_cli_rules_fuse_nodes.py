"""The FUSE and node rules (``rules/fuse.py``, ``rules/nodes.py``) over hand-made snapshots: each
finds its fault with its ID, says nothing when the fault is gone, and keeps to its scope."""

from __future__ import annotations

from typing import Any

from kubectl_fluid.api import names
from kubectl_fluid.cli.rules import fuse, nodes
from kubectl_fluid.cli.rules.finding import Scope
from kubectl_fluid.cli.snapshot import Snapshot


def obj(name: str, namespace: str = "ns", **rest: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"}
    meta.update(rest.pop("metadata", {}))
    return {"metadata": meta, **rest}


def app(name: str, claim: str = "ds", node: str = "n1", phase: str = "Running") -> dict[str, Any]:
    return obj(
        name,
        spec={"nodeName": node, "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]},
        status={"phase": phase},
    )


def mount(name: str, node: str = "n1", phase: str = "Ready", **status: Any) -> dict[str, Any]:
    return obj(
        name,
        namespace="",
        spec={"nodeName": node, "mode": "client", "dataset": {"namespace": "ns", "name": "ds"}},
        status={"phase": phase, "refCount": 1, **status},
    )


def node(name: str, ready: str = "True") -> dict[str, Any]:
    return obj(name, namespace="", status={"conditions": [{"type": "Ready", "status": ready, "reason": "R"}]})


def csinode(name: str, *drivers: str) -> dict[str, Any]:
    return obj(name, namespace="", spec={"drivers": [{"name": d} for d in drivers]})


def snap(**lists: list[dict[str, Any]]) -> Snapshot:
    base: dict[str, list[dict[str, Any]]] = {
        "datasets": [obj("ds")],
        "persistentvolumeclaims": [obj("ds", spec={"volumeName": "ns-ds"})],
        "persistentvolumes": [obj("ns-ds", namespace="", spec={"csi": {"driver": names.CSI_DRIVER}})],
        "pods": [app("app")],
        "nodes": [node("n1"), node("n2")],
        "csinodes": [csinode("n1", names.CSI_DRIVER), csinode("n2", names.CSI_DRIVER)],
        "fusemounts": [mount("n1-abc")],
        "events": [],
    }
    base.update(lists)
    return Snapshot("ns", lists=base)


def ids(s: Snapshot, scope: Scope) -> list[str]:
    """What the node and FUSE rules find (this snapshot holds no runtime: the others' business)."""
    return [f.rule for rule in [*nodes.RULES, *fuse.RULES] for f in rule(s, scope)]


POD, DS, ALL = Scope(pod=("ns", "app")), Scope(datasets=(("ns", "ds"),)), Scope()


def test_a_healthy_snapshot_has_no_finding() -> None:
    for scope in (POD, DS, ALL):
        assert ids(snap(), scope) == []


def test_fuse_broken_carries_the_reason_as_evidence() -> None:
    s = snap(fusemounts=[mount("n1-abc", phase="Broken", reason="its FUSE is gone; delete its client pod")])
    for scope in (POD, DS, ALL):
        [f] = list(fuse.fuse_broken(s, scope))
        assert f.rule == fuse.FUSE_BROKEN
        assert f.object.name == "n1-abc"
        assert "status.reason: its FUSE is gone; delete its client pod" in f.evidence
    # A mount of another node is not the pod's.
    s = snap(fusemounts=[mount("n2-abc", node="n2", phase="Unknown")])
    assert list(fuse.fuse_broken(s, POD)) == []
    assert [f.rule for f in fuse.fuse_broken(s, DS)] == [fuse.FUSE_BROKEN]


def test_fuse_broken_finds_a_standalone_mount_by_the_pods_target() -> None:
    target = {"volumes": [{"volumeId": "v", "targets": [{"path": "/p", "pod": "ns/app"}]}]}
    standalone = obj("n1-sc", namespace="", spec={"nodeName": "n1", "mode": "standalone"})
    standalone["status"] = {"phase": "Broken", "reason": "killed", **target}
    s = snap(fusemounts=[standalone], persistentvolumeclaims=[], persistentvolumes=[])
    assert [f.rule for f in fuse.fuse_broken(s, POD)] == [fuse.FUSE_BROKEN]
    assert list(fuse.fuse_broken(s, DS)) == []  # no dataset's


def test_failed_mount_shows_the_newest_event_while_pending() -> None:
    events = [
        obj(
            "e1",
            reason="FailedMount",
            message="old",
            involvedObject={"uid": "uid-ns-app"},
            lastTimestamp="2026-01-01T00:00:00Z",
        ),
        obj(
            "e2",
            reason="FailedMount",
            message="rpc error: FailedPrecondition no client",
            involvedObject={"uid": "uid-ns-app"},
            lastTimestamp="2026-01-02T00:00:00Z",
            count=3,
        ),
    ]
    s = snap(pods=[app("app", phase="Pending")], events=events)
    [f] = list(fuse.failed_mount(s, POD))
    assert f.rule == fuse.FAILED_MOUNT
    assert f.evidence == ("Event FailedMount (x3): rpc error: FailedPrecondition no client",)
    assert [x.rule for x in fuse.failed_mount(s, DS)] == [fuse.FAILED_MOUNT]
    # Running now: the events are history.
    assert list(fuse.failed_mount(snap(events=events), POD)) == []


def test_csi_node_not_registered() -> None:
    s = snap(csinodes=[csinode("n1", "other.csi")])
    [f] = list(nodes.csi_node_not_registered(s, POD))
    assert f.rule == nodes.CSI_NODE_NOT_REGISTERED
    assert f.object.name == "n1"
    assert "CSINode n1: spec.drivers: other.csi" in f.evidence
    [f] = list(nodes.csi_node_not_registered(snap(csinodes=[]), ALL))
    assert "no CSINode n1" in f.evidence
    # A pod without a CSI volume does not care; CSINodes unreadable say nothing.
    plain = obj("app", spec={"nodeName": "n1", "volumes": []})
    assert list(nodes.csi_node_not_registered(snap(pods=[plain], csinodes=[]), POD)) == []
    unreadable = snap()
    del unreadable.lists["csinodes"]
    assert list(nodes.csi_node_not_registered(unreadable, POD)) == []


def test_node_not_ready_with_fuse() -> None:
    s = snap(nodes=[node("n1", ready="Unknown"), node("n2")])
    [f] = list(nodes.node_not_ready_with_fuse(s, POD))
    assert f.rule == nodes.NODE_NOT_READY_WITH_FUSE
    assert f.object.name == "n1"
    assert "FuseMounts: n1-abc" in f.evidence
    assert "pods: ns/app" in f.evidence
    # A NotReady node with nothing of the scope on it is not this rule's.
    s = snap(nodes=[node("n1"), node("n2", ready="False")])
    assert list(nodes.node_not_ready_with_fuse(s, ALL)) == []


def test_rules_are_gathered_in_order() -> None:
    s = snap(
        nodes=[node("n1", ready="False")],
        csinodes=[],
        fusemounts=[mount("n1-abc", phase="Unknown")],
    )
    assert ids(s, POD) == [
        nodes.CSI_NODE_NOT_REGISTERED,
        nodes.NODE_NOT_READY_WITH_FUSE,
        fuse.FUSE_BROKEN,
    ]


def fuse_pod(name: str, phase: str = "Running", **meta: Any) -> dict[str, Any]:
    return obj(name, namespace=names.FLUID_NAMESPACE, metadata=meta, status={"phase": phase})


def test_fuse_pod_not_running_when_the_pods_namespace_was_read() -> None:
    standalone = obj("n1-sc", namespace="", spec={"nodeName": "n1", "mode": "standalone"})
    target = {"volumes": [{"volumeId": "v", "targets": [{"path": "/p", "pod": "ns/app"}]}]}
    standalone["status"] = {"phase": "Ready", "refCount": 1, "podName": "curvine-fuse-x", **target}
    s = snap(fusemounts=[standalone])
    # fluid-system's pods not read: nothing to say.
    assert list(fuse.fuse_pod_not_running(s, POD)) == []
    s.add_pods(names.FLUID_NAMESPACE, [])
    [f] = list(fuse.fuse_pod_not_running(s, POD))
    assert f.rule == fuse.FUSE_POD_NOT_RUNNING
    assert "its FUSE pod fluid-system/curvine-fuse-x on node n1 is gone" in f.message
    for pod, said in (
        (fuse_pod("curvine-fuse-x", "Failed"), "is Failed"),
        (fuse_pod("curvine-fuse-x", deletionTimestamp="2026-01-01T00:00:00Z"), "is being deleted"),
        (
            {
                **fuse_pod("curvine-fuse-x"),
                "status": {
                    "phase": "Running",
                    "containerStatuses": [
                        {"name": "fuse", "state": {"terminated": {"reason": "Error", "exitCode": 137}}}
                    ],
                },
            },
            "has its container not running (fuse terminated: Error, exit code 137)",
        ),
    ):
        s = snap(fusemounts=[standalone])
        s.add_pods(names.FLUID_NAMESPACE, [pod])
        [f] = list(fuse.fuse_pod_not_running(s, POD))
        assert said in f.message
    s = snap(fusemounts=[standalone])
    s.add_pods(names.FLUID_NAMESPACE, [fuse_pod("curvine-fuse-x")])
    assert list(fuse.fuse_pod_not_running(s, POD)) == []
    # A client mount's pod is the runtime's client, in the dataset's namespace (the snapshot's).
    s = snap(fusemounts=[mount("n1-abc", podName="ds-client-1")])
    [f] = list(fuse.fuse_pod_not_running(s, POD))
    assert "the runtime's client pod ns/ds-client-1 on node n1 is gone" in f.message


def test_a_namespaces_diagnosis_leaves_other_namespaces_fusemounts_alone() -> None:
    theirs = mount("n1-theirs", phase="Broken", reason="gone")
    theirs["spec"]["dataset"] = {"namespace": "elsewhere", "name": "ds"}
    s = snap(fusemounts=[theirs])
    assert "fuse-broken" not in ids(s, ALL)
    s.namespace = None  # -A: every namespace's
    assert "fuse-broken" in ids(s, ALL)
