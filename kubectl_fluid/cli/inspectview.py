"""What ``kubectl fluid inspect dataset DS`` shows: the model of one dataset's parts built from a
``Snapshot`` (``inspect()``), and its renderings: the tree (default), the wide tree, and the
``DatasetInspection`` object of ``-o json|yaml``. Pure: the command reads, this module only joins and
prints, so it is tested on hand-made snapshots.

Three states of a part: found; missing (``found`` false: the tree says ``not found``); unknown (its
kind could not be listed, ``found`` None: the tree says ``<unknown>``, JSON null, and the command
warns). A component the runtime does not run (a clientless runtime's client) is ``disabled``, not
missing.

Long lists are summed per node in the tree (``LISTED``): a dataset with a thousand app pods reads as
a few lines, one per node; ``-o wide`` and JSON list every pod.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubectl_fluid.api import names
from kubectl_fluid.cli.snapshot import Snapshot, labels_of, name_of
from kubectl_fluid.cli.table import NONE, UNKNOWN, age

# Above this many pods a tree node sums them per node, one line each, instead of a line per pod.
LISTED = 20
# The states' column starts after the longest label, but no further right than this: a long name (a
# PV's carries its namespace) is followed by its state, and the others stay readable.
STATE_COLUMN_MAX = 56
# How an app pod uses the dataset.
VIA_INJECTED = "injected"  # it carries the runtime config (the webhook's RuntimeConfigInjector)
VIA_PVC = "pvc"  # it mounts the dataset's PVC
WORKLOAD_KINDS = {"master": "StatefulSet", "worker": "StatefulSet", "client": "DaemonSet"}
NO_NODE = "<none>"  # a pod not scheduled yet, as kubectl's NODE column shows it


@dataclass(frozen=True)
class Condition:
    type: str
    status: str
    reason: str | None
    message: str | None

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "status": self.status, "reason": self.reason, "message": self.message}


@dataclass(frozen=True)
class PodState:
    name: str
    node: str | None
    status: str  # as kubectl's STATUS column says it: a waiting reason, Terminating, else the phase
    ready: bool
    via: tuple[str, ...] = ()  # app pods: VIA_INJECTED and/or VIA_PVC

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "name": self.name,
            "node": self.node,
            "status": self.status,
            "ready": self.ready,
        }
        if self.via:
            found["via"] = list(self.via)
        return found


@dataclass(frozen=True)
class Component:
    component: str  # master, worker, client
    kind: str  # StatefulSet, DaemonSet
    name: str
    found: bool | None
    disabled: bool  # the runtime runs none (a clientless runtime's client)
    desired: int | None
    ready: int | None
    phase: str | None  # the CacheRuntime's status.<component>.phase
    pods: tuple[PodState, ...] | None

    def to_json(self) -> dict[str, Any]:
        return {
            "component": self.component,
            "kind": self.kind,
            "name": self.name,
            "found": self.found,
            "disabled": self.disabled,
            "desired": self.desired,
            "ready": self.ready,
            "phase": self.phase,
            "pods": _pods_json(self.pods),
        }


@dataclass(frozen=True)
class Runtime:
    name: str
    found: bool | None
    runtime_class: str | None
    class_found: bool | None
    file_system_type: str | None
    ready: Condition | None  # its Ready condition

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "found": self.found,
            "runtimeClass": self.runtime_class,
            "runtimeClassFound": self.class_found,
            "fileSystemType": self.file_system_type,
            "ready": self.ready.to_json() if self.ready else None,
        }


@dataclass(frozen=True)
class ConfigMap:
    name: str
    found: bool | None
    keys: tuple[tuple[str, int], ...]  # (key, size in bytes), sorted
    last_change: str | None  # the newest managedFields time, else creationTimestamp
    resource_version: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "found": self.found,
            "keys": [{"name": k, "size": n} for k, n in self.keys],
            "lastChange": self.last_change,
            "resourceVersion": self.resource_version,
        }


@dataclass(frozen=True)
class Volume:
    """The dataset's PVC (``other`` its volume) or PV (``other`` the claim it is bound to)."""

    kind: str
    name: str
    found: bool | None
    phase: str | None
    other: str | None

    def to_json(self) -> dict[str, Any]:
        key = "volumeName" if self.kind == "PersistentVolumeClaim" else "claim"
        return {"name": self.name, "found": self.found, "phase": self.phase, key: self.other}


@dataclass(frozen=True)
class FuseMount:
    name: str
    node: str
    mode: str | None
    refs: int
    targets: tuple[str, ...]  # the bind mounts into pods
    phase: str | None
    reason: str | None
    pod: str | None  # the FUSE's pod (mode client: the runtime's client pod)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "node": self.node,
            "mode": self.mode,
            "refCount": self.refs,
            "targets": list(self.targets),
            "phase": self.phase,
            "reason": self.reason,
            "podName": self.pod,
        }


@dataclass(frozen=True)
class DataLoad:
    name: str
    phase: str | None
    duration: str | None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "phase": self.phase, "duration": self.duration}


@dataclass(frozen=True)
class Inspection:
    namespace: str
    name: str
    created: str | None
    phase: str | None
    conditions: tuple[Condition, ...]
    mount_points: tuple[str, ...]
    runtime: Runtime
    components: tuple[Component, ...]
    configmap: ConfigMap
    pvc: Volume
    pv: Volume
    fusemounts: tuple[FuseMount, ...] | None
    dataloads: tuple[DataLoad, ...] | None
    app_pods: tuple[PodState, ...] | None
    unreadable: Mapping[str, str]

    def to_json(self) -> dict[str, Any]:
        """A DatasetInspection (``names.KIND_DATASET_INSPECTION``), of the plugin's own group."""
        return {
            "apiVersion": names.CLI_API_VERSION,
            "kind": names.KIND_DATASET_INSPECTION,
            "metadata": {"name": self.name, "namespace": self.namespace, "creationTimestamp": self.created},
            "dataset": {
                "phase": self.phase,
                "conditions": [c.to_json() for c in self.conditions],
                "mountPoints": list(self.mount_points),
            },
            "runtime": self.runtime.to_json(),
            "components": [c.to_json() for c in self.components],
            "configMap": self.configmap.to_json(),
            "persistentVolumeClaim": self.pvc.to_json(),
            "persistentVolume": self.pv.to_json(),
            "fuseMounts": None if self.fusemounts is None else [m.to_json() for m in self.fusemounts],
            "dataLoads": None if self.dataloads is None else [d.to_json() for d in self.dataloads],
            "appPods": _pods_json(self.app_pods),
            "unreadable": dict(sorted(self.unreadable.items())),
        }


def _pods_json(pods: Sequence[PodState] | None) -> list[dict[str, Any]] | None:
    return None if pods is None else [p.to_json() for p in pods]


# -- the model ---------------------------------------------------------------------------------------


def _found(snap: Snapshot, kind: str, obj: object) -> bool | None:
    return None if not snap.readable(kind) else obj is not None


def _conditions(obj: Mapping[str, Any] | None) -> tuple[Condition, ...]:
    return tuple(
        Condition(str(c.get("type") or ""), str(c.get("status") or ""), c.get("reason"), c.get("message"))
        for c in ((obj or {}).get("status") or {}).get("conditions") or ()
    )


def pod_status(pod: Mapping[str, Any]) -> str:
    """The pod's state in a word, as kubectl's STATUS column: Terminating while being deleted, a
    container's waiting or terminated reason (CrashLoopBackOff, ContainerCreating, Error), else the
    phase."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    status = pod.get("status") or {}
    for container in [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]:
        state = container.get("state") or {}
        for key in ("waiting", "terminated"):
            reason = (state.get(key) or {}).get("reason")
            if reason and reason != "Completed":
                return str(reason)
    return str(status.get("phase") or "Unknown")


def pod_ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def pod_state(pod: Mapping[str, Any], via: tuple[str, ...] = ()) -> PodState:
    node = (pod.get("spec") or {}).get("nodeName")
    return PodState(name_of(pod), str(node) if node else None, pod_status(pod), pod_ready(pod), via)


def _runtime_json(configmap: Mapping[str, Any] | None) -> dict[str, Any] | None:
    text = ((configmap or {}).get("data") or {}).get(names.RUNTIME_JSON_KEY)
    try:
        parsed = json.loads(text) if text else None
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def component_disabled(
    component: str,
    runtime: Mapping[str, Any] | None,
    klass: Mapping[str, Any] | None,
    rendered: Mapping[str, Any] | None,
) -> bool:
    """Whether the runtime runs no such component: the rendered runtime.json says (it omits a disabled
    component), else the runtime's ``disabled``, else the class has no such topology."""
    if rendered is not None:
        part = rendered.get(component)
        return not (isinstance(part, dict) and part.get("enabled"))
    if (((runtime or {}).get("spec") or {}).get(component) or {}).get("disabled"):
        return True
    if klass is not None:
        return not ((klass.get("spec") or {}).get("topology") or {}).get(component)
    return False


def _replicas(kind: str, workload: Mapping[str, Any]) -> tuple[int | None, int]:
    """(desired, ready) of a StatefulSet or DaemonSet, as ``kubectl get`` counts them."""
    status = workload.get("status") or {}
    if kind == "DaemonSet":
        return int(status.get("desiredNumberScheduled") or 0), int(status.get("numberReady") or 0)
    desired = (workload.get("spec") or {}).get("replicas")
    return (1 if desired is None else int(desired)), int(status.get("readyReplicas") or 0)


def _components(
    snap: Snapshot, namespace: str, dataset: str, runtime: Mapping[str, Any] | None, rendered: Any
) -> tuple[Component, ...]:
    klass = snap.runtime_class(runtime)
    pods = snap.component_pods(namespace, dataset) if snap.readable("pods") else None
    out = []
    for component in names.COMPONENTS:
        kind = WORKLOAD_KINDS[component]
        plural = "statefulsets" if kind == "StatefulSet" else "daemonsets"
        name = names.component_name(dataset, component)
        workload = snap.get(plural, namespace, name)
        desired, ready = _replicas(kind, workload) if workload else (None, None)
        status = ((runtime or {}).get("status") or {}).get(component) or {}
        mine = (
            None
            if pods is None
            else tuple(
                pod_state(p)
                for p in sorted(pods, key=name_of)
                if labels_of(p).get(names.LABEL_CACHERUNTIME_COMPONENT) == name
            )
        )
        out.append(
            Component(
                component=component,
                kind=kind,
                name=name,
                found=_found(snap, plural, workload),
                disabled=workload is None and component_disabled(component, runtime, klass, rendered),
                desired=desired,
                ready=ready,
                phase=status.get("phase") or None,
                pods=mine,
            )
        )
    return tuple(out)


def _size(value: str, binary: bool) -> int:
    if not binary:
        return len(value.encode())
    try:
        return len(base64.b64decode(value, validate=True))
    except (binascii.Error, ValueError):
        return len(value)


def last_change(obj: Mapping[str, Any]) -> str | None:
    """When an object last changed, as far as the API says: its newest managedFields entry (every
    write records its time there), else its creation."""
    meta = obj.get("metadata") or {}
    times = [str(f["time"]) for f in meta.get("managedFields") or () if f.get("time")]
    return max(times) if times else meta.get("creationTimestamp")


def _configmap(snap: Snapshot, namespace: str, dataset: str) -> ConfigMap:
    cm = snap.configmap(namespace, dataset)
    keys: dict[str, int] = {}
    for field, binary in (("data", False), ("binaryData", True)):
        for key, value in ((cm or {}).get(field) or {}).items():
            keys[str(key)] = _size(str(value), binary)
    return ConfigMap(
        name=names.runtime_config_configmap(dataset),
        found=_found(snap, "configmaps", cm),
        keys=tuple(sorted(keys.items())),
        last_change=last_change(cm) if cm else None,
        resource_version=((cm or {}).get("metadata") or {}).get("resourceVersion"),
    )


def _volumes(snap: Snapshot, namespace: str, dataset: str) -> tuple[Volume, Volume]:
    pvc = snap.pvc(namespace, dataset)
    pv = snap.pv(namespace, dataset)
    claim_ref = ((pv or {}).get("spec") or {}).get("claimRef") or {}
    bound_to = f"{claim_ref.get('namespace')}/{claim_ref.get('name')}" if claim_ref.get("name") else None
    return (
        Volume(
            "PersistentVolumeClaim",
            dataset,
            _found(snap, "persistentvolumeclaims", pvc),
            ((pvc or {}).get("status") or {}).get("phase"),
            ((pvc or {}).get("spec") or {}).get("volumeName"),
        ),
        Volume(
            "PersistentVolume",
            names.dataset_pv(namespace, dataset),
            _found(snap, "persistentvolumes", pv),
            ((pv or {}).get("status") or {}).get("phase"),
            bound_to,
        ),
    )


def _fusemount(fm: Mapping[str, Any]) -> FuseMount:
    spec, status = fm.get("spec") or {}, fm.get("status") or {}
    targets = tuple(
        str(t.get("path") or "")
        for volume in status.get("volumes") or ()
        for t in volume.get("targets") or ()
    )
    return FuseMount(
        name=name_of(fm),
        node=str(spec.get("nodeName") or ""),
        mode=spec.get("mode"),
        refs=int(status.get("refCount") or 0),
        targets=targets,
        phase=status.get("phase"),
        reason=status.get("reason"),
        pod=status.get("podName"),
    )


def app_pod_states(snap: Snapshot, namespace: str, dataset: str) -> tuple[PodState, ...]:
    """The pods that use the dataset (``Snapshot.app_pods()``), each with how, sorted by name."""
    from kubectl_fluid.cli.podview import claim_names, injected_datasets

    states = []
    for pod in snap.app_pods(namespace, dataset):
        via = tuple(
            v
            for v, uses in (
                (VIA_INJECTED, dataset in injected_datasets(pod)),
                (VIA_PVC, dataset in claim_names(pod)),
            )
            if uses
        )
        states.append(pod_state(pod, via))
    return tuple(sorted(states, key=lambda p: p.name))


def inspect(snap: Snapshot, namespace: str, dataset: str) -> Inspection | None:
    """Everything ``dataset`` in ``namespace`` is made of in ``snap``; None when there is no such
    Dataset."""
    ds = snap.dataset(namespace, dataset)
    if ds is None:
        return None
    runtime = snap.runtime(namespace, dataset)
    klass = snap.runtime_class(runtime)
    class_name = ((runtime or {}).get("spec") or {}).get("runtimeClassName")
    ready = next((c for c in _conditions(runtime) if c.type == names.CONDITION_READY), None)
    configmap_obj = snap.configmap(namespace, dataset)
    pvc, pv = _volumes(snap, namespace, dataset)
    meta = ds.get("metadata") or {}
    return Inspection(
        namespace=namespace,
        name=dataset,
        created=meta.get("creationTimestamp"),
        phase="Terminating" if meta.get("deletionTimestamp") else (ds.get("status") or {}).get("phase"),
        conditions=_conditions(ds),
        mount_points=tuple(str(m.get("mountPoint", "")) for m in (ds.get("spec") or {}).get("mounts") or ()),
        runtime=Runtime(
            name=dataset,
            found=_found(snap, "cacheruntimes", runtime),
            runtime_class=str(class_name) if class_name else None,
            class_found=_found(snap, "cacheruntimeclasses", klass) if class_name else None,
            file_system_type=((klass or {}).get("spec") or {}).get("fileSystemType"),
            ready=ready,
        ),
        components=_components(snap, namespace, dataset, runtime, _runtime_json(configmap_obj)),
        configmap=_configmap(snap, namespace, dataset),
        pvc=pvc,
        pv=pv,
        fusemounts=tuple(_fusemount(m) for m in snap.fusemounts(namespace, dataset))
        if snap.readable("fusemounts")
        else None,
        dataloads=tuple(
            DataLoad(
                name_of(d), (d.get("status") or {}).get("phase"), (d.get("status") or {}).get("duration")
            )
            for d in sorted(snap.dataloads(namespace, dataset), key=name_of)
        )
        if snap.readable("dataloads")
        else None,
        app_pods=app_pod_states(snap, namespace, dataset) if snap.readable("pods") else None,
        unreadable=dict(snap.unreadable),
    )


# -- the tree ----------------------------------------------------------------------------------------


@dataclass
class Node:
    """One line of the tree: what (kind and name), its state, and what hangs below it."""

    label: str
    state: str = ""
    children: list[Node] | None = None

    def add(self, label: str, state: str = "") -> Node:
        child = Node(label, state)
        if self.children is None:
            self.children = []
        self.children.append(child)
        return child


def render_tree(root: Node) -> str:
    """The tree as ``kubectl tree`` draws one, the states in a column after the longest label."""
    lines: list[tuple[str, str]] = [(root.label, root.state)]

    def walk(node: Node, prefix: str) -> None:
        children = node.children or []
        for i, child in enumerate(children):
            last = i == len(children) - 1
            lines.append((f"{prefix}{'└── ' if last else '├── '}{child.label}", child.state))
            walk(child, prefix + ("    " if last else "│   "))

    walk(root, "")
    width = min(max(len(label) for label, _ in lines), STATE_COLUMN_MAX)
    return "".join(f"{label.ljust(width)}   {state}".rstrip() + "\n" for label, state in lines)


def _missing(found: bool | None) -> str | None:
    """The state of a part that is not there: ``not found``, or ``<unknown>`` when unread."""
    return UNKNOWN if found is None else ("not found" if not found else None)


def _condition_state(c: Condition, wide: bool, named: bool = True) -> str:
    words = f"{c.type}={c.status}" if named else c.status
    if c.reason:
        words += f" {c.reason}"
    if c.message and (wide or c.status != "True"):
        words += f": {c.message}"
    return words


def _pod_line(p: PodState) -> tuple[str, str]:
    state = f"{p.status}{'' if p.ready else ', not ready'}"
    return f"Pod {p.name}", state + (f" ({'+'.join(p.via)})" if p.via else "")


def _counts(values: Iterable[str], by_count: bool = True) -> str:
    """``3 Running, 1 Pending``: how many of each value, the most first (``by_count``) or by name."""
    seen: dict[str, int] = {}
    for v in values:
        seen[v] = seen.get(v, 0) + 1
    order = sorted(seen.items(), key=lambda kv: (-kv[1], kv[0]) if by_count else kv[0])
    return ", ".join(f"{n} {v}" for v, n in order)


def pods_per_node(pods: Sequence[PodState]) -> dict[str, list[PodState]]:
    """The pods by node, nodes sorted, NO_NODE (the pods not scheduled) last."""
    by_node: dict[str, list[PodState]] = {}
    for p in pods:
        by_node.setdefault(p.node or NO_NODE, []).append(p)
    return dict(sorted(by_node.items(), key=lambda kv: (kv[0] == NO_NODE, kv[0])))


def _add_pods(parent: Node, pods: Sequence[PodState] | None, wide: bool) -> None:
    """Each pod under its node; summed per node when there are more than LISTED and not ``wide``."""
    if pods is None:
        parent.add("Pods", UNKNOWN)
        return
    for node, here in pods_per_node(pods).items():
        label = "Not scheduled" if node == NO_NODE else f"Node {node}"
        branch = parent.add(label, f"{len(here)} pod{'s' if len(here) != 1 else ''}")
        if wide or len(pods) <= LISTED:
            for p in here:
                branch.add(*_pod_line(p))
        else:
            summary = _counts(p.status for p in here)
            via = _counts(("+".join(p.via) for p in here if p.via), by_count=False)
            branch.state += f": {summary}" + (f"; {via}" if via else "")


def tree(x: Inspection, now: datetime, wide: bool = False) -> Node:
    """The tree of an inspection; ``wide`` lists every pod and says more of each part."""
    root = Node(f"Dataset {x.namespace}/{x.name}", f"{x.phase or NONE}   age {age(x.created, now)}")
    for c in x.conditions:
        root.add(f"Condition {c.type}", _condition_state(c, wide, named=False))
    if wide and x.mount_points:
        root.add("Mounts", ", ".join(x.mount_points))
    _add_runtime(root, x, wide)
    _add_configmap(root, x.configmap, now, wide)
    for volume in (x.pvc, x.pv):
        state = _missing(volume.found) or (volume.phase or NONE)
        if volume.found and volume.other:
            state += f" ({'volume' if volume.kind == 'PersistentVolumeClaim' else 'claim'} {volume.other})"
        root.add(f"{volume.kind} {volume.name}", state)
    _add_fusemounts(root, x.fusemounts, wide)
    loads = root.add("DataLoads", UNKNOWN if x.dataloads is None else str(len(x.dataloads)))
    for d in x.dataloads or ():
        loads.add(f"DataLoad {d.name}", f"{d.phase or NONE}" + (f", took {d.duration}" if d.duration else ""))
    if x.app_pods is None:
        root.add("App pods", UNKNOWN)
    else:
        via = _counts(("+".join(p.via) for p in x.app_pods), by_count=False)
        apps = root.add("App pods", f"{len(x.app_pods)}" + (f" ({via})" if via else ""))
        _add_pods(apps, x.app_pods, wide)
    return root


def _add_runtime(root: Node, x: Inspection, wide: bool) -> None:
    rt = x.runtime
    runtime = root.add(
        f"CacheRuntime {rt.name}",
        _missing(rt.found) or (_condition_state(rt.ready, wide) if rt.ready else "no Ready condition yet"),
    )
    if rt.runtime_class:
        state = _missing(rt.class_found) or (
            f"fileSystemType {rt.file_system_type}" if rt.file_system_type else "found"
        )
        runtime.add(f"CacheRuntimeClass {rt.runtime_class}", state)
    for comp in x.components:
        if comp.disabled:
            runtime.add(f"{comp.component}", "disabled (the runtime runs none)")
            continue
        state = _missing(comp.found) or f"{comp.ready}/{comp.desired} ready"
        if comp.phase:
            state += f", phase {comp.phase}"
        branch = runtime.add(f"{comp.component}: {comp.kind} {comp.name}", state)
        if comp.pods is None or comp.pods:
            _add_pods(branch, comp.pods, wide)


def _add_configmap(root: Node, cm: ConfigMap, now: datetime, wide: bool) -> None:
    state = _missing(cm.found) or (
        f"{len(cm.keys)} key{'s' if len(cm.keys) != 1 else ''}, changed {age(cm.last_change, now)} ago"
        + (f", resourceVersion {cm.resource_version}" if wide else "")
    )
    branch = root.add(f"ConfigMap {cm.name}", state)
    for key, size in cm.keys:
        branch.add(key, human_size(size))


def _add_fusemounts(root: Node, fusemounts: Sequence[FuseMount] | None, wide: bool) -> None:
    mounts = root.add("FuseMounts", UNKNOWN if fusemounts is None else str(len(fusemounts)))
    for m in fusemounts or ():
        state = (
            f"{m.phase or NONE}, {m.mode or NONE}, refs {m.refs}, targets {len(m.targets)}"
            + (f", pod {m.pod}" if m.pod else "")
            + (f": {m.reason}" if m.reason else "")
        )
        branch = mounts.add(f"Node {m.node}: {m.name}", state)
        if wide:
            for target in m.targets:
                branch.add(target)


def human_size(size: int) -> str:
    """Bytes as ``ls -h`` would put them: ``512 B``, ``1.5 KiB``, ``3.0 MiB``."""
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if value < 1024 or unit == "GiB":
            break
    return f"{value:.1f} {unit}"
