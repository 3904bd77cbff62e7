"""Why a pod has (or has not) its datasets' runtime config: a pure judgement over facts read from the
cluster, following the webhook's own rules (SPEC §4) in the order it applies them.

The webhook only ever acts when a pod is *created*: everything after that (labels added, datasets
created, the webhook installed) changes nothing for an existing pod, which is why most advice ends
in "recreate the pod".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubectl_fluid.api import names


@dataclass(frozen=True)
class Facts:
    namespace: str
    name: str
    labels: Mapping[str, str]
    requested: list[str]  # from the annotations
    from_pvcs: list[str]  # Fluid PVCs the pod mounts
    injected: list[str]  # runtime-config volumes present
    owner: str | None = None  # "deploy/app": what to pass to ``kubectl fluid inject``
    webhook_problem: str | None = None  # why pods here would not reach the webhook, if known
    dataset_problems: Mapping[str, str] = field(default_factory=dict)  # now, for requested datasets


@dataclass(frozen=True)
class Explanation:
    namespace: str
    name: str
    injected: list[str]
    requested: list[str]
    from_pvcs: list[str]
    owner: str | None
    reasons: list[str]  # why it is not injected (empty when it is)
    notes: list[str]

    @property
    def is_injected(self) -> bool:
        return bool(self.injected)

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "injected": self.is_injected,
            "injectedDatasets": self.injected,
            "requestedDatasets": self.requested,
            "pvcDatasets": self.from_pvcs,
            "owner": self.owner,
            "reasons": self.reasons,
            "notes": self.notes,
        }


def _recreate(f: Facts) -> str:
    if f.owner:
        return f"delete it and {f.owner} recreates it"
    return "recreate it"


def _inject_hint(f: Facts) -> str:
    datasets = ",".join(f.requested) or "DATASET"
    if f.owner:
        return f"run kubectl fluid inject {f.owner} --dataset {datasets} -n {f.namespace}"
    return (
        f"recreate it with the label {names.LABEL_INJECT}={names.TRUE} and the annotation "
        f"{names.ANNOTATION_DATASET}={datasets}"
    )


def _why_not(f: Facts, wanted: list[str]) -> str:
    """The first rule of the webhook the pod failed, and what to do about it."""
    label = f.labels.get(names.LABEL_INJECT)
    if label is None:
        if f.labels.get(names.LABEL_SERVERLESS_INJECT) == names.TRUE:
            return (
                f"it asks for serverless injection ({names.LABEL_SERVERLESS_INJECT}), which does not mount "
                f"runtime config; use {names.LABEL_INJECT}={names.TRUE} for that"
            )
        return (
            f"it has no label {names.LABEL_INJECT}={names.TRUE}, so the webhook never saw it; "
            + _inject_hint(f)
        )
    if label != names.TRUE:
        return (
            f'its label {names.LABEL_INJECT} is "{label}", not "{names.TRUE}": the webhook matches the exact '
            f"value; {_inject_hint(f)}"
        )
    if not wanted:
        return (
            f"it names no dataset (annotation {names.ANNOTATION_DATASET}), so the webhook admitted it "
            f"unchanged with a warning; {_inject_hint(f)}"
        )
    return _why_not_admitted(f)


def _why_not_admitted(f: Facts) -> str:
    """The pod asked properly; so the webhook skipped it, or never had the chance."""
    if f.labels.get(names.LABEL_INJECT_DONE) == names.TRUE:
        # This webhook checks and injects such a pod; one from before this release left it alone.
        via = f" (kubectl fluid inject {f.owner} does)" if f.owner else ""
        return (
            f"it already carried {names.LABEL_INJECT_DONE}={names.TRUE} when it was created, which a "
            f"webhook of an earlier release took as done and left alone (this one injects it); remove "
            f"that label from its template{via} and {_recreate(f)}"
        )
    if f.webhook_problem:
        return f"{f.webhook_problem}; then {_recreate(f)}"
    return (
        "it was created before the webhook served it (or before it had the label and annotation); "
        + _recreate(f)
    )


def diagnose(f: Facts) -> Explanation:
    wanted = sorted(set(f.requested) | set(f.from_pvcs))
    reasons: list[str] = []
    notes: list[str] = []
    if f.injected:
        for ds in sorted(set(wanted) - set(f.injected)):
            notes.append(
                f'"{ds}" is named now but was not injected (named after the pod was created); {_recreate(f)}'
            )
        for ds in sorted(set(f.injected) - set(wanted)):
            notes.append(
                f'"{ds}" was injected but is no longer named; the pod keeps it until it is recreated'
            )
    else:
        reasons.append(_why_not(f, wanted))
        notes += [
            f"recreated now it would be refused: {f.dataset_problems[ds]}"
            for ds in wanted
            if ds in f.dataset_problems
        ]
    return Explanation(
        namespace=f.namespace,
        name=f.name,
        injected=list(f.injected),
        requested=list(f.requested),
        from_pvcs=list(f.from_pvcs),
        owner=f.owner,
        reasons=reasons,
        notes=notes,
    )


def describe(e: Explanation) -> str:
    """``kubectl describe``-like text: one ``Key:  value`` per line, lists indented below."""
    none = "<none>"
    lines = [
        f"Pod:        {e.namespace}/{e.name}",
        f"Injected:   {'yes: ' + ', '.join(e.injected) if e.injected else 'no'}",
        f"Requested:  {', '.join(e.requested) or none} (annotation {names.ANNOTATION_DATASET})",
    ]
    if e.from_pvcs:
        lines.append(f"From PVCs:  {', '.join(e.from_pvcs)}")
    lines.append(f"Owner:      {e.owner or none}")
    if e.reasons:
        lines.append("Why not:")
        lines += [f"  - {r}" for r in e.reasons]
    if e.notes:
        lines.append("Notes:")
        lines += [f"  - {n}" for n in e.notes]
    return "\n".join(lines) + "\n"
