"""What a pod (or a pod template) asks the webhook for, and what it got, read from its metadata and
volumes. Pure functions over the API's JSON.

The annotation rule mirrors the webhook's (``webhook/collect.py``: comma-separated, trimmed, empty
entries dropped, de-duplicated, sorted, both spellings read); the plugin may not import server code,
so it is restated here in its few lines.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubectl_fluid.api import names

DATASET_ANNOTATIONS = (names.ANNOTATION_DATASET, names.ANNOTATION_DATASETS)


def split_datasets(value: str | None) -> list[str]:
    if not value:
        return []
    return sorted({part.strip() for part in value.split(",")} - {""})


def join_datasets(datasets: Iterable[str]) -> str:
    return ",".join(sorted(set(datasets)))


def requested_datasets(annotations: Mapping[str, str] | None) -> list[str]:
    """Datasets named by ``fluid.io/dataset`` and its alias ``fluid.io/datasets`` together."""
    found: set[str] = set()
    for key in DATASET_ANNOTATIONS:
        found.update(split_datasets((annotations or {}).get(key)))
    return sorted(found)


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


def is_dataset_pvc(pvc: Mapping[str, Any]) -> bool:
    labels, _ = metadata(pvc)
    return names.LABEL_DATASET_ID in labels or any(names.is_dataset_pvc_label(k) for k in labels)
