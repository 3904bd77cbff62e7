"""The dataset's static PV and its PVC (SPEC §2, §5); both exist whether or not there is a client.

Decisions where SPEC is silent:
- Capacity is a nominal 100Pi on both: a cache has no fixed size, and the PVC's request must fit
  the PV's capacity for them to bind.
- The PV names its PVC in ``claimRef`` and the PVC its PV in ``volumeName``, both with storage class
  ``fluid``, so they bind only to each other. Reclaim policy ``Retain``: the PV is the controller's
  to delete (the Dataset finalizer does), never the binder's. The PV has no ownerReference: it is
  cluster-scoped and cannot be owned by a namespaced object.
- ``volumeHandle`` is the PV name, unique in the cluster (SPEC §5 lets a static PV pick any).
- FUSE runtime (a client runs): upstream Fluid's attributes (``fluid_path``: the client's target
  path, ``mount_type``, ``runtime_namespace``, ``runtime_name``) and no ``master-addrs``: the
  runtime's client pod is the FUSE, and the CSI node labels the node for it, waits for its mount and
  binds beneath it (SPEC §7). A PV made before, with ``master-addrs``, keeps its source
  (``kept_volume_source``): the CSI node's own FUSE serves it as it always did (SPEC §5).
- Clientless runtime: ``clientless: "true"`` and no FUSE attributes; the CSI node refuses to stage
  it and tells the user to inject the runtime config instead (SPEC §5).
- PV names are DNS subdomains (253): ``{namespace}-{name}`` has at most 63 + 1 + 42 = 106 characters.
- That name is upstream's and is kept, though two datasets can share it (``team``/``a-data`` and
  ``team-a``/``data``). A PV belongs to a Dataset only when this controller made it (managed-by), its
  labels name the Dataset (namespace and name: ``dataset-id`` is ambiguous in the same way as the PV
  name) and its claimRef names the Dataset's PVC (``pv_conflict``). The controller never updates,
  re-creates or deletes a PV that is not the Dataset's; the Dataset that finds its name taken reports
  NameConflict and takes the name once it is free. A PV made before the identity labels existed is
  known by its CSI attributes, which this controller wrote and nobody can change.
"""

from __future__ import annotations

from typing import Any

from controller.desired.labels import common_labels, namespaced_metadata
from controller.desired.scope import Scope
from kubectl_fluid.api import names

CAPACITY = "100Pi"


def persistent_volume(scope: Scope) -> dict[str, Any]:
    pv_name = names.dataset_pv(scope.namespace, scope.name)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": pv_name,
            "labels": {
                **common_labels(scope),
                names.LABEL_DATASET_NAMESPACE: scope.namespace,
                names.LABEL_DATASET_NAME: scope.name,
            },
        },
        "spec": {
            "capacity": {"storage": CAPACITY},
            "accessModes": scope.dataset.spec.effective_access_modes(),
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": names.DATASET_STORAGE_CLASS,
            "claimRef": {"namespace": scope.namespace, "name": names.dataset_pvc(scope.name)},
            "csi": {
                "driver": names.CSI_DRIVER,
                "volumeHandle": names.dataset_volume_handle(scope.namespace, scope.name),
                "volumeAttributes": volume_attributes(scope),
            },
        },
    }


def persistent_volume_claim(scope: Scope) -> dict[str, Any]:
    labels = {**common_labels(scope), names.dataset_pvc_label(scope.namespace, scope.name): names.TRUE}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": namespaced_metadata(scope, names.dataset_pvc(scope.name), labels),
        "spec": {
            "accessModes": scope.dataset.spec.effective_access_modes(),
            "resources": {"requests": {"storage": CAPACITY}},
            "storageClassName": names.DATASET_STORAGE_CLASS,
            "volumeName": names.dataset_pv(scope.namespace, scope.name),
        },
    }


def pv_holder(pv: dict[str, Any]) -> tuple[str, str] | None:
    """The (namespace, name) of the Dataset a PV was made for, from its identity labels, or from its
    CSI attributes when it has neither label (made before they existed); None when it names none."""
    labels = pv.get("metadata", {}).get("labels") or {}
    keys = (names.LABEL_DATASET_NAMESPACE, names.LABEL_DATASET_NAME)
    if any(key in labels for key in keys):
        namespace, name = (labels.get(key) for key in keys)
    else:
        attributes = (pv.get("spec", {}).get("csi") or {}).get("volumeAttributes") or {}
        namespace = attributes.get(names.VOLUME_ATTR_DATASET_NAMESPACE)
        name = attributes.get(names.VOLUME_ATTR_DATASET_NAME)
    return (namespace, name) if namespace and name else None


def pv_conflict(pv: dict[str, Any], namespace: str, name: str) -> str | None:
    """None when ``pv`` belongs to Dataset namespace/name; else what holds it, completing the
    sentence "PersistentVolume X …" for a person."""
    labels = pv.get("metadata", {}).get("labels") or {}
    if labels.get(names.LABEL_APP_MANAGED_BY) != names.MANAGED_BY:
        return f"is not managed by {names.MANAGED_BY}"
    holder = pv_holder(pv)
    if holder is None:
        return (
            f"names no Dataset in its {names.LABEL_DATASET_NAMESPACE} and {names.LABEL_DATASET_NAME} labels"
        )
    if holder != (namespace, name):
        return f"is held by Dataset {holder[0]}/{holder[1]}"
    claim = pv.get("spec", {}).get("claimRef") or {}
    ours = f"PersistentVolumeClaim {namespace}/{names.dataset_pvc(name)}"
    if not claim:
        return f"has no claimRef to {ours}"
    if (claim.get("namespace"), claim.get("name")) != (namespace, names.dataset_pvc(name)):
        return (
            f"is bound to PersistentVolumeClaim {claim.get('namespace')}/{claim.get('name')}, not to {ours}"
        )
    return None


def volume_attributes(scope: Scope) -> dict[str, str]:
    attributes = {
        names.VOLUME_ATTR_DATASET_NAME: scope.name,
        names.VOLUME_ATTR_DATASET_NAMESPACE: scope.namespace,
    }
    if scope.clientless:
        attributes[names.VOLUME_ATTR_CLIENTLESS] = names.TRUE
        return attributes
    # Upstream's attributes (fuse.csi.fluid.io's): the runtime's client pod serves the volume at
    # its target path, and the CSI node binds beneath it (SPEC §7).
    attributes[names.VOLUME_ATTR_FLUID_PATH] = names.target_path(scope.namespace, scope.name)
    attributes[names.VOLUME_ATTR_MOUNT_TYPE] = scope.runtime_class.file_system_type
    attributes[names.VOLUME_ATTR_RUNTIME_NAMESPACE] = scope.namespace
    attributes[names.VOLUME_ATTR_RUNTIME_NAME] = scope.name
    return attributes


def kept_volume_source(desired: dict[str, Any], existing: dict[str, Any] | None) -> dict[str, Any]:
    """The PV to ensure, given the Dataset's PV as it exists. A PV made before SPEC §7 names the
    cache's masters (``master-addrs``: the CSI node's own FUSE serves it, SPEC §5); its source is
    immutable, and it keeps working as it did, so its source is kept rather than fought over (a
    re-creation would need every pod using it gone). It is re-created as a client PV only when
    it is deleted (with its PVC, while no pod uses them)."""
    old = ((existing or {}).get("spec") or {}).get("csi") or {}
    if names.PARAM_MASTER_ADDRS not in (old.get("volumeAttributes") or {}):
        return desired
    new = desired["spec"]["csi"]
    if names.VOLUME_ATTR_CLIENTLESS in new["volumeAttributes"] or old.get("driver") != new["driver"]:
        return desired  # a runtime that lost its client: re-created as before
    return {**desired, "spec": {**desired["spec"], "csi": old}}
