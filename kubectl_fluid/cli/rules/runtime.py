"""Rules about a CacheRuntime's components as they run: the master and workers (their StatefulSets'
ready counts, the pods' states), the client where the Dataset's PVC is used, and the master's mountUFS.

The workloads are read rather than ``CacheRuntime.status``: the counts there are the controller's copy,
and a stopped controller would leave them stale. The pods' own words (a container waiting in
CrashLoopBackOff, its last exit code, the scheduler's FailedScheduling) are the evidence.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from kubectl_fluid.api import names
from kubectl_fluid.cli.eventview import CREATE_REASONS, event_line, newest
from kubectl_fluid.cli.rules.dataset import condition, condition_line
from kubectl_fluid.cli.rules.finding import Finding, ObjectRef, Rule, Scope, Severity
from kubectl_fluid.cli.rules.needs import rule
from kubectl_fluid.cli.snapshot import Snapshot, key, labels_of, name_of

FAILED_SCHEDULING = "FailedScheduling"


def component_pods(snap: Snapshot, namespace: str, dataset: str, component: names.Component) -> list[Any]:
    wanted = names.component_name(dataset, component)
    return sorted(
        (
            p
            for p in snap.component_pods(namespace, dataset)
            if labels_of(p).get(names.LABEL_CACHERUNTIME_COMPONENT) == wanted
        ),
        key=name_of,
    )


def pod_ready(pod: Mapping[str, Any]) -> bool:
    ready = condition(pod, "Ready")
    return ready is not None and ready.get("status") == "True"


def pod_state(pod: Mapping[str, Any]) -> str:
    """``Pod ns/x: Running, not ready; container c waiting: CrashLoopBackOff (…), last exit 1 (Error),
    3 restarts``: what ``kubectl get``/``describe`` would show of why a pod is not ready."""
    ns, name = key(pod)
    status = pod.get("status") or {}
    parts = [
        f"Pod {ns}/{name}: {status.get('phase') or 'Unknown'}" + ("" if pod_ready(pod) else ", not ready")
    ]
    scheduled = condition(pod, "PodScheduled")
    if scheduled is not None and scheduled.get("status") == "False":
        parts.append(f"unschedulable: {' '.join(str(scheduled.get('message') or '').split())}")
    for c in [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]:
        if c.get("ready"):
            continue
        state = c.get("state") or {}
        words = [f"container {c.get('name')}"]
        waiting, terminated = state.get("waiting"), (c.get("lastState") or {}).get("terminated")
        if waiting:
            message = " ".join(str(waiting.get("message") or "").split())[:200]
            words.append(f"waiting: {waiting.get('reason')}" + (f" ({message})" if message else ""))
        elif state.get("running"):
            words.append("running, not ready")
        if terminated:
            words.append(f"last exit {terminated.get('exitCode')} ({terminated.get('reason') or '?'})")
        if c.get("restartCount"):
            words.append(f"{c['restartCount']} restart{'' if c['restartCount'] == 1 else 's'}")
        parts.append(", ".join(words))
    return "; ".join(parts)


def _statefulset(snap: Snapshot, namespace: str, dataset: str, component: names.Component) -> Any:
    return snap.get("statefulsets", namespace, names.component_name(dataset, component))


def _counts(workload: Mapping[str, Any]) -> tuple[int, int]:
    """(desired, ready) replicas of a StatefulSet."""
    desired = (workload.get("spec") or {}).get("replicas")
    return (1 if desired is None else int(desired)), int(
        (workload.get("status") or {}).get("readyReplicas") or 0
    )


def _component_finding(
    snap: Snapshot, scope: Scope, component: names.Component, rule_id: str
) -> Iterator[Finding]:
    for ns, name in scope.dataset_keys(snap):
        workload = _statefulset(snap, ns, name, component)
        if workload is None:
            continue
        desired, ready = _counts(workload)
        if ready >= desired:
            continue
        evidence = [f"StatefulSet {ns}/{name_of(workload)}: {ready}/{desired} ready"]
        pods = component_pods(snap, ns, name, component)
        evidence += [pod_state(p) for p in pods if not pod_ready(p)]
        if len(pods) < desired:
            event = newest(snap.events_for([workload]), CREATE_REASONS)
            if event is not None:
                evidence.append(f"StatefulSet event {event_line(event)}")
        severity: Severity = "warning" if component == "worker" and ready > 0 else "error"
        broken = [p for p in pods if not pod_ready(p)]
        first = name_of(broken[0]) if broken else f"{name_of(workload)}-0"
        yield Finding(
            rule_id,
            severity,
            ObjectRef("CacheRuntime", name, ns),
            f"{ready} of {desired} {component}{'s' if desired > 1 else ''} ready",
            tuple(evidence),
            _unscheduled_advice(ns, name, component, first)
            if broken and _unschedulable(broken[0])
            else f"read the {component}'s log (kubectl logs -n {ns} {first} --previous for a crash) and "
            f"its events (kubectl describe pod -n {ns} {first}); the image, command and resources "
            "come from the CacheRuntimeClass's topology and the runtime's overrides",
        )


def _unschedulable(pod: Mapping[str, Any]) -> bool:
    scheduled = condition(pod, "PodScheduled")
    return scheduled is not None and scheduled.get("status") == "False"


def _unscheduled_advice(ns: str, name: str, component: str, pod: str) -> str:
    """For a component pod the scheduler cannot place (what it says is in the evidence)."""
    placement = (
        "; workers of Exclusive datasets (the default) take a node each: Shared placement "
        "(Dataset spec.placement) lets them share"
        if component == "worker"
        else ""
    )
    return (
        f"the scheduler cannot place {pod}: free or add nodes that fit, or ask for fewer "
        f"(kubectl patch cacheruntime {name} -n {ns} --type=merge -p "
        f'\'{{"spec": {{"{component}": {{"replicas": N}}}}}}\'){placement}'
    )


@rule("master-not-ready", "statefulsets", "pods")
def master_not_ready(snap: Snapshot, scope: Scope) -> Iterator[Finding]:
    return _component_finding(snap, scope, "master", "master-not-ready")


@rule("workers-partially-ready", "statefulsets", "pods")
def workers_partially_ready(snap: Snapshot, scope: Scope) -> Iterator[Finding]:
    return _component_finding(snap, scope, "worker", "workers-partially-ready")


def intended_node(pod: Mapping[str, Any]) -> str | None:
    """The node a pod runs on, or (a DaemonSet's pod not scheduled yet) the one its affinity names."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or ():
        for field in term.get("matchFields") or ():
            if field.get("key") == "metadata.name" and field.get("values"):
                return str(field["values"][0])
    return None


def tolerated(taint: Mapping[str, Any], tolerations: list[Mapping[str, Any]]) -> bool:
    """Whether a taint is tolerated (core/v1 Toleration.ToleratesTaint)."""
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("key") and t.get("key") != taint.get("key"):
            continue
        if not t.get("key") and t.get("operator") != "Exists":
            continue
        if t.get("operator") == "Exists" or t.get("value", "") == taint.get("value", ""):
            return True
    return False


def _untolerated(node: Mapping[str, Any] | None, daemonset: Mapping[str, Any]) -> list[str]:
    template = ((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}
    tolerations = list(template.get("tolerations") or ())
    return [
        f"{t.get('key')}{'=' + str(t['value']) if t.get('value') else ''}:{t.get('effect')}"
        for t in ((node or {}).get("spec") or {}).get("taints") or ()
        if t.get("effect") in ("NoSchedule", "NoExecute") and not tolerated(t, tolerations)
    ]


def _client_problem(
    snap: Snapshot, ns: str, dataset: str, node_name: str, daemonset: Mapping[str, Any]
) -> tuple[str, list[str]] | None:
    """(what is wrong with the client on ``node_name``, evidence), or None when it runs there."""
    clients = [p for p in component_pods(snap, ns, dataset, "client") if intended_node(p) == node_name]
    running = [p for p in clients if (p.get("status") or {}).get("phase") == "Running"]
    if running:
        return None
    node = snap.get("nodes", "", node_name)
    label = names.fuse_node_label(ns, dataset)
    taints = _untolerated(node, daemonset)
    if clients:
        pod = clients[0]
        evidence = [pod_state(pod)]
        event = newest(snap.events_for([pod]), (FAILED_SCHEDULING,))
        if event is not None:
            evidence.append(f"event {event_line(event)}")
        if taints:
            evidence.append(f"Node {node_name} taints the client does not tolerate: {', '.join(taints)}")
        return (
            f"its client pod {name_of(pod)} is {(pod.get('status') or {}).get('phase') or 'not running'}",
            evidence,
        )
    if node is not None and label not in labels_of(node):
        return (
            f"node {node_name} is not labelled {label}={names.TRUE}, so the client DaemonSet skips it",
            [
                f"Node {node_name} metadata.labels: no {label}",
                f"DaemonSet {ns}/{name_of(daemonset)} spec.template.spec.nodeSelector: {label}={names.TRUE}",
            ],
        )
    if taints:
        return (
            f"node {node_name} has taints the client does not tolerate, so no client pod is made there",
            [
                f"Node {node_name} spec.taints: {', '.join(taints)}",
                f"DaemonSet {ns}/{name_of(daemonset)}: no pod on {node_name}",
            ],
        )
    status = daemonset.get("status") or {}
    return (
        f"the client DaemonSet has no pod on node {node_name}",
        [
            f"DaemonSet {ns}/{name_of(daemonset)}: desired {status.get('desiredNumberScheduled', 0)}, "
            f"ready {status.get('numberReady', 0)}"
        ],
    )


@rule("client-not-scheduled", "daemonsets", "pods", "nodes")
def client_not_scheduled(snap: Snapshot, scope: Scope) -> Iterator[Finding]:
    for ns, name in scope.dataset_keys(snap):
        daemonset = snap.get("daemonsets", ns, names.component_name(name, "client"))
        if daemonset is None:
            continue  # clientless: its PVC is explain's matter
        users: dict[str, list[str]] = {}
        for pod in snap.app_pods(ns, name):
            if scope.pod is not None and key(pod) != scope.pod:
                continue
            node = (pod.get("spec") or {}).get("nodeName")
            if node and name in _claims(pod):
                users.setdefault(str(node), []).append(name_of(pod))
        for node_name, pods in sorted(users.items()):
            problem = _client_problem(snap, ns, name, node_name, daemonset)
            if problem is None:
                continue
            message, evidence = problem
            yield Finding(
                "client-not-scheduled",
                "error",
                ObjectRef("CacheRuntime", name, ns),
                f"no client on node {node_name}, where {', '.join(pods)} use{'s' if len(pods) == 1 else ''} "
                f"the PVC {name}: {message}",
                tuple(evidence),
                "the CSI node labels the node when it stages the PVC: check fluid-csi's log on that node; "
                "for taints, add tolerations to the runtime (spec.client) or the Dataset, or untaint "
                f"the node (kubectl taint nodes {node_name} KEY-)",
            )


def _claims(pod: Mapping[str, Any]) -> list[str]:
    from kubectl_fluid.cli.podview import claim_names

    return claim_names(pod)


@rule("mountufs-failed")
def mountufs_failed(snap: Snapshot, scope: Scope) -> Iterator[Finding]:
    for ns, name in scope.dataset_keys(snap):
        dataset = snap.dataset(ns, name)
        update = condition(dataset, names.CONDITION_UFS_UPDATE_READY)
        if dataset is None or update is None or update.get("status") != "False":
            continue
        if update.get("reason") != names.REASON_MOUNT_UFS_FAILED:
            continue
        evidence = [condition_line("Dataset", update)]
        event = newest(snap.events_for([dataset]), (names.REASON_MOUNT_UFS_FAILED,))
        if event is not None:
            evidence.append(f"event {event_line(event)}")
        yield Finding(
            "mountufs-failed",
            "error",
            ObjectRef("Dataset", name, ns),
            "the class's mountUFS entry failed in the master: the Dataset's mounts are not mounted",
            tuple(evidence),
            f"fix what its stderr names (spec.mounts' URL, its options or Secret; kubectl logs -n {ns} "
            f"{names.master_pod_name(name)}); the controller tries again with backoff, and at once when "
            "spec.mounts changes",
        )


RULES: list[Rule] = [master_not_ready, workers_partially_ready, client_not_scheduled, mountufs_failed]
