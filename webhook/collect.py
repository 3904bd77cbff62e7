"""Which datasets a pod asks for (SPEC §4): named in its annotations, or mounted through a Fluid PVC.

Cross-namespace references: a dataset is only ever read from the pod's own namespace (a pod must not
read another team's configuration by naming it). The syntax detected is ``namespace/name``: ``/`` can
never appear in an object name, so it is unambiguous. ``name.namespace`` is *not* treated as a
reference, because ``.`` is legal inside a Dataset name; such an entry is looked up as a plain name
and, if there is no such dataset, refused as missing. ``team-a/ds1`` in namespace ``team-a`` names the
pod's own namespace and is accepted as ``ds1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubectl_fluid.api import datasetrefs
from kubectl_fluid.api.datasetrefs import is_dataset_pvc
from webhook.errors import Denied
from webhook.lookup import Lookup

_NAMESPACE_SEPARATOR = "/"


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
        refs = ", ".join(f'"{entry}"' for entry in foreign)
        many = len(foreign) > 1
        subject = f"dataset references {refs} point" if many else f"dataset reference {refs} points"
        raise Denied(
            f"{subject} to another namespace: datasets are read only from the pod's namespace "
            f'"{namespace}"; create the Dataset there and name it without a "namespace/" prefix'
        )
    return sorted(set(local))


def collect(pod: dict[str, Any], namespace: str, lookup: Lookup) -> Collected:
    """All datasets of the pod in ``namespace`` (the AdmissionRequest's, as a pod created by a
    controller has none in its object). Raises Denied for a reference to another namespace."""
    from_annotation = _local_names(requested_datasets(pod), namespace)
    from_pvcs = pvc_datasets(pod, namespace, lookup)
    if not from_pvcs:
        datasets = from_annotation
    elif not from_annotation:
        datasets = from_pvcs
    else:
        datasets = sorted(set(from_annotation).union(from_pvcs))
    return Collected(from_annotation, from_pvcs, datasets)
