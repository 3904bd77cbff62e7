"""Which datasets a pod asks for (SPEC §4): named in its annotations, or mounted through a Fluid PVC.

Cross-namespace references: a dataset is only ever read from the pod's own namespace (a pod must not
read another team's configuration by naming it). The syntax detected is ``namespace/name``: ``/`` can
never appear in an object name, so it is unambiguous. ``team-a/ds1`` in namespace ``team-a`` names the
pod's own namespace and is accepted as ``ds1``.

Everything a pod's annotations name is checked before anything is looked up, because each name may
cost the server a GET: at most ``MAX_DATASETS_PER_POD`` datasets (a setting), and each a Dataset name
(a DNS-1035 label of at most 42 characters, as the CRD demands). ``ds1.other`` is therefore refused as
a name no Dataset can have, not looked up. Names reached through PVCs are taken as they are: they come
from the watch cache, cost nothing, and a Dataset made under an older CRD still has its pods served.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from kubectl_fluid.api import datasetrefs, names
from kubectl_fluid.api.datasetrefs import is_dataset_pvc
from webhook.denials import quote, some
from webhook.errors import Denied
from webhook.lookup import Lookup
from webhook.routing import asks_for_injection

_NAMESPACE_SEPARATOR = "/"
# The default of ``fluid-webhook --max-datasets-per-pod``: far above what a workload uses, far below
# what would let one pod keep the server busy.
MAX_DATASETS_PER_POD: Final = 64
# How much of a denial lists the entries at fault.
_LISTING_BUDGET: Final = 400


@dataclass(frozen=True, slots=True)
class Collected:
    """Datasets from the annotations and from Fluid PVCs, each sorted and duplicate-free, and their
    union (what the plugins act on)."""

    from_annotation: list[str]
    from_pvcs: list[str]
    datasets: list[str]


def requested_datasets(pod: dict[str, Any]) -> list[str]:
    """The datasets the pod's annotations name (``kubectl_fluid.api.datasetrefs``)."""
    return datasetrefs.requested_datasets((pod.get("metadata") or {}).get("annotations"))


def dataset_claim_volumes(pod: dict[str, Any], namespace: str, lookup: Lookup) -> dict[str, str]:
    """Pod volume name -> claim name, for the volumes that mount a Fluid dataset's PVC. A claim not
    (yet) in the lookup is not a dataset as far as admission can tell; the kubelet waits for it."""
    found: dict[str, str] = {}
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        source = volume.get("persistentVolumeClaim")
        if not source:
            continue
        claim = source.get("claimName")
        if not claim:
            continue
        pvc = lookup.pvc(namespace, claim)
        if pvc is not None and is_dataset_pvc(pvc):
            found[volume.get("name", "")] = claim
    return found


def pvc_datasets(pod: dict[str, Any], namespace: str, lookup: Lookup) -> list[str]:
    """Datasets the pod mounts through Fluid PVCs. A Fluid PVC is named like its dataset
    (``names.dataset_pvc``), so the dataset is the claim's own name."""
    return sorted(set(dataset_claim_volumes(pod, namespace, lookup).values()))


def _local_names(entries: list[str], namespace: str) -> list[str]:
    """Strip a ``{namespace}/`` naming the pod's own namespace; refuse every other reference."""
    local: list[str] = []
    foreign: list[str] = []
    for entry in entries:
        if _NAMESPACE_SEPARATOR not in entry:
            local.append(entry)
            continue
        ref_namespace, _, name = entry.partition(_NAMESPACE_SEPARATOR)
        if ref_namespace == namespace and name and _NAMESPACE_SEPARATOR not in name:
            local.append(name)
        else:
            foreign.append(entry)
    if foreign:
        refs = some([quote(entry) for entry in foreign], ", ", _LISTING_BUDGET)
        many = len(foreign) > 1
        subject = f"dataset references {refs} point" if many else f"dataset reference {refs} points"
        raise Denied(
            f"{subject} to another namespace: datasets are read only from the pod's namespace "
            f'{quote(namespace)}; create the Dataset there and name it without a "namespace/" prefix'
        )
    return sorted(set(local))


def _check_count(count: int, limit: int) -> None:
    if count > limit:
        raise Denied(
            f"pod names {count} datasets; at most {limit} are allowed per pod "
            "(fluid-webhook --max-datasets-per-pod): split the workload, or ask the cluster's "
            "administrator to raise the limit"
        )


def _check_names(datasets: list[str]) -> None:
    """Refuse names no Dataset can have, grouped by the rule they break (one sentence per rule)."""
    broken: dict[str, list[str]] = {}
    for dataset in datasets:
        problem = names.dataset_name_error(dataset)
        if problem is not None:
            broken.setdefault(problem, []).append(quote(dataset))
    if broken:
        sentences = [
            f"dataset name{'s' if len(bad) > 1 else ''} {some(bad, ', ', _LISTING_BUDGET // len(broken))}: "
            f"{rule}"
            for rule, bad in broken.items()
        ]
        raise Denied("; ".join(sentences))


def collect(
    pod: dict[str, Any], namespace: str, lookup: Lookup, max_datasets: int = MAX_DATASETS_PER_POD
) -> Collected:
    """All datasets of the pod in ``namespace`` (the AdmissionRequest's, as a pod created by a
    controller has none in its object). Raises Denied for a reference to another namespace, for more
    than ``max_datasets`` datasets, and for an annotation entry that cannot be a Dataset name.

    A pod that carries no injection label asked for nothing (it reaches the webhook through the
    propagation entry, because it mounts a claim): its annotations are not read and it is never
    refused."""
    asked = asks_for_injection(pod)
    from_annotation = _local_names(requested_datasets(pod), namespace) if asked else []
    _check_count(len(from_annotation), max_datasets)
    _check_names(from_annotation)
    from_pvcs = pvc_datasets(pod, namespace, lookup)
    if not from_pvcs:
        datasets = from_annotation
    elif not from_annotation:
        datasets = from_pvcs
    else:
        datasets = sorted(set(from_annotation).union(from_pvcs))
    if asked:
        _check_count(len(datasets), max_datasets)
    return Collected(from_annotation, from_pvcs, datasets)
