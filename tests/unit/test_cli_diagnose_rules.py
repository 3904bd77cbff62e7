"""diagnose's dataset, runtime and webhook rules on hand-made snapshots: a healthy dataset gives no
finding; each fault made in it gives its rule's ID (and only that one), with evidence and advice."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kubectl_fluid.api import names
from kubectl_fluid.cli.rules import all_rules
from kubectl_fluid.cli.rules.finding import Scope
from kubectl_fluid.cli.rules.report import run
from kubectl_fluid.cli.snapshot import PROBE, Snapshot

NS, DS, NODE = "team", "demo", "n1"
Obj = dict[str, Any]


def obj(name: str, namespace: str = NS, **rest: Any) -> Obj:
    meta = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"}
    meta.update(rest.pop("metadata", {}))
    return {"metadata": meta, **rest}


def component(kind: str, comp: names.Component, replicas: int, ready: int) -> Obj:
    labels = {names.LABEL_CACHERUNTIME_NAME: DS}
    spec: Obj = (
        {"replicas": replicas}
        if kind == "sts"
        else {"template": {"spec": {"nodeSelector": {names.fuse_node_label(NS, DS): names.TRUE}}}}
    )
    status = (
        {"readyReplicas": ready} if kind == "sts" else {"desiredNumberScheduled": 1, "numberReady": ready}
    )
    return obj(names.component_name(DS, comp), metadata={"labels": labels}, spec=spec, status=status)


def component_pod(comp: names.Component, index: int | str, node: str = NODE, ready: bool = True) -> Obj:
    labels = {
        names.LABEL_CACHERUNTIME_NAME: DS,
        names.LABEL_CACHERUNTIME_COMPONENT: names.component_name(DS, comp),
    }
    status = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        "containerStatuses": [{"name": comp, "ready": ready}],
    }
    return obj(f"{DS}-{comp}-{index}", metadata={"labels": labels}, spec={"nodeName": node}, status=status)


def app_pod(name: str = "app", **labels: str) -> Obj:
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": DS}}]
    return obj(
        name,
        metadata={"labels": labels},
        spec={"nodeName": NODE, "volumes": volumes},
        status={"phase": "Running"},
    )


def injected_pod(name: str = "inj", volumes: bool = True) -> Obj:
    cm = names.runtime_config_configmap(DS)
    return obj(
        name,
        metadata={
            "labels": {names.LABEL_INJECT: names.TRUE},
            "annotations": {names.ANNOTATION_DATASET: DS},
        },
        spec={"volumes": [{"name": cm, "configMap": {"name": cm}}] if volumes else []},
    )


def healthy() -> Snapshot:
    dataset = obj(DS, status={"phase": "Bound", "conditions": [{"type": "Ready", "status": "True"}]})
    return Snapshot(
        NS,
        lists={
            "datasets": [dataset],
            "cacheruntimes": [obj(DS, spec={"runtimeClassName": "curvine"})],
            "cacheruntimeclasses": [obj("curvine", namespace="")],
            "configmaps": [obj(names.runtime_config_configmap(DS), data={names.RUNTIME_SH_KEY: "x"})],
            "persistentvolumeclaims": [obj(DS, metadata={"labels": {names.LABEL_DATASET_ID: f"{NS}-{DS}"}})],
            "persistentvolumes": [],
            "statefulsets": [component("sts", "master", 1, 1), component("sts", "worker", 2, 2)],
            "daemonsets": [component("ds", "client", 1, 1)],
            "pods": [
                component_pod("master", 0),
                component_pod("worker", 0),
                component_pod("worker", 1),
                component_pod("client", "x1"),
                app_pod(),
                injected_pod(),
            ],
            "fusemounts": [],
            "dataloads": [obj("load", spec={"dataset": {"name": DS}}, status={"phase": "Complete"})],
            "nodes": [obj(NODE, namespace="", metadata={"labels": {names.fuse_node_label(NS, DS): "true"}})],
            "csinodes": [],
            "events": [],
            "mutatingwebhookconfigurations": [
                obj(
                    names.WEBHOOK_NAME,
                    namespace="",
                    webhooks=[{"name": "clientless.fluid.io", "clientConfig": {"caBundle": "Q0E="}}],
                )
            ],
        },
        probes={NS: None},
    )


def rules_found(snap: Snapshot, scope: Scope | None = None) -> list[str]:
    return [f.rule for f in run(snap, scope or Scope(everything=True), all_rules()).findings]


def named(snap: Snapshot, kind: str, name: str) -> Obj:
    return next(o for o in snap.lists[kind] if o["metadata"]["name"] == name)


def test_a_healthy_dataset_has_no_finding() -> None:
    assert rules_found(healthy()) == []
    assert rules_found(healthy(), Scope(datasets=((NS, DS),))) == []
    assert rules_found(healthy(), Scope(pod=(NS, "app"))) == []


def no_runtime(s: Snapshot) -> None:
    s.lists["cacheruntimes"] = []


def no_class(s: Snapshot) -> None:
    s.lists["cacheruntimeclasses"] = []


def not_bound(s: Snapshot) -> None:
    named(s, "datasets", DS)["status"] = {
        "phase": "NotBound",
        "conditions": [{"type": "Ready", "status": "False", "reason": "X", "message": "the master is gone"}],
    }


def master_crashing(s: Snapshot) -> None:
    named(s, "statefulsets", f"{DS}-master")["status"] = {"readyReplicas": 0}
    pod = named(s, "pods", f"{DS}-master-0")
    pod["status"]["conditions"][0]["status"] = "False"
    pod["status"]["containerStatuses"] = [
        {
            "name": "master",
            "ready": False,
            "restartCount": 3,
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
        }
    ]


def one_worker_down(s: Snapshot) -> None:
    named(s, "statefulsets", f"{DS}-worker")["status"] = {"readyReplicas": 1}
    named(s, "pods", f"{DS}-worker-1")["status"]["conditions"][0]["status"] = "False"


def node_not_labelled(s: Snapshot) -> None:
    s.lists["pods"] = [p for p in s.lists["pods"] if p["metadata"]["name"] != f"{DS}-client-x1"]
    named(s, "nodes", NODE)["metadata"]["labels"] = {}


def node_tainted(s: Snapshot) -> None:
    s.lists["pods"] = [p for p in s.lists["pods"] if p["metadata"]["name"] != f"{DS}-client-x1"]
    named(s, "nodes", NODE)["spec"] = {"taints": [{"key": "gpu", "value": "a", "effect": "NoSchedule"}]}


def client_pending(s: Snapshot) -> None:
    pod = named(s, "pods", f"{DS}-client-x1")
    pod["spec"] = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "values": [NODE]}]}]
                }
            }
        }
    }
    pod["status"] = {"phase": "Pending"}
    s.lists["events"] = [event(pod, "FailedScheduling", "0/1 nodes are available: 1 Insufficient memory.")]


def event(about: Obj, reason: str, message: str) -> Obj:
    return obj("ev", involvedObject={"uid": about["metadata"]["uid"]}, reason=reason, message=message)


def mountufs(s: Snapshot) -> None:
    dataset = named(s, "datasets", DS)
    dataset["status"]["conditions"].append(
        {"type": "UpdateReady", "status": "False", "reason": "MountUFSFailed", "message": "exit 2"}
    )
    s.lists["events"] = [event(dataset, "MountUFSFailed", "mount s3://x: access denied")]


def dataload(s: Snapshot) -> None:
    named(s, "dataloads", "load")["status"] = {
        "phase": "Failed",
        "conditions": [
            {"type": "Failed", "status": "True", "reason": "DataOperationFailed", "message": "Job failed"}
        ],
    }


def ca_missing(s: Snapshot) -> None:
    named(s, "mutatingwebhookconfigurations", names.WEBHOOK_NAME)["webhooks"][0]["clientConfig"] = {}


def unreachable(s: Snapshot) -> None:
    s.probes[NS] = 'Internal error occurred: failed calling webhook "clientless.fluid.io": connection refused'


def not_injected(s: Snapshot) -> None:
    s.lists["pods"].append(injected_pod("late", volumes=False))


FAULTS: dict[str, tuple[Callable[[Snapshot], None], str]] = {
    "runtime-missing": (no_runtime, "error"),
    "runtime-class-missing": (no_class, "error"),
    "dataset-not-bound": (not_bound, "error"),
    "master-not-ready": (master_crashing, "error"),
    "workers-partially-ready": (one_worker_down, "warning"),
    "client-not-scheduled": (node_not_labelled, "error"),
    "mountufs-failed": (mountufs, "error"),
    "dataload-failed": (dataload, "error"),
    "webhook-cabundle-missing": (ca_missing, "error"),
    "webhook-unreachable": (unreachable, "error"),
    "pod-inject-without-config": (not_injected, "error"),
}


@pytest.mark.parametrize("rule", sorted(FAULTS))
def test_each_fault_gives_its_rule_alone(rule: str) -> None:
    snap = healthy()
    fault, severity = FAULTS[rule]
    fault(snap)
    found = run(snap, Scope(everything=True), all_rules()).findings
    assert [f.rule for f in found] == [rule]
    assert found[0].severity == severity
    assert found[0].evidence
    assert found[0].advice


def test_the_evidence_is_what_was_read() -> None:
    snap = healthy()
    master_crashing(snap)
    [f] = run(snap, Scope(datasets=((NS, DS),)), all_rules()).findings
    assert f.evidence[0] == f"StatefulSet {NS}/{DS}-master: 0/1 ready"
    assert "CrashLoopBackOff (back-off 40s), last exit 1 (Error), 3 restarts" in f.evidence[1]
    snap = healthy()
    mountufs(snap)
    [f] = run(snap, Scope(datasets=((NS, DS),)), all_rules()).findings
    assert f.evidence == (
        "Dataset status.conditions[UpdateReady]: False, reason MountUFSFailed: exit 2",
        "event MountUFSFailed: mount s3://x: access denied",
    )


def test_a_taint_or_a_pending_client_is_named() -> None:
    snap = healthy()
    node_tainted(snap)
    [f] = run(snap, Scope(everything=True), all_rules()).findings
    assert f.rule == "client-not-scheduled"
    assert "gpu=a:NoSchedule" in " ".join(f.evidence)
    snap = healthy()
    client_pending(snap)
    [f] = run(snap, Scope(everything=True), all_rules()).findings
    assert f.rule == "client-not-scheduled"
    assert "event FailedScheduling: 0/1 nodes are available: 1 Insufficient memory." in f.evidence


def test_a_tolerated_taint_is_no_fault() -> None:
    snap = healthy()
    named(snap, "nodes", NODE)["spec"] = {"taints": [{"key": "gpu", "effect": "NoSchedule"}]}
    named(snap, "daemonsets", f"{DS}-client")["spec"]["template"]["spec"]["tolerations"] = [
        {"key": "gpu", "operator": "Exists"}
    ]
    assert rules_found(snap) == []


def test_a_workers_none_ready_is_an_error() -> None:
    snap = healthy()
    named(snap, "statefulsets", f"{DS}-worker")["status"] = {}
    [f] = run(snap, Scope(everything=True), all_rules()).findings
    assert (f.rule, f.severity, f.message) == ("workers-partially-ready", "error", "0 of 2 workers ready")


def test_the_cause_is_reported_not_its_consequence() -> None:
    """No runtime: runtime-missing, not dataset-not-bound too; a missing caBundle, not unreachable."""
    snap = healthy()
    no_runtime(snap)
    not_bound(snap)
    assert rules_found(snap) == ["runtime-missing"]
    snap = healthy()
    ca_missing(snap)
    unreachable(snap)
    assert rules_found(snap) == ["webhook-cabundle-missing"]


def test_a_pods_scope_keeps_to_its_pod() -> None:
    snap = healthy()
    not_injected(snap)
    assert rules_found(snap, Scope(pod=(NS, "inj"))) == []
    assert rules_found(snap, Scope(pod=(NS, "late"))) == ["pod-inject-without-config"]
    [f] = run(snap, Scope(pod=(NS, "late")), all_rules()).findings
    assert "recreate" in f.advice


def test_a_deployments_pod_is_sent_to_inject_its_deployment() -> None:
    snap = healthy()
    pod = injected_pod("web-7d9f-abc", volumes=False)
    pod["metadata"]["labels"]["pod-template-hash"] = "7d9f"
    pod["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "web-7d9f", "controller": True}]
    snap.lists["pods"].append(pod)
    [f] = run(snap, Scope(everything=True), all_rules()).findings
    assert "deploy/web" in f.advice


def test_rules_that_need_an_unreadable_kind_are_skipped_and_named() -> None:
    snap = healthy()
    del snap.lists["daemonsets"]
    snap.unreadable["daemonsets"] = "403 Forbidden"
    snap.unreadable[PROBE] = "403 Forbidden"
    node_not_labelled(snap)
    result = run(snap, Scope(everything=True), all_rules())
    assert result.findings == []
    assert result.skipped == {"client-not-scheduled": ["daemonsets"], "webhook-unreachable": [PROBE]}


def test_rule_ids_are_unique_kebab_case() -> None:
    from kubectl_fluid.cli.rules.needs import rule_id

    ids = [rule_id(r) for r in all_rules()]
    assert len(ids) == len(set(ids))
    assert set(FAULTS) <= set(ids)
    assert all(i == i.lower() and " " not in i and "_" not in i for i in ids)


def test_a_worker_the_scheduler_cannot_place_is_told_how_to_fit() -> None:
    snap = healthy()
    one_worker_down(snap)
    named(snap, "pods", f"{DS}-worker-1")["status"] = {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "message": "0/1 nodes: didn't match pod anti-affinity",
            }
        ],
    }
    [f] = run(snap, Scope(everything=True), all_rules()).findings
    assert f.evidence[1] == (
        f"Pod {NS}/{DS}-worker-1: Pending, not ready; "
        "unschedulable: 0/1 nodes: didn't match pod anti-affinity"
    )
    assert f.advice.startswith(f"the scheduler cannot place {DS}-worker-1: ")
    assert "Shared placement" in f.advice
