"""A CacheRuntime's per-component status from its workloads, by upstream's rules (``status.go``):

- from a StatefulSet: desired = ``spec.replicas``, ready, current and available from its status,
  unavailable = max(current - available, 0); from the client DaemonSet: desired / current scheduled,
  ready, available and unavailable numbers;
- master: ``Ready`` when ready == desired (0 of 0 too), else ``NotReady``;
- worker: ``Ready`` when desired is 0 or every replica is ready, ``PartialReady`` when at least one is,
  else ``NotReady``;
- client: ``Ready`` when desired > 0 and all are ready, ``PartialReady`` when some are, else ``NotReady``;
- a component that does not run is ``{phase: ""}``.

Counts of zero are left out, as upstream's ``omitempty`` leaves them out. Workload status is read
from the watch cache; a workload not seen yet counts nothing ready.
"""

from __future__ import annotations

from typing import Any

from kubectl_fluid.api import names

# The workload status fields the status is made of: the controller reacts to changes of these only.
STATEFULSET_STATUS = ("readyReplicas", "currentReplicas", "availableReplicas")
DAEMONSET_STATUS = (
    "desiredNumberScheduled",
    "numberReady",
    "currentNumberScheduled",
    "numberAvailable",
    "numberUnavailable",
)


def component_status(
    component: names.Component, workload: dict[str, Any] | None, desired: int
) -> dict[str, Any]:
    """``desired`` is the replicas the controller wants, used while the workload is not seen yet."""
    status = (workload or {}).get("status") or {}
    if component == "client":
        counts = {
            "desiredReplicas": status.get("desiredNumberScheduled", 0),
            "readyReplicas": status.get("numberReady", 0),
            "currentReplicas": status.get("currentNumberScheduled", 0),
            "availableReplicas": status.get("numberAvailable", 0),
            "unavailableReplicas": status.get("numberUnavailable", 0),
        }
    else:
        spec = (workload or {}).get("spec") or {}
        current, available = status.get("currentReplicas", 0), status.get("availableReplicas", 0)
        counts = {
            "desiredReplicas": spec.get("replicas", desired),
            "readyReplicas": status.get("readyReplicas", 0),
            "currentReplicas": current,
            "availableReplicas": available,
            "unavailableReplicas": max(current - available, 0),
        }
    phase = _phase(component, counts["readyReplicas"], counts["desiredReplicas"])
    return {"phase": phase, **{k: v for k, v in counts.items() if v}}


def not_running() -> dict[str, Any]:
    return {"phase": ""}


def _phase(component: names.Component, ready: int, desired: int) -> str:
    if component == "master":
        return "Ready" if ready == desired else "NotReady"
    if component == "worker" and desired in (0, ready):
        return "Ready"
    if component == "client" and desired > 0 and ready >= desired:
        return "Ready"
    return "PartialReady" if ready > 0 else "NotReady"


def components_waiting(components: dict[str, dict[str, Any]]) -> str | None:
    """Why a runtime whose children are in place is not Ready yet, or None when it is: its master
    must have every replica ready and its workers at least one (``PartialReady`` serves, as upstream's
    phase says), each by the phases above. The client is not waited for: its DaemonSet runs only on
    the nodes of pods that mount the dataset, so it may rightly have no pod at all."""
    waiting = []
    for component in ("master", "worker"):
        status = components.get(component) or {}
        phase = status.get("phase", "")
        if phase in ("", "Ready") or (component == "worker" and phase == "PartialReady"):
            continue
        ready, desired = status.get("readyReplicas", 0), status.get("desiredReplicas", 0)
        waiting.append(f"{component} {ready}/{desired} ready")
    return ", ".join(waiting) if waiting else None


def watched_state(obj: dict[str, Any]) -> tuple[Any, ...] | None:
    """What of a child's change the controller reacts to: a new generation (its spec changed, maybe
    away from what the controller wants) and, for workloads, the status fields the runtime's status
    is made of. Every pod that starts moves a workload's status through many other fields
    (observedGeneration, updateRevision, conditions…); skipping those keeps a thousand starting pods
    from becoming thousands of reconciles. None for objects without a generation (react to each)."""
    meta = obj.get("metadata") or {}
    if "generation" not in meta:
        return None
    fields = {"StatefulSet": STATEFULSET_STATUS, "DaemonSet": DAEMONSET_STATUS}.get(obj.get("kind", ""), ())
    status = obj.get("status") or {}
    return (meta["generation"], *(status.get(f, 0) for f in fields))
