"""The edit ``inject`` makes to a pod template, as a plan of label/annotation changes and the JSON
merge patch that applies it. Pure: computed from the template's current metadata.

Decisions (SPEC §6 says "adds the label and annotation"):
- Injecting adds datasets to those already named (sorted union); a dataset named twice is named once.
- Fluid's alias ``fluid.io/datasets`` is folded into ``fluid.io/dataset`` and removed: the webhook reads
  both, so leaving it would keep datasets that ``--remove`` was asked to take away.
- A template carrying ``done.sidecar.fluid.io/inject`` would have every pod skipped by the webhook
  (it marks pods already injected), so injecting removes it.
- ``--remove`` without datasets removes the label and both annotations; with datasets, only those,
  and the label too when none is left.
- ``--fuse`` adds ``fuse.serverful.fluid.io/inject`` (the webhook then sets HostToContainer on mounts of
  Fluid PVCs) and, as injecting does, drops the done label; ``--remove --fuse`` removes that label
  only. Neither touches the datasets named.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kubectl_fluid.api import names
from kubectl_fluid.cli.podview import join_datasets, requested_datasets

Section = Literal["label", "annotation"]


@dataclass(frozen=True)
class Change:
    section: Section
    key: str
    old: str | None
    new: str | None

    def describe(self) -> str:
        if self.old is None:
            return f"+ {self.section} {self.key}={self.new}"
        if self.new is None:
            return f"- {self.section} {self.key} (was {self.old})"
        return f"~ {self.section} {self.key}={self.new} (was {self.old})"


@dataclass(frozen=True)
class Plan:
    changes: tuple[Change, ...]
    before: tuple[str, ...]  # datasets the template named
    after: tuple[str, ...]  # datasets it will name

    def metadata_patch(self) -> dict[str, Any]:
        """``{"labels": {...}, "annotations": {...}}`` with ``None`` (JSON null) deleting a key."""
        patch: dict[str, Any] = {}
        for change in self.changes:
            patch.setdefault(f"{change.section}s", {})[change.key] = change.new
        return patch

    def patch(self, template_path: Sequence[str], resource_version: str | None = None) -> dict[str, Any]:
        """The merge patch for the whole object. With ``resource_version`` the server refuses it
        (409) if the object changed since it was read, so a concurrent edit is never overwritten."""
        body: dict[str, Any] = {"metadata": self.metadata_patch()}
        for key in reversed(template_path):
            body = {key: body}
        if resource_version:
            body["metadata"] = {"resourceVersion": resource_version}
        return body


def _plan(
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    *,
    want_labels: dict[str, str | None],
    want_annotations: dict[str, str | None],
    before: Iterable[str],
    after: Iterable[str],
) -> Plan:
    sections: tuple[tuple[Section, Mapping[str, str], dict[str, str | None]], ...] = (
        ("label", labels, want_labels),
        ("annotation", annotations, want_annotations),
    )
    changes = [
        Change(section, key, current.get(key), value)
        for section, current, wanted in sections
        for key, value in wanted.items()
        if current.get(key) != value
    ]
    return Plan(tuple(changes), tuple(before), tuple(after))


def plan_inject(labels: Mapping[str, str], annotations: Mapping[str, str], datasets: Iterable[str]) -> Plan:
    before = requested_datasets(annotations)
    after = sorted(set(before).union(datasets))
    want_labels: dict[str, str | None] = {names.LABEL_INJECT: names.TRUE}
    if names.LABEL_INJECT_DONE in labels:
        want_labels[names.LABEL_INJECT_DONE] = None
    want_annotations: dict[str, str | None] = {names.ANNOTATION_DATASET: join_datasets(after)}
    if names.ANNOTATION_DATASETS in annotations:
        want_annotations[names.ANNOTATION_DATASETS] = None
    # An annotation naming the same datasets in another spelling ("b, a") is left as written.
    if _same_datasets(annotations, after):
        want_annotations[names.ANNOTATION_DATASET] = annotations[names.ANNOTATION_DATASET]
    return _plan(
        labels,
        annotations,
        want_labels=want_labels,
        want_annotations=want_annotations,
        before=before,
        after=after,
    )


def plan_remove(
    labels: Mapping[str, str], annotations: Mapping[str, str], datasets: Iterable[str] | None
) -> Plan:
    before = requested_datasets(annotations)
    after = [] if datasets is None else sorted(set(before) - set(datasets))
    remove_all = not after
    want_labels: dict[str, str | None] = {names.LABEL_INJECT: None} if remove_all else {}
    want_annotations: dict[str, str | None] = {
        names.ANNOTATION_DATASET: None if remove_all else join_datasets(after),
        names.ANNOTATION_DATASETS: None,
    }
    if not remove_all and _same_datasets(annotations, after):
        want_annotations[names.ANNOTATION_DATASET] = annotations[names.ANNOTATION_DATASET]
    return _plan(
        labels,
        annotations,
        want_labels=want_labels,
        want_annotations=want_annotations,
        before=before,
        after=after,
    )


def plan_fuse(labels: Mapping[str, str], annotations: Mapping[str, str]) -> Plan:
    want_labels: dict[str, str | None] = {names.LABEL_FUSE_SERVERFUL_INJECT: names.TRUE}
    if names.LABEL_INJECT_DONE in labels:
        want_labels[names.LABEL_INJECT_DONE] = None
    return _unchanged_datasets(labels, annotations, want_labels)


def plan_fuse_remove(labels: Mapping[str, str], annotations: Mapping[str, str]) -> Plan:
    return _unchanged_datasets(labels, annotations, {names.LABEL_FUSE_SERVERFUL_INJECT: None})


def _unchanged_datasets(
    labels: Mapping[str, str], annotations: Mapping[str, str], want_labels: dict[str, str | None]
) -> Plan:
    named = requested_datasets(annotations)
    return _plan(labels, annotations, want_labels=want_labels, want_annotations={}, before=named, after=named)


def _same_datasets(annotations: Mapping[str, str], datasets: Sequence[str]) -> bool:
    """The canonical annotation already names exactly ``datasets`` (perhaps spelled differently)."""
    current = annotations.get(names.ANNOTATION_DATASET)
    return current is not None and requested_datasets({names.ANNOTATION_DATASET: current}) == list(datasets)


def template_of(obj: Mapping[str, Any], template_path: Sequence[str]) -> dict[str, Any]:
    """The pod template inside a workload (``{}`` where the object has none yet)."""
    node: Any = obj
    for key in template_path:
        node = (node or {}).get(key) if isinstance(node, Mapping) else None
    return dict(node or {})


def merge_patch(target: Any, patch: Any) -> Any:
    """``patch`` applied to ``target`` as the API server applies application/merge-patch+json (RFC
    7386): what a client dry run prints as the object."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
