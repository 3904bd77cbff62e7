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
    "claim_path",
    "injected_datasets",
    "is_dataset_pvc",
    "join_datasets",
    "metadata",
    "propagated",
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


# How a PVC reaches its data, as far as explain's advice goes (``claim_path()``).
CLIENTLESS = "clientless"  # a clientless dataset's: the CSI node refuses it; runtime config instead
FUSE = "fuse"  # through the CSI driver's FUSE: the serverful path (``inject --fuse``)


def claim_path(
    pvc: Mapping[str, Any],
    pv: Mapping[str, Any] | None,
    storage_class: Mapping[str, Any] | None,
    dataset_clientless: bool | None = None,
) -> str | None:
    """``CLIENTLESS``, ``FUSE`` or None (not the product's, or not known: its PV and StorageClass
    unread). The PV's CSI attributes decide (the controller marks a clientless dataset's); a PVC not
    bound yet is FUSE when its StorageClass's provisioner is the driver. A dataset's PVC whose PV
    cannot be read (cluster-scoped: a namespace's user seldom may) goes by ``dataset_clientless``,
    the dataset's mode as ``kubectl fluid datasets`` reads it, when known."""
    if pv is None and dataset_clientless is not None and is_dataset_pvc(pvc):
        return CLIENTLESS if dataset_clientless else FUSE
    from kubectl_fluid.api import drivervolumes

    csi = ((pv or {}).get("spec") or {}).get("csi") or {}
    attributes = csi.get("volumeAttributes") or {}
    if str(attributes.get(names.VOLUME_ATTR_CLIENTLESS, "")).strip().lower() == names.TRUE:
        return CLIENTLESS
    if drivervolumes.pv_driver(pv) == names.CSI_DRIVER:
        return FUSE
    if pv is None and drivervolumes.provisions(storage_class):
        return FUSE
    return None


def propagated(pod: Mapping[str, Any], claims: Iterable[str]) -> bool:
    """Whether every container's mount of a volume of ``claims`` has mount propagation (what the
    webhook's serverful group sets)."""
    wanted = set(claims)
    spec = pod.get("spec") or {}
    volumes = {
        str(v.get("name")): (v.get("persistentVolumeClaim") or {}).get("claimName")
        for v in spec.get("volumes") or ()
    }
    mounts = [
        m
        for c in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]
        for m in c.get("volumeMounts") or ()
        if volumes.get(str(m.get("name"))) in wanted
    ]
    return bool(mounts) and all(m.get("mountPropagation") in names.PROPAGATING for m in mounts)
