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
  first port of the class's master template (the first ``containerPort`` of its containers, in
  order). It is one stable name, not one address per master pod, because a PV's source cannot
  change after creation and scaling the master must not need a new PV; the headless Service
  resolves to every master pod. So a FUSE runtime needs a master with ``service.headless`` and a
  port. ``fs-path`` is ``/`` and ``curvine-path``
  ``/{namespace}/{name}``, so each dataset gets its own directory and all share one FUSE per node.
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

from typing import Any, TypeGuard

from controller.desired.errors import INVALID_RUNTIME_CLASS, SpecError
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
    attributes[names.PARAM_MASTER_ADDRS] = _master_addrs(scope)
    attributes[names.PARAM_FS_PATH] = names.DEFAULT_FS_PATH
    attributes[names.PARAM_CURVINE_PATH] = names.dataset_curvine_path(scope.namespace, scope.name)
    return attributes


def _master_addrs(scope: Scope) -> str:
    hint = "or set spec.client.disabled: true to make the runtime clientless"
    if not scope.enabled("master"):
        raise SpecError(
            f"{scope.runtime_ref()} runs a client (a FUSE runtime), which mounts through its master, but "
            f"the master is disabled or missing from {scope.class_ref()}: enable the master, {hint}"
        )
    service = scope.service_name("master")
    if not service:
        raise SpecError(
            f"{scope.runtime_ref()} runs a client (a FUSE runtime), whose PV names the master by its "
            f"headless Service, but {scope.class_ref()} gives the master none: add "
            f"topology.master.service.headless: {{}}, {hint}",
            INVALID_RUNTIME_CLASS,
        )
    port = master_port(scope)
    if port is None:
        raise SpecError(
            f"{scope.runtime_ref()} runs a client (a FUSE runtime), whose PV needs the master's address, "
            f"but {scope.class_ref()} defines no port for its master: add a containerPort (or a "
            f"tcpSocket readinessProbe) to topology.master.template.spec.containers, {hint}",
            INVALID_RUNTIME_CLASS,
        )
    return f"{names.service_host(service, scope.namespace)}:{port}"


def master_port(scope: Scope) -> int | None:
    """The first ``containerPort`` of the master template's containers, in order; without one, the
    first port a container's probe connects to (``tcpSocket``, ``grpc``): a port the master is probed on
    is one it serves. Curvine's own class declares no containerPort and probes its RPC port."""
    containers = scope.template("master")["spec"]["containers"]
    for container in containers:
        for port in container.get("ports") or ():
            number = port.get("containerPort") if isinstance(port, dict) else None
            if _is_port(number):
                return number
    for container in containers:
        for probe in PROBES:
            handler = container.get(probe) or {}
            for kind in ("tcpSocket", "grpc"):
                number = (handler.get(kind) or {}).get("port") if isinstance(handler, dict) else None
                if _is_port(number):
                    return number
    return None


PROBES = ("readinessProbe", "startupProbe", "livenessProbe")


def _is_port(number: object) -> TypeGuard[int]:
    return isinstance(number, int) and not isinstance(number, bool)
