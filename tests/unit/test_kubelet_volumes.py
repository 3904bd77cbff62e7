"""The kubelet stand-in's core: which publications pods want, and the calls that close the gap."""

from __future__ import annotations

from typing import Any

from kubectl_fluid.api import names
from localcluster.kubelet_volumes import plan, wanted

NODES = ["n0", "n1"]


def pod(name: str, node: str, claims: list[str], **extra: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": "ns", "uid": f"uid-{name}", **extra.pop("meta", {})}
    return {
        "metadata": meta,
        "spec": {
            "nodeName": node,
            "volumes": [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
            + [{"name": "cfg", "configMap": {"name": "x"}}],
        },
        "status": extra.pop("status", {"phase": "Running"}),
    }


def pvc(name: str, volume: str | None) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": {"volumeName": volume} if volume else {}}


def pv(name: str, driver: str = names.CSI_DRIVER, **attrs: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "csi": {"driver": driver, "volumeHandle": f"h-{name}", "volumeAttributes": attrs},
        },
    }


PVCS = {
    ("ns", "c1"): pvc("c1", "pv1"),
    ("ns", "c2"): pvc("c2", "pv2"),
    ("ns", "pending"): pvc("pending", None),
}
PVS = {"pv1": pv("pv1", **{names.PARAM_MASTER_ADDRS: "m:1"}), "pv2": pv("pv2", driver="other.csi")}


def test_only_live_pods_on_our_nodes_using_our_driver_want_publications() -> None:
    pods = [
        pod("a", "n0", ["c1", "c2", "pending", "missing"]),
        pod("b", "n1", ["c1"]),
        pod("elsewhere", "other-node", ["c1"]),
        pod("leaving", "n0", ["c1"], meta={"deletionTimestamp": "2026-01-01T00:00:00Z"}),
        pod("done", "n0", ["c1"], status={"phase": "Succeeded"}),
    ]
    want = wanted(pods, PVCS, PVS, NODES)
    assert sorted(want) == [("n0", "uid-a", "pv1"), ("n1", "uid-b", "pv1")]
    pub = want[("n0", "uid-a", "pv1")]
    assert pub.volume_handle == "h-pv1"
    assert dict(pub.attributes) == {names.PARAM_MASTER_ADDRS: "m:1"}
    assert pub.access_mode == "MULTI_NODE_MULTI_WRITER"
    assert pub.pod_info()["csi.storage.k8s.io/pod.uid"] == "uid-a"
    assert not pub.readonly


def test_read_only_claims_publish_read_only() -> None:
    p = pod("a", "n0", ["c1"])
    p["spec"]["volumes"][0]["persistentVolumeClaim"]["readOnly"] = True
    assert wanted([p], PVCS, PVS, NODES)[("n0", "uid-a", "pv1")].readonly


def test_plan_stages_once_per_node_and_volume_and_unstages_only_unused_volumes() -> None:
    want = wanted([pod("a", "n0", ["c1"]), pod("b", "n0", ["c1"])], PVCS, PVS, NODES)
    first = plan(want, {}, set())
    assert [(p.node, p.volume_handle) for p in first.stage] == [("n0", "h-pv1")]
    assert [p.pod_uid for p in first.publish] == ["uid-a", "uid-b"]
    assert (first.unpublish, first.unstage) == ([], [])

    published = {key: "h-pv1" for key in want}
    staged = {("n0", "h-pv1")}
    assert plan(want, published, staged) == type(first)([], [], [], [])

    # Pod a goes: only its target; the volume stays staged for b.
    only_b = wanted([pod("b", "n0", ["c1"])], PVCS, PVS, NODES)
    step = plan(only_b, published, staged)
    assert (step.stage, step.publish, step.unpublish, step.unstage) == ([], [], [("n0", "uid-a", "pv1")], [])

    # Both gone: both targets, then the volume.
    step = plan({}, published, staged)
    assert step.unpublish == [("n0", "uid-a", "pv1"), ("n0", "uid-b", "pv1")]
    assert step.unstage == [("n0", "h-pv1")]


def test_unconfirmed_calls_are_made_again_while_wanted_and_undone_when_not() -> None:
    want = wanted([pod("a", "n0", ["c1"])], PVCS, PVS, NODES)
    key, pair = ("n0", "uid-a", "pv1"), ("n0", "h-pv1")
    # The node service may or may not have done them (the answer was lost): retried, idempotently.
    step = plan(want, {key: "h-pv1"}, {pair}, unsure={key, pair})
    assert [(p.node, p.volume_handle) for p in step.stage] == [pair]
    assert [p.pod_uid for p in step.publish] == ["uid-a"]
    # The pod gone: undone like confirmed ones, so nothing the node service did is left behind.
    step = plan({}, {key: "h-pv1"}, {pair}, unsure={key, pair})
    assert (step.stage, step.publish, step.unpublish, step.unstage) == ([], [], [key], [pair])
