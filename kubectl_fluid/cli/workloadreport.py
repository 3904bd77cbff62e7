"""``explain deploy/NAME``: a workload explained through its newest pods, or, when it has none, through
why its controller could not create them. Pure.

A workload whose pods the webhook refuses has no pod to explain (issue 28): the refusal is only in
the ``FailedCreate`` Events of whatever creates the pods (a Deployment's newest ReplicaSet, a
CronJob's newest Job, else the workload itself), in the API server's words, the webhook's denial
included.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_fluid.cli.diagnosis import Explanation, describe

# The API server's words when an admission webhook refused a create.
WEBHOOK_DENIAL = "denied the request"


@dataclass(frozen=True)
class WorkloadFacts:
    namespace: str
    workload: str  # "deploy/app", as typed kinds are printed (kubectl fluid inject's words)
    creator: str | None  # "replicaset/app-5d9c7": what creates the pods, when not the workload itself
    replicas: int | None  # wanted, where the kind says (None: a DaemonSet, a Job, a CronJob)
    pods: list[Explanation]  # the newest first
    total: int  # live pods it has, of which ``pods`` are the newest
    failed_create: str | None = None  # eventview.event_line() of the newest FailedCreate
    waiting: str | None = None  # why there is nothing to create pods yet (a CronJob before its run)


@dataclass(frozen=True)
class WorkloadExplanation:
    namespace: str
    workload: str
    creator: str | None
    pods: list[Explanation]
    total: int
    reasons: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "workload": self.workload,
            "creator": self.creator,
            "podCount": self.total,
            "pods": [p.to_json() for p in self.pods],
            "reasons": self.reasons,
        }


def _no_pods(f: WorkloadFacts) -> str:
    by = f.creator or f.workload
    if f.failed_create:
        said = f"{by} cannot create its pods: {f.failed_create}"
        if WEBHOOK_DENIAL in f.failed_create:
            return (
                f"{said} (the webhook refused them: do what it says, and the controller creates them on "
                "its next try)"
            )
        return said
    if f.waiting:
        return f.waiting
    if f.replicas == 0:
        return "it is scaled to 0 replicas, so there is no pod to explain"
    return f"{by} has no pods and no FailedCreate Event says why (they may not be created yet)"


def explain_workload(f: WorkloadFacts) -> WorkloadExplanation:
    return WorkloadExplanation(
        namespace=f.namespace,
        workload=f.workload,
        creator=f.creator,
        pods=list(f.pods),
        total=f.total,
        reasons=[] if f.pods else [_no_pods(f)],
    )


def describe_workload(e: WorkloadExplanation) -> str:
    """The workload's lines, then each of its explained pods as ``explain pod/NAME`` prints it."""
    lines = [f"Workload:   {e.namespace}/{e.workload}"]
    if e.creator:
        lines.append(f"Creator:    {e.creator}")
    if e.pods:
        shown = f" (the newest {len(e.pods)}, below)" if len(e.pods) < e.total else " (below)"
        lines.append(f"Pods:       {e.total}{shown}")
    else:
        lines.append("Pods:       <none>")
    if e.reasons:
        lines.append("Why not:")
        lines += [f"  - {r}" for r in e.reasons]
    text = "\n".join(lines) + "\n"
    return "\n".join([text, *(describe(p) for p in e.pods)])


def newest_first(pods: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Live pods (none being deleted), the newest first; ties by name, so the order is stable."""
    live = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
    by_name = sorted(live, key=lambda p: str((p.get("metadata") or {}).get("name")))
    return sorted(
        by_name, key=lambda p: str((p.get("metadata") or {}).get("creationTimestamp") or ""), reverse=True
    )
