"""``debug pod``'s walk and report: from one pod, through its volumes (PVC → PV → Dataset, and the
FUSE serving it on the pod's node: a FuseMount and the pod that runs it, a standalone FUSE pod or the
runtime's client) or its injected datasets (ConfigMap → CacheRuntime → class), to the node (Ready? the
CSI driver registered?) and the Events; which logs to tail; and the one line that ends the report.
Pure: the edge (``debug.py``) reads a snapshot and fluid-system's pods, and fetches the logs.

The ``Failed reason`` is the most causal finding, picked in a documented order of layers, lowest first,
because a fault below shows up as symptoms above (a lost node breaks its FUSE, a missing FUSE fails the
mount, the mount keeps the pod Pending): node → CSI → FUSE/client → runtime → dataset → injection.
Within a layer the order is the rules' own (``rules.all_rules()``), error severity only. The judgement
of ``explain pod`` (``diagnosis.py``) adds a clientless dataset's PVC (the CSI layer: the node refuses
it) and an injection the pod asked for and did not get (the injection layer).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubectl_fluid.api import drivervolumes, names
from kubectl_fluid.cli.snapshot import key, labels_of, name_of

if TYPE_CHECKING:
    from kubectl_fluid.cli.diagnosis import Explanation
    from kubectl_fluid.cli.rules.finding import Finding
    from kubectl_fluid.cli.snapshot import Obj, Snapshot

# The layers, lowest first, and the rules' IDs (or their prefixes) in each. An ID no layer names goes
# between dataset and injection.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("node", ("node-",)),
    ("csi", ("csi-", "clientless-pvc")),
    ("fuse", ("fuse-", "client-", "failed-mount")),
    ("runtime", ("runtime-", "master-", "worker", "class-")),
    ("dataset", ("dataset-", "mountufs", "mount-ufs", "dataload")),
    ("other", ()),
    ("injection", ("webhook-", "inject", "pod-inject-", "not-injected")),
)
# explain pod's judgements, as IDs of their own (the report names them like the rules').
CLIENTLESS_PVC = "clientless-pvc"
NOT_INJECTED = "not-injected"
NEVER_CREATED = "pod-never-created"
REPORT_KIND = "DebugReport"


def layer(rule: str) -> int:
    other = next(i for i, (name, _) in enumerate(LAYERS) if name == "other")
    for i, (_, prefixes) in enumerate(LAYERS):
        if any(rule.startswith(p) for p in prefixes):
            return i
    return other


@dataclass(frozen=True)
class Cause:
    rule: str
    text: str  # "<object>: <message>; <advice>"


@dataclass(frozen=True)
class LogSource:
    namespace: str
    pod: str
    container: str | None
    previous: bool  # the container restarted: its last run's log holds the failure
    why: str  # "FUSE of FuseMount n1-abc", "the CSI node service on n1", "the webhook"

    def title(self) -> str:
        container = f" -c {self.container}" if self.container else ""
        return f"{self.namespace}/{self.pod}{container}{' (previous)' if self.previous else ''}: {self.why}"


@dataclass
class Walk:
    namespace: str
    name: str
    rows: list[tuple[str, list[str]]] = field(default_factory=list)  # (key, lines) of the report
    logs: list[LogSource] = field(default_factory=list)
    causes: list[Cause] = field(default_factory=list)  # every error, most causal first

    @property
    def failed(self) -> Cause | None:
        return self.causes[0] if self.causes else None


def pick(findings: Iterable[Finding], explanation: Explanation | None) -> list[Cause]:
    """Every error-severity finding and explain's judgement, most causal first (``LAYERS``)."""
    causes = [
        Cause(f.rule, f"{f.object}: {f.message}" + (f"; {f.advice}" if f.advice else ""))
        for f in findings
        if f.severity == "error"
    ]
    causes += _explained(explanation)
    return sorted(causes, key=lambda c: layer(c.rule))  # stable: the rules' order within a layer


def _explained(e: Explanation | None) -> list[Cause]:
    if e is None or e.role:
        return []
    found = []
    clientless = [t for t in [*e.reasons, *e.notes] if "of a clientless dataset" in t]
    if clientless:
        found.append(Cause(CLIENTLESS_PVC, f"Pod {e.namespace}/{e.name}: {clientless[0]}"))
    elif e.requested and not e.is_injected:
        found += [Cause(NOT_INJECTED, f"Pod {e.namespace}/{e.name}: {r}") for r in e.reasons[:1]]
    return found


# -- the walk --------------------------------------------------------------------------------------
def walk(
    snap: Snapshot,
    pod: Obj,
    system_pods: Sequence[Obj],
    findings: Iterable[Finding],
    explanation: Explanation | None,
) -> Walk:
    """The report of ``pod`` (found in ``snap``); ``system_pods`` are fluid-system's (the CSI node
    pods, the webhook's, the standalone FUSE pods)."""
    from kubectl_fluid.cli.eventview import event_line
    from kubectl_fluid.cli.podview import injected_datasets, requested_datasets
    from kubectl_fluid.cli.rules import inscope
    from kubectl_fluid.cli.rules.finding import Scope

    ns, name = key(pod)
    w = Walk(ns, name)
    node = inscope.node_of(pod)
    w.rows.append(("Pod", [f"{ns}/{name}"]))
    phase = str((pod.get("status") or {}).get("phase") or "?")
    w.rows.append(("Phase", [phase + (f" on node {node}" if node else " (not scheduled)")]))
    csi_pod = _on_node(system_pods, names.CSI_NODE_COMPONENT, node) if node else None
    if node:
        w.rows.append(("Node", [_node_line(snap, node)]))
        w.rows.append(("CSI", [_csi_line(snap, node, csi_pod)]))

    uses_fuse, client_datasets = _volumes(snap, pod, w)
    mounts = inscope.fusemounts(snap, Scope(pod=(ns, name)))
    if mounts:
        w.rows.append(("FUSE", [_mount_line(m) for m in mounts]))
    w.logs += [s for s in (_fuse_log(snap, m, system_pods) for m in mounts) if s is not None]
    _clients(snap, ns, node, client_datasets, w)

    injected = injected_datasets(pod)
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    wanted = sorted(set(injected) | set(requested_datasets(annotations)))
    if wanted:
        w.rows.append(("Datasets", [_dataset_line(snap, ns, ds, ds in injected) for ds in wanted]))
    if csi_pod is not None and (uses_fuse or mounts):
        w.logs.append(_source(csi_pod, names.CSI_NODE_CONTAINER, f"the CSI node service on {node}"))
    if wanted and not injected:
        w.logs += [_source(p, None, "the webhook") for p in _component(system_pods, names.WEBHOOK_COMPONENT)]

    # A pod that runs got past its Warnings (a first FailedMount while the driver registered...).
    events = [e for e in snap.events_for([pod]) if e.get("type") == "Warning"] if phase == "Pending" else []
    if events:
        w.rows.append(("Events", [event_line(e) for e in events[-5:]]))
    w.causes = pick(findings, explanation)
    if w.causes:
        w.rows.append(("Findings", [f"[{c.rule}] {c.text}" for c in w.causes]))
    return w


def _volumes(snap: Snapshot, pod: Obj, w: Walk) -> tuple[bool, list[str]]:
    """The Volumes rows: each PVC to its PV and Dataset. (Whether one goes through the CSI driver;
    the datasets among them that have a client, which serves the pod on its node.)"""
    from kubectl_fluid.cli.podview import is_dataset_pvc

    ns = key(pod)[0]
    uses_fuse = False
    lines: list[str] = []
    client_datasets: list[str] = []
    for claim, pvc, pv in snap.pod_claims(pod):
        line = f"{claim}: PVC " + (_phase(pvc) if pvc else "not found")
        if pv is not None:
            driver = drivervolumes.pv_driver(pv) or "not CSI"
            line += f" → PV {name_of(pv)} ({driver})"
            uses_fuse = uses_fuse or driver == names.CSI_DRIVER
        dataset = snap.dataset(ns, claim) if pvc and is_dataset_pvc(pvc) else None
        if dataset is not None:
            line += f" → Dataset {claim} ({_phase(dataset)})"
            if _has_client(snap, ns, claim):
                client_datasets.append(claim)
        lines.append(line)
    if lines:
        w.rows.append(("Volumes", lines))
    return uses_fuse, client_datasets


def _clients(snap: Snapshot, ns: str, node: str, datasets: list[str], w: Walk) -> None:
    """The Clients rows: each dataset's client pod on the pod's node, or that there is none (its
    NodeStage waits for one); their logs."""
    from kubectl_fluid.cli.rules import inscope

    lines: list[str] = []
    for ds in datasets:
        mine = [
            p
            for p in snap.component_pods(ns, ds)
            if labels_of(p).get(names.LABEL_CACHERUNTIME_COMPONENT) == names.component_name(ds, "client")
            and inscope.node_of(p) == node
        ]
        if not mine:
            lines.append(f"{ds}: no client pod on node {node or '?'}")
        for p in mine:
            lines.append(f"{ds}: {'/'.join(key(p))} ({_pod_state(p)})")
            if not any(s.pod == name_of(p) for s in w.logs):
                w.logs.append(_source(p, None, f"the client of {ds} on {node}"))
    if lines:
        w.rows.append(("Clients", lines))


def never_created(snap: Snapshot, namespace: str, name: str, system_pods: Sequence[Obj] = ()) -> Walk | None:
    """A pod that does not exist but whose creator (a ReplicaSet, Job, StatefulSet or DaemonSet named
    as a prefix of ``name``, or ``name`` a prefix of it: a Deployment's) failed to create pods: its
    newest FailedCreate Event (an admission webhook's denial word for word) says why, and the
    webhook's log is tailed. None when no such Event is there."""
    from kubectl_fluid.cli.eventview import CREATE_REASONS, event_line, newest

    def creates(event: Mapping[str, Any]) -> bool:
        creator = str((event.get("involvedObject") or {}).get("name") or "")
        return bool(creator) and (
            name.startswith(f"{creator}-") or creator.startswith(f"{name}-") or creator == name
        )

    events = [e for e in snap.items("events") if key(e)[0] == namespace and creates(e)]
    event = newest(events, CREATE_REASONS)
    if event is None:
        return None
    involved = event.get("involvedObject") or {}
    creator = f"{involved.get('kind')} {namespace}/{involved.get('name')}"
    w = Walk(namespace, name)
    w.rows.append(("Pod", [f"{namespace}/{name}: not found (never created)"]))
    w.rows.append(("Creator", [f"{creator}: {event_line(event)}"]))
    w.logs = [_source(p, None, "the webhook") for p in _component(system_pods, names.WEBHOOK_COMPONENT)]
    message = " ".join(str(event.get("message") or "").split())
    w.causes = [
        Cause(
            NEVER_CREATED,
            f"{creator} cannot create its pods: {message}; fix what the message names (kubectl fluid "
            f"explain {involved.get('kind', '').lower()}/{involved.get('name')} -n {namespace})",
        )
    ]
    return w


def render(w: Walk, logs: Mapping[LogSource, str]) -> str:
    """The report: ``Key:  lines``, the logs' tails, and the last line."""
    out: list[str] = []
    for label, lines in w.rows:
        if len(lines) == 1 and label not in ("Findings", "Events", "Volumes", "FUSE"):
            out.append(f"{label + ':':<11} {lines[0]}")
        else:
            out.append(f"{label}:")
            out += [f"  {line}" for line in lines]
    for source in w.logs:
        text = logs.get(source)
        if text is None:
            continue
        out.append(f"Log {source.title()}:")
        out += [f"  {line}" for line in text.rstrip("\n").splitlines()] or ["  <empty>"]
    failed = w.failed
    out.append(f"Failed reason: [{failed.rule}] {failed.text}" if failed else "OK")
    return "\n".join(out) + "\n"


def to_json(w: Walk, logs: Mapping[LogSource, str]) -> dict[str, Any]:
    """The report as ``-o json|yaml`` prints it: a ``DebugReport`` of the plugin's API version."""
    failed = w.failed
    return {
        "apiVersion": names.CLI_API_VERSION,
        "kind": REPORT_KIND,
        "pod": {"namespace": w.namespace, "name": w.name},
        "walk": [{"key": k, "lines": lines} for k, lines in w.rows],
        "logs": [
            {
                "namespace": s.namespace,
                "pod": s.pod,
                "container": s.container,
                "previous": s.previous,
                "why": s.why,
                "text": logs.get(s),
            }
            for s in w.logs
        ],
        "causes": [{"rule": c.rule, "text": c.text} for c in w.causes],
        "failedReason": {"rule": failed.rule, "text": failed.text} if failed else None,
    }


# -- what the lines say ------------------------------------------------------------------------------
def _phase(obj: Mapping[str, Any]) -> str:
    return str((obj.get("status") or {}).get("phase") or "no phase")


def _pod_state(pod: Mapping[str, Any]) -> str:
    status = pod.get("status") or {}
    restarts = sum(int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or ())
    return f"{status.get('phase', '?')}" + (f", {restarts} restarts" if restarts else "")


def _node_line(snap: Snapshot, node: str) -> str:
    obj = snap.get("nodes", "", node)
    if obj is None:
        return f"{node}: not found" if snap.readable("nodes") else f"{node} (nodes unreadable)"
    conditions = (obj.get("status") or {}).get("conditions") or ()
    ready: Mapping[str, Any] = next((c for c in conditions if c.get("type") == "Ready"), {})
    if not ready:
        # As node-not-ready-with-fuse judges it: not reported yet, which is no evidence of a lost node.
        return f"{node} (no Ready condition yet)"
    state = "Ready" if ready.get("status") == "True" else f"NotReady (Ready={ready.get('status')})"
    return f"{node} {state}"


def _csi_line(snap: Snapshot, node: str, csi_pod: Obj | None) -> str:
    drivers = snap.csi_drivers(node)
    if drivers is None:
        registered = "CSINodes unreadable"
    elif names.CSI_DRIVER in drivers:
        registered = f"{names.CSI_DRIVER} registered"
    else:
        registered = f"{names.CSI_DRIVER} NOT registered"
    where = (
        f"node pod {'/'.join(key(csi_pod))} ({_pod_state(csi_pod)})" if csi_pod else "no CSI node pod there"
    )
    return f"{registered}; {where}"


def _mount_line(m: Mapping[str, Any]) -> str:
    spec, status = m.get("spec") or {}, m.get("status") or {}
    line = f"{name_of(m)}: mode {spec.get('mode', '?')}, {status.get('phase', '?')}"
    line += f", refs {status.get('refCount', 0)}"
    if status.get("podName"):
        line += f", pod {status['podName']}"
    if status.get("reason"):
        line += f": {' '.join(str(status['reason']).split())}"
    return line


def _dataset_line(snap: Snapshot, ns: str, ds: str, injected: bool) -> str:
    dataset = snap.dataset(ns, ds)
    parts = [f"{ds}: {'injected' if injected else 'not injected'}"]
    parts.append(f"Dataset {_phase(dataset)}" if dataset else "Dataset not found")
    parts.append(
        f"ConfigMap {names.runtime_config_configmap(ds)}" + ("" if snap.configmap(ns, ds) else " not found")
    )
    runtime = snap.runtime(ns, ds)
    if runtime is None:
        parts.append("CacheRuntime not found")
    else:
        ready: Mapping[str, Any] = next(
            (c for c in (runtime.get("status") or {}).get("conditions") or () if c.get("type") == "Ready"), {}
        )
        parts.append(f"CacheRuntime Ready={ready.get('status', '?')}")
    return "; ".join(parts)


def _has_client(snap: Snapshot, ns: str, ds: str) -> bool:
    from kubectl_fluid.cli.datasets import FUSE, mode_of

    return bool(mode_of(snap.runtime(ns, ds), snap.configmap(ns, ds)) == FUSE)


def _component(pods: Iterable[Obj], component: str) -> list[Obj]:
    return [p for p in pods if labels_of(p).get(names.LABEL_APP_COMPONENT) == component]


def _on_node(pods: Iterable[Obj], component: str, node: str) -> Obj | None:
    return next(
        (p for p in _component(pods, component) if (p.get("spec") or {}).get("nodeName") == node), None
    )


def _source(pod: Obj, container: str | None, why: str) -> LogSource:
    ns, name = key(pod)
    containers = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or ()]
    chosen = container if container in containers else (containers[0] if containers else container)
    restarted = any(
        int(s.get("restartCount") or 0) > 0
        for s in (pod.get("status") or {}).get("containerStatuses") or ()
        if s.get("name") == chosen
    )
    return LogSource(ns, name, chosen, restarted, why)


def _fuse_log(snap: Snapshot, m: Mapping[str, Any], system_pods: Sequence[Obj]) -> LogSource | None:
    """The pod running the mount's FUSE: a standalone FUSE pod, or the runtime's client (embedded: the
    CSI node pod's own, tailed anyway)."""
    spec, status = m.get("spec") or {}, m.get("status") or {}
    pod_name = status.get("podName")
    if not pod_name:
        return None
    why = f"the FUSE of FuseMount {name_of(m)}"
    if spec.get("mode") == "client":
        ref = spec.get("dataset") or {}
        pod = snap.get("pods", str(ref.get("namespace") or ""), str(pod_name))
        if pod is None:
            return LogSource(str(ref.get("namespace") or ""), str(pod_name), None, False, why)
        return _source(pod, None, why)
    pod = next((p for p in system_pods if name_of(p) == pod_name), None)
    if pod is None:
        return LogSource(names.FLUID_NAMESPACE, str(pod_name), names.FUSE_POD_CONTAINER, False, why)
    return _source(pod, names.FUSE_POD_CONTAINER, why)
