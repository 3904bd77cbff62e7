"""One admission, start to end, as a pure function: route the pod, collect its datasets, run the
group's plugins on a working copy, answer with a JSON patch, warnings or a refusal.

Fail closed (SPEC §4): a plugin's ``Denied`` refuses the pod and the working copy is dropped, so a pod
that asked for injection is never admitted half-mutated. Exceptions other than ``Denied`` propagate:
the server turns them into an error, which the API server treats as a refusal (failurePolicy: Fail).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from kubectl_fluid.api import names
from webhook.collect import MAX_DATASETS_PER_POD, Collected, collect
from webhook.drivermounts import driver_volumes
from webhook.errors import Denied
from webhook.lookup import Lookup
from webhook.patch import json_patch
from webhook.plugins.base import Context
from webhook.podedit import working_copy
from webhook.profile import Profile
from webhook.routing import CLIENTLESS, SERVERFUL, Group, route

Result = Literal["mutated", "unchanged", "denied"]

NO_DATASET_WARNING = (
    f"pod asks for injection ({names.LABEL_INJECT}={names.TRUE}) but names no dataset: "
    f"set annotation {names.ANNOTATION_DATASET}"
)
NO_FLUID_PVC_WARNING = (
    f"pod asks for mount propagation ({names.LABEL_FUSE_SERVERFUL_INJECT}={names.TRUE}) but mounts no "
    f"volume of {names.CSI_DRIVER} the webhook knows of (a Dataset's PVC, a claim of its StorageClass "
    "or PV): it is admitted unchanged"
)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What to answer. ``patch`` is None when nothing changes (never an empty list); ``denied`` is the
    refusal message; ``plugins_run`` lists the plugins invoked, the refusing one included;
    ``mutated`` is the pod the patch produces (for checks and logs; do not edit it)."""

    group: Group
    patch: list[dict[str, Any]] | None = None
    warnings: list[str] = field(default_factory=list)
    denied: str | None = None
    plugins_run: list[str] = field(default_factory=list)
    datasets: list[str] = field(default_factory=list)
    mutated: dict[str, Any] | None = None

    @property
    def result(self) -> Result:
        if self.denied is not None:
            return "denied"
        return "mutated" if self.patch else "unchanged"


def asks_for_propagation(pod: dict[str, Any]) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return labels.get(names.LABEL_FUSE_SERVERFUL_INJECT) == names.TRUE


def admit(
    pod: dict[str, Any],
    namespace: str,
    lookup: Lookup,
    profile: Profile,
    *,
    max_datasets: int = MAX_DATASETS_PER_POD,
    collected: Collected | None = None,
) -> Outcome:
    """Decide one Pod CREATE in ``namespace`` (the request's). ``pod`` is not changed. ``collected``:
    what ``collect`` already found for this pod and namespace, when the caller has it (the server
    collects first to know what to fetch), so it is not worked out twice."""
    group = route(pod)
    # No shortcut for the done label (issue 27, item 9, over SPEC §4's "left alone"): on reinvocation a
    # later webhook may have added a container that lacks the config, and a pod may arrive carrying
    # the label it set itself. Every pod is checked and given what it lacks; the plugins leave what is
    # already right as it is, so our own output yields no patch.
    if collected is None:
        try:
            collected = collect(pod, namespace, lookup, max_datasets)
        except Denied as refusal:
            return Outcome(group, denied=refusal.message)
    datasets = collected.datasets
    if group == CLIENTLESS and not datasets:
        return Outcome(group, warnings=[NO_DATASET_WARNING])
    warnings = []
    if group == SERVERFUL and asks_for_propagation(pod) and not driver_volumes(pod, namespace, lookup):
        warnings.append(NO_FLUID_PVC_WARNING)

    plugins = profile.plugins(group, with_dataset=bool(datasets))
    if not plugins:
        return Outcome(group, warnings=warnings, datasets=datasets)
    ctx = Context(namespace, datasets, lookup, warnings)
    work = working_copy(pod)
    run: list[str] = []
    for plugin in plugins:
        run.append(plugin.name)
        try:
            plugin.mutate(work, ctx)
        except Denied as refusal:
            return Outcome(
                group, warnings=ctx.warnings, denied=refusal.message, plugins_run=run, datasets=datasets
            )
    ops = json_patch(pod, work)
    return Outcome(
        group,
        patch=ops or None,
        warnings=ctx.warnings,
        plugins_run=run,
        datasets=datasets,
        mutated=work if ops else None,
    )
