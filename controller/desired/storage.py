"""The dataset's static PV and its PVC (SPEC §2, §5); both exist whether or not there is a client.

Decisions where SPEC is silent:
- Capacity is a nominal 100Pi on both: a cache has no fixed size, and the PVC's request must fit
  the PV's capacity for them to bind.
- The PV names its PVC in ``claimRef`` and the PVC its PV in ``volumeName``, both with storage class
  ``fluid``, so they bind only to each other. Reclaim policy ``Retain``: the PV is the controller's
  to delete (the Dataset finalizer does), never the binder's. The PV has no ownerReference: it is
  cluster-scoped and cannot be owned by a namespaced object.
- ``volumeHandle`` is the PV name, unique in the cluster (SPEC §5 lets a static PV pick any).
- FUSE runtime (a client runs): ``master-addrs`` is the master's headless Service address at the
  first port of the class's master template. It is one stable name, not one address per master pod,
  because a PV's source cannot change after creation and scaling the master must not need a new PV;
  the headless Service resolves to every master pod. ``fs-path`` is ``/`` and ``curvine-path``
  ``/{namespace}/{name}``, so each dataset gets its own directory and all share one FUSE per node.
- Clientless runtime: ``clientless: "true"`` and no FUSE attributes; the CSI node refuses to stage
  it and tells the user to inject the runtime config instead (SPEC §5).
- PV names are DNS subdomains (253): ``{namespace}-{name}`` has at most 63 + 1 + 42 = 106 characters.
"""

from __future__ import annotations

from typing import Any

from controller.desired.labels import common_labels, namespaced_metadata
from controller.desired.ports import template_ports
from controller.desired.scope import Scope
from kubectl_fluid.api import names
from kubectl_fluid.runtimeconfig import RuntimeConfigError

CAPACITY = "100Pi"


def persistent_volume(scope: Scope) -> dict[str, Any]:
    pv_name = names.dataset_pv(scope.namespace, scope.name)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": pv_name, "labels": common_labels(scope)},
        "spec": {
            "capacity": {"storage": CAPACITY},
            "accessModes": list(scope.dataset.spec.access_modes),
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
            "accessModes": list(scope.dataset.spec.access_modes),
            "resources": {"requests": {"storage": CAPACITY}},
            "storageClassName": names.DATASET_STORAGE_CLASS,
            "volumeName": names.dataset_pv(scope.namespace, scope.name),
        },
    }


def volume_attributes(scope: Scope) -> dict[str, str]:
    attributes = {
        names.VOLUME_ATTR_DATASET_NAME: scope.name,
        names.VOLUME_ATTR_DATASET_NAMESPACE: scope.namespace,
    }
    if scope.clientless:
        attributes[names.VOLUME_ATTR_CLIENTLESS] = names.TRUE
        return attributes
    attributes[names.PARAM_MASTER_ADDRS] = _master_addrs(scope)
    attributes[names.PARAM_FS_PATH] = names.DEFAULT_FS_PATH
    attributes[names.PARAM_CURVINE_PATH] = names.dataset_curvine_path(scope.namespace, scope.name)
    return attributes


def _master_addrs(scope: Scope) -> str:
    master = scope.component("master")
    if master is None:
        raise RuntimeConfigError(
            f"{scope.runtime_ref()} runs a client (a FUSE runtime), which mounts through its master, but "
            f"the master is disabled or missing from {scope.class_ref()}; enable the master, or set "
            "spec.client.disabled: true to make the runtime clientless"
        )
    ports = template_ports(scope, "master")
    if not ports:
        raise RuntimeConfigError(
            f"{scope.runtime_ref()} runs a client (a FUSE runtime), whose PV needs the master's address, "
            f"but {scope.class_ref()} defines no port for its master: add topology.master.ports, or set "
            "spec.client.disabled: true to make the runtime clientless"
        )
    host = names.service_host(master.service.name, scope.namespace)
    return f"{host}:{ports[0].container_port}"
