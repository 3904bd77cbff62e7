"""Which cache-node labels go on which node, as pure functions (SPEC §7 "Cache placement").

Upstream labels the nodes where a runtime's worker pods run (``pkg/utils/dataset/lifecycle/node.go:
SyncScheduleInfoToCacheNodes``, which its CacheRuntime engine calls on every Sync): the desired
nodes are those of the worker pods, the actual ones those carrying the runtime's label, and the
difference is labelled or unlabelled. A node it labels gets

- ``fluid.io/s-cache-{ns}-{name}: "true"`` (the runtime's label: which nodes this runtime labelled),
- ``fluid.io/s-{ns}-{name}: "true"`` (the common label, the key app pods are steered to),
- ``fluid.io/s-h-cache-t-{ns}-{name}: "0B"`` (the total capacity; upstream's CacheRuntime info has
  no tiered store, so it writes "0B" and no memory or disk label),
- ``fluid_exclusive: "{ns}_{name}"`` when the dataset's placement is Exclusive (the default),
- ``fluid.io/dataset-num`` one more (``"1"`` when absent).

Unlabelling takes those off (``fluid_exclusive`` only while it still names this dataset) and counts
``fluid.io/dataset-num`` one down, deleting it below 2. The count is a read-modify-write: the caller
sends each patch with the node's resourceVersion, so two runtimes labelling one node at once cannot
lose a count (the loser's patch conflicts and is worked out again).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_fluid.api import names

# Pods that hold no cache any more: a node keeps its labels only for a worker that may still run.
_ENDED = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class Change:
    """The labels to set (a value) or delete (None) on one node."""

    node: str
    labels: dict[str, str | None]

    def merge_patch(self, resource_version: str) -> dict[str, Any]:
        """A merge patch guarded by the node's resourceVersion (409 when the node changed since)."""
        return {"metadata": {"resourceVersion": resource_version, "labels": self.labels}}


def worker_nodes(pods: Iterable[Mapping[str, Any]]) -> set[str]:
    """The nodes the workers run on: pods bound to a node, not being deleted, not ended."""
    nodes = set()
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        if (pod.get("status") or {}).get("phase") in _ENDED:
            continue
        nodes.add(str(node))
    return nodes


def is_exclusive(pods: Iterable[Mapping[str, Any]]) -> bool:
    """The dataset's placement as its worker pods carry it (``fluid.io/dataset-placement``); Exclusive
    when no pod says otherwise, as upstream defaults it."""
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        placement = labels.get(names.LABEL_DATASET_PLACEMENT)
        if placement:
            return bool(placement == names.PLACEMENT_EXCLUSIVE)
    return True


def is_labelled(node_labels: Mapping[str, str], namespace: str, dataset: str) -> bool:
    return names.cache_runtime_node_label(namespace, dataset) in node_labels


def _count(node_labels: Mapping[str, str]) -> int:
    """The node's ``fluid.io/dataset-num``; a value that is not a count is taken as 0 (upstream fails
    the labelling on it, which would keep the node unlabelled for good)."""
    try:
        return max(0, int(node_labels.get(names.LABEL_DATASET_NUM, "0")))
    except ValueError:
        return 0


def label(
    node: str, node_labels: Mapping[str, str], namespace: str, dataset: str, exclusive: bool
) -> Change | None:
    """The change that marks ``node`` as caching the dataset; None when it is marked already."""
    if is_labelled(node_labels, namespace, dataset):
        return None
    labels: dict[str, str | None] = {
        names.cache_runtime_node_label(namespace, dataset): names.TRUE,
        names.cache_node_label(namespace, dataset): names.TRUE,
        names.cache_total_capacity_label(namespace, dataset): names.CACHE_TOTAL_CAPACITY,
        names.LABEL_DATASET_NUM: str(_count(node_labels) + 1),
    }
    if exclusive:
        labels[names.LABEL_EXCLUSIVE] = names.exclusive_label_value(namespace, dataset)
    return Change(node, labels)


def unlabel(node: str, node_labels: Mapping[str, str], namespace: str, dataset: str) -> Change | None:
    """The change that takes the dataset's marks off ``node``; None when it has none."""
    if not is_labelled(node_labels, namespace, dataset):
        return None
    keys = (
        names.cache_runtime_node_label(namespace, dataset),
        names.cache_node_label(namespace, dataset),
        names.cache_total_capacity_label(namespace, dataset),
    )
    labels: dict[str, str | None] = {key: None for key in keys if key in node_labels}
    if node_labels.get(names.LABEL_EXCLUSIVE) == names.exclusive_label_value(namespace, dataset):
        labels[names.LABEL_EXCLUSIVE] = None
    if names.LABEL_DATASET_NUM in node_labels:
        count = _count(node_labels)
        labels[names.LABEL_DATASET_NUM] = str(count - 1) if count >= 2 else None
    return Change(node, labels)


def plan(desired: Iterable[str], labelled: Iterable[str]) -> tuple[list[str], list[str]]:
    """Nodes to label and nodes to unlabel, each sorted (upstream's calculateNodeDifferences)."""
    want, have = set(desired), set(labelled)
    return sorted(want - have), sorted(have - want)
