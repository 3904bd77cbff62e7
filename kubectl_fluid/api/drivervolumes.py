"""Which claims the CSI driver (``names.CSI_DRIVER``) serves: a Dataset's PVC, a claim bound to a PV of
the driver, and a claim of a StorageClass the driver provisions. The webhook asks it at admission (to
give those mounts HostToContainer propagation), the plugin when ``inject --fuse`` checks a workload's
claims; one rule, so they agree. Pure: the callers look up the claim's StorageClass and PV."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_fluid.api import names
from kubectl_fluid.api.datasetrefs import is_dataset_pvc


def pv_driver(pv: Mapping[str, Any] | None) -> str | None:
    """The CSI driver of a PersistentVolume; None for another kind of volume or no PV."""
    csi = ((pv or {}).get("spec") or {}).get("csi") or {}
    driver = csi.get("driver")
    return driver if isinstance(driver, str) else None


def provisions(storage_class: Mapping[str, Any] | None) -> bool:
    """Whether the StorageClass's volumes are made by the driver."""
    return (storage_class or {}).get("provisioner") == names.CSI_DRIVER


def claim_class(pvc: Mapping[str, Any]) -> str | None:
    """The StorageClass a claim names; None for none or ``""`` (a static volume's)."""
    name = (pvc.get("spec") or {}).get("storageClassName")
    return name or None


def claim_volume(pvc: Mapping[str, Any]) -> str | None:
    """The PV a claim is bound (or pre-bound) to."""
    name = (pvc.get("spec") or {}).get("volumeName")
    return name or None


def serves_claim(
    pvc: Mapping[str, Any], storage_class: Mapping[str, Any] | None, pv: Mapping[str, Any] | None
) -> bool:
    """Whether the driver serves ``pvc``. ``storage_class`` and ``pv`` are the objects the claim names
    (``claim_class``, ``claim_volume``), None where it names none or they are unknown. A bound claim
    is judged by its PV, whatever its class says: the PV is what kubelet mounts."""
    if is_dataset_pvc(pvc):
        return True
    if pv is not None:
        return pv_driver(pv) == names.CSI_DRIVER
    return provisions(storage_class)
