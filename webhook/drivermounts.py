"""Which of a pod's volumes the CSI driver serves (``kubectl_fluid.api.drivervolumes``): a claim of a
Dataset, of the driver's StorageClass or bound to its PV; a generic ephemeral volume of the driver's
StorageClass (its claim does not exist yet at admission); an inline volume of the driver. Their
mounts get HostToContainer propagation (``plugins/mount_propagation.py``)."""

from __future__ import annotations

from typing import Any

from kubectl_fluid.api import drivervolumes, names
from webhook.lookup import Lookup


def _claim_served(namespace: str, claim: str, lookup: Lookup) -> bool:
    pvc = lookup.pvc(namespace, claim)
    if pvc is None:
        return False  # not (yet) known: kubelet waits for the claim; see webhook/cache.py
    class_name = drivervolumes.claim_class(pvc)
    volume = drivervolumes.claim_volume(pvc)
    return drivervolumes.serves_claim(
        pvc,
        lookup.storage_class(class_name) if class_name else None,
        lookup.pv(volume) if volume else None,
    )


def _ephemeral_served(source: dict[str, Any], lookup: Lookup) -> bool:
    spec = ((source.get("volumeClaimTemplate") or {}).get("spec")) or {}
    class_name = spec.get("storageClassName")
    return (
        isinstance(class_name, str)
        and bool(class_name)
        and drivervolumes.provisions(lookup.storage_class(class_name))
    )


def _served(volume: dict[str, Any], namespace: str, lookup: Lookup) -> bool:
    claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
    if claim:
        return _claim_served(namespace, claim, lookup)
    if volume.get("ephemeral"):
        return _ephemeral_served(volume["ephemeral"], lookup)
    return bool((volume.get("csi") or {}).get("driver") == names.CSI_DRIVER)


def driver_volumes(pod: dict[str, Any], namespace: str, lookup: Lookup) -> set[str]:
    """The names of the pod's volumes the driver serves."""
    return {
        volume.get("name", "")
        for volume in (pod.get("spec") or {}).get("volumes") or ()
        if _served(volume, namespace, lookup)
    }
