"""``debug pod``'s walk (``podwalk.py``) over hand-made snapshots: the rows, the logs it would tail,
the cause it picks (lowest layer first), and a pod never created (its creator's FailedCreate)."""

from __future__ import annotations

from typing import Any

from kubectl_fluid.api import names
from kubectl_fluid.cli import podwalk
from kubectl_fluid.cli.diagnosis import Explanation
from kubectl_fluid.cli.rules.finding import Finding, ObjectRef
from kubectl_fluid.cli.snapshot import Snapshot


def obj(name: str, namespace: str = "ns", **rest: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"}
    meta.update(rest.pop("metadata", {}))
    return {"metadata": meta, **rest}


def finding(rule: str, severity: str = "error") -> Finding:
    return Finding(rule, severity, ObjectRef("Pod", "app", "ns"), f"{rule} happened", advice="fix it")  # type: ignore[arg-type]


def explanation(**kw: Any) -> Explanation:
    base: dict[str, Any] = {
        "namespace": "ns",
        "name": "app",
        "injected": [],
        "requested": [],
        "from_pvcs": [],
        "owner": None,
        "reasons": [],
        "notes": [],
    }
    return Explanation(**{**base, **kw})


def test_the_cause_is_the_lowest_layers_error() -> None:
    found = [finding("failed-mount"), finding("dataset-not-bound"), finding("node-not-ready-with-fuse")]
    causes = podwalk.pick(found, None)
    assert [c.rule for c in causes] == ["node-not-ready-with-fuse", "failed-mount", "dataset-not-bound"]
    # Warnings never end the report; a clientless PVC (explain's) comes before FUSE symptoms.
    e = explanation(reasons=["it mounts the PVC ds of a clientless dataset, which the CSI driver refuses"])
    causes = podwalk.pick([finding("failed-mount"), finding("webhook-x", "warning")], e)
    assert [c.rule for c in causes] == [podwalk.CLIENTLESS_PVC, "failed-mount"]
    # A pod that asked for a dataset and was not injected: the injection layer, last.
    e = explanation(requested=["ds"], reasons=["it was created before the webhook served it"])
    assert [c.rule for c in podwalk.pick([finding("runtime-missing")], e)] == [
        "runtime-missing",
        "not-injected",
    ]
    # A pod that asked for nothing is not failed by explain's advice.
    assert podwalk.pick([], explanation(reasons=["it has no label fluid.io/inject"])) == []
    assert podwalk.layer("something-new") < podwalk.layer("webhook-unreachable")


def _snap(**lists: list[dict[str, Any]]) -> Snapshot:
    client_json = '{"client": {"enabled": true}}'
    base: dict[str, list[dict[str, Any]]] = {
        "datasets": [obj("ds", status={"phase": "Bound"})],
        "configmaps": [obj(names.runtime_config_configmap("ds"), data={names.RUNTIME_JSON_KEY: client_json})],
        "persistentvolumeclaims": [
            obj(
                "ds",
                metadata={"labels": {names.dataset_pvc_label("ns", "ds"): "true"}},
                spec={"volumeName": "ns-ds"},
                status={"phase": "Bound"},
            )
        ],
        "persistentvolumes": [obj("ns-ds", namespace="", spec={"csi": {"driver": names.CSI_DRIVER}})],
        "pods": [
            obj(
                "app",
                spec={
                    "nodeName": "n1",
                    "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "ds"}}],
                },
                status={"phase": "Pending"},
            )
        ],
        "nodes": [obj("n1", namespace="", status={"conditions": [{"type": "Ready", "status": "True"}]})],
        "csinodes": [obj("n1", namespace="", spec={"drivers": [{"name": names.CSI_DRIVER}]})],
        "fusemounts": [],
        "events": [
            obj(
                "e",
                reason="FailedMount",
                type="Warning",
                message="client pod of ds not on n1",
                involvedObject={"uid": "uid-ns-app"},
            )
        ],
    }
    base.update(lists)
    return Snapshot("ns", lists=base)


CSI_POD = obj(
    "fluid-csi-node-x",
    namespace=names.FLUID_NAMESPACE,
    metadata={"labels": {names.LABEL_APP_COMPONENT: names.CSI_NODE_COMPONENT}},
    spec={"nodeName": "n1", "containers": [{"name": "registrar"}, {"name": names.CSI_NODE_CONTAINER}]},
    status={"containerStatuses": [{"name": names.CSI_NODE_CONTAINER, "restartCount": 2}]},
)


def test_a_missing_client_is_walked_to_and_its_csi_log_tailed() -> None:
    snap = _snap()
    w = podwalk.walk(snap, snap.items("pods")[0], [CSI_POD], [finding("failed-mount")], None)
    rows = dict(w.rows)
    assert rows["Volumes"] == [f"ds: PVC Bound → PV ns-ds ({names.CSI_DRIVER}) → Dataset ds (Bound)"]
    assert rows["Clients"] == ["ds: no client pod on node n1"]
    # The CSI pod's phase is not in this hand-made pod: "?".
    assert rows["CSI"] == [
        f"{names.CSI_DRIVER} registered; node pod fluid-system/fluid-csi-node-x (?, 2 restarts)"
    ]
    assert rows["Events"] == ["FailedMount: client pod of ds not on n1"]
    [log] = w.logs
    assert (log.pod, log.container, log.previous) == ("fluid-csi-node-x", names.CSI_NODE_CONTAINER, True)
    text = podwalk.render(w, {log: "line 1\nline 2\n"})
    assert "  line 2\n" in text
    assert text.endswith("Failed reason: [failed-mount] Pod ns/app: failed-mount happened; fix it\n")
    assert podwalk.to_json(w, {})["failedReason"]["rule"] == "failed-mount"


def test_a_client_mount_names_its_pod_for_the_logs() -> None:
    client = obj(
        "ds-client-abc",
        metadata={
            "labels": {
                names.LABEL_CACHERUNTIME_NAME: "ds",
                names.LABEL_CACHERUNTIME_COMPONENT: names.component_name("ds", "client"),
            }
        },
        spec={"nodeName": "n1", "containers": [{"name": "client"}]},
        status={"phase": "Running"},
    )
    mount = obj(
        "n1-abc",
        namespace="",
        spec={"nodeName": "n1", "mode": "client", "dataset": {"namespace": "ns", "name": "ds"}},
        status={"phase": "Broken", "podName": "ds-client-abc", "reason": "gone"},
    )
    snap = _snap(pods=[*_snap().items("pods"), client], fusemounts=[mount])
    w = podwalk.walk(snap, snap.items("pods")[0], [], [], None)
    rows = dict(w.rows)
    assert rows["FUSE"] == ["n1-abc: mode client, Broken, refs 0, pod ds-client-abc: gone"]
    assert rows["Clients"] == ["ds: ns/ds-client-abc (Running)"]
    assert [(s.pod, s.container) for s in w.logs] == [("ds-client-abc", "client")]
    assert podwalk.render(w, {}).endswith("OK\n")


def test_a_pod_never_created_is_told_by_its_creators_failed_create() -> None:
    denial = 'admission webhook "clientless.fluid.io" denied the request: dataset "nope" not found'
    events = [
        obj(
            "e1",
            reason="FailedCreate",
            message=denial,
            count=4,
            involvedObject={"kind": "ReplicaSet", "name": "app-5d9c7"},
        ),
        obj(
            "e2",
            reason="FailedCreate",
            message="other",
            involvedObject={"kind": "ReplicaSet", "name": "web-1"},
        ),
    ]
    snap = _snap(events=events, pods=[])
    for name in ("app-5d9c7-x2x8v", "app"):
        w = podwalk.never_created(snap, "ns", name)
        assert w is not None
        assert w.failed is not None
        assert w.failed.rule == podwalk.NEVER_CREATED
        assert denial in w.failed.text
    assert podwalk.never_created(snap, "ns", "other-pod") is None
    webhook = obj(
        "fluid-webhook-x",
        namespace=names.FLUID_NAMESPACE,
        metadata={"labels": {names.LABEL_APP_COMPONENT: names.WEBHOOK_COMPONENT}},
        spec={"containers": [{"name": "webhook"}]},
    )
    w = podwalk.never_created(snap, "ns", "app", [webhook, CSI_POD])
    assert w is not None
    assert [(s.pod, s.container) for s in w.logs] == [("fluid-webhook-x", "webhook")]


def test_a_nodes_line_says_ready_not_ready_or_not_reported_yet() -> None:
    def node(*conditions: dict[str, str]) -> Snapshot:
        return Snapshot(
            "ns", lists={"nodes": [obj("n1", namespace="", status={"conditions": list(conditions)})]}
        )

    assert podwalk._node_line(node({"type": "Ready", "status": "True"}), "n1") == "n1 Ready"
    assert (
        podwalk._node_line(node({"type": "Ready", "status": "Unknown"}), "n1")
        == "n1 NotReady (Ready=Unknown)"
    )
    # No Ready condition: as node-not-ready-with-fuse judges it, no evidence of a lost node.
    assert podwalk._node_line(node(), "n1") == "n1 (no Ready condition yet)"
