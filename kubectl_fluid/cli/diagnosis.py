"""Why a pod has (or has not) its datasets' runtime config: a pure judgement over facts read from the
cluster, following the webhook's own rules (SPEC §4) in the order it applies them.

The webhook only ever acts when a pod is *created*: everything after that (labels added, datasets
created, the webhook installed) changes nothing for an existing pod, which is why most advice ends
in "recreate the pod". Before any rule, the product's own pods are said to be what they are (a
cache component, fluid-system's): injection is not for them. A pod that mounts a FUSE PVC is on
the serverful path (``inject --fuse``), and one that mounts a clientless dataset's PVC is stuck
until that PVC goes, whatever it asked for; kubelet's words for a stuck mount are shown as read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
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
    role: str | None = None  # what the pod is when the product made it (podroles.py)
    fuse_claims: list[str] = field(default_factory=list)  # PVCs it mounts through the CSI driver's FUSE
    fuse_propagated: bool = False  # every mount of those has mount propagation (serverful group's)
    clientless_claims: list[str] = field(default_factory=list)  # clientless datasets' PVCs it mounts
    mount_failure: str | None = None  # kubelet's newest FailedMount/FailedAttachVolume, while pending


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
    role: str | None = None
    fuse_claims: list[str] = field(default_factory=list)
    fuse_injected: bool = False  # on the FUSE path, with mount propagation
    mount_failure: str | None = None

    @property
    def is_injected(self) -> bool:
        return bool(self.injected) or self.fuse_injected

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "injected": self.is_injected,
            "injectedDatasets": self.injected,
            "requestedDatasets": self.requested,
            "pvcDatasets": self.from_pvcs,
            "owner": self.owner,
            "role": self.role,
            "fusePvcs": self.fuse_claims,
            "fuseInjected": self.fuse_injected,
            "mountFailure": self.mount_failure,
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


def _fuse_hint(f: Facts) -> str:
    if f.owner:
        return f"run kubectl fluid inject {f.owner} --fuse -n {f.namespace}"
    return f"recreate it with the label {names.LABEL_FUSE_SERVERFUL_INJECT}={names.TRUE}"


def _fuse_served(f: Facts) -> bool:
    """On the FUSE path and admitted as such: labelled for it, its FUSE mounts propagated."""
    return (
        bool(f.fuse_claims)
        and f.labels.get(names.LABEL_FUSE_SERVERFUL_INJECT) == names.TRUE
        and f.fuse_propagated
    )


def _why_not_fuse(f: Facts) -> str:
    """A pod that mounts FUSE PVCs and asks for no runtime config: the serverful path is its own."""
    claims = ", ".join(f.fuse_claims)
    if f.labels.get(names.LABEL_FUSE_SERVERFUL_INJECT) == names.TRUE:
        return (
            f"it has the label {names.LABEL_FUSE_SERVERFUL_INJECT}={names.TRUE} but its mounts of {claims} "
            f"have no mount propagation: it was created before the webhook served it; {_recreate(f)}"
        )
    return (
        f"it mounts the FUSE PVC {claims} ({names.CSI_DRIVER}): its data comes through the CSI driver's "
        "FUSE, not runtime config, and new pods need mount propagation to see a FUSE mount the node "
        f"re-makes; {_fuse_hint(f)}"
    )


def _clientless(f: Facts) -> str:
    claims = ", ".join(f.clientless_claims)
    where = f"its template ({f.owner})" if f.owner else "the pod"
    hint = _inject_hint(replace(f, requested=sorted({*f.requested, *f.clientless_claims})))
    return (
        f"it mounts the PVC {claims} of a clientless dataset, which the CSI driver refuses to mount (the "
        f"runtime has no FUSE client), so the pod cannot start; remove the PVC from {where} and take "
        f"the runtime config instead: {hint}"
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
        if f.fuse_claims and not f.requested:
            return _why_not_fuse(f)
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
    fuse_injected = _fuse_served(f) and not f.role
    if f.role:
        pass  # the product's own pod: what it is says it all
    elif fuse_injected and not f.injected:
        pass  # the FUSE path asks for no dataset's runtime config
    elif f.injected:
        if f.clientless_claims:
            notes.append(_clientless(f))
        for ds in sorted(set(wanted) - set(f.injected)):
            notes.append(
                f'"{ds}" is named now but was not injected (named after the pod was created); {_recreate(f)}'
            )
        for ds in sorted(set(f.injected) - set(wanted)):
            notes.append(
                f'"{ds}" was injected but is no longer named; the pod keeps it until it is recreated'
            )
    else:
        if f.clientless_claims:
            reasons.append(_clientless(f))
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
        role=f.role,
        fuse_claims=list(f.fuse_claims),
        fuse_injected=fuse_injected,
        mount_failure=f.mount_failure,
    )


def describe(e: Explanation) -> str:
    """``kubectl describe``-like text: one ``Key:  value`` per line, lists indented below."""
    none = "<none>"
    if e.role:
        injected = "no (not applicable)"
    elif e.injected:
        injected = "yes: " + ", ".join(e.injected)
    elif e.fuse_injected:
        injected = f"yes, the FUSE path: mount propagation on {', '.join(e.fuse_claims)}"
    else:
        injected = "no"
    lines = [f"Pod:        {e.namespace}/{e.name}"]
    if e.role:
        lines.append(f"What:       {e.role}")
    lines += [
        f"Injected:   {injected}",
        f"Requested:  {', '.join(e.requested) or none} (annotation {names.ANNOTATION_DATASET})",
    ]
    if e.from_pvcs:
        lines.append(f"From PVCs:  {', '.join(e.from_pvcs)}")
    if e.fuse_claims:
        lines.append(f"FUSE PVCs:  {', '.join(e.fuse_claims)}")
    # A product pod's owner is the product's: named, never offered to ``inject``.
    owned = " (the product's, not to inject)" if e.role and e.owner else ""
    lines.append(f"Owner:      {e.owner or none}{owned}")
    if e.mount_failure:
        lines.append(f"Mounting:   {e.mount_failure}")
    if e.reasons:
        lines.append("Why not:")
        lines += [f"  - {r}" for r in e.reasons]
    if e.notes:
        lines.append("Notes:")
        lines += [f"  - {n}" for n in e.notes]
    return "\n".join(lines) + "\n"
