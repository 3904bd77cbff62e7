"""What a pod (or a pod template) asks the webhook for, and what it got, read from its metadata and
volumes. Pure functions over the API's JSON.

The annotation and PVC rules are the webhook's own (``kubectl_fluid.api.datasetrefs``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubectl_fluid.api import names
from kubectl_fluid.api.datasetrefs import is_dataset_pvc, requested_datasets, split_datasets

__all__ = [
    "claim_names",
    "injected_datasets",
    "is_dataset_pvc",
    "join_datasets",
    "metadata",
    "requested_datasets",
    "split_datasets",
]


def join_datasets(datasets: Iterable[str]) -> str:
    return ",".join(sorted(set(datasets)))


def metadata(obj: Mapping[str, Any] | None) -> tuple[dict[str, str], dict[str, str]]:
    """(labels, annotations) of an object or template, empty when absent."""
    meta = (obj or {}).get("metadata") or {}
    return dict(meta.get("labels") or {}), dict(meta.get("annotations") or {})


def injected_datasets(pod: Mapping[str, Any]) -> list[str]:
    """Datasets whose runtime config the webhook mounted: the pod's ConfigMap volumes named
    ``fluid-runtime-config-{ds}``."""
    found = set()
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        configmap = (volume.get("configMap") or {}).get("name") or ""
        if configmap.startswith(names.RUNTIME_CONFIG_PREFIX) and volume.get("name") == configmap:
            found.add(configmap.removeprefix(names.RUNTIME_CONFIG_PREFIX))
    return sorted(found)


def claim_names(pod: Mapping[str, Any]) -> list[str]:
    """PVCs the pod mounts (the webhook also reads datasets from Fluid PVCs among them)."""
    claims = set()
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        if claim:
            claims.add(str(claim))
    return sorted(claims)
