"""Labels, selectors, owner references and object metadata shared by every child.

Workloads and Services select on upstream's two labels (``cacheruntime.fluid.io/name`` and
``cacheruntime.fluid.io/component-name``): they cannot change for the life of a workload, and a
StatefulSet's or DaemonSet's selector is immutable. The product's ``app.kubernetes.io/*`` labels and
``fluid.io/dataset-id`` are on every child too (the controller's watches select on managed-by).
"""

from __future__ import annotations

from typing import Any

from controller.desired.scope import Scope
from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import CacheRuntime


def common_labels(scope: Scope) -> dict[str, str]:
    """Labels of every child the runtime owns alone (ConfigMap, PV, PVC and the component objects)."""
    return {
        names.LABEL_APP_NAME: scope.runtime_class.file_system_type,
        names.LABEL_APP_INSTANCE: scope.name,
        names.LABEL_APP_MANAGED_BY: names.MANAGED_BY,
        names.LABEL_DATASET_ID: names.dataset_id(scope.namespace, scope.name),
    }


def selector_labels(scope: Scope, component: names.Component) -> dict[str, str]:
    return {
        names.LABEL_CACHERUNTIME_NAME: scope.name,
        names.LABEL_CACHERUNTIME_COMPONENT: names.component_name(scope.name, component),
    }


def component_labels(scope: Scope, component: names.Component) -> dict[str, str]:
    """Labels of a component's workload, Service and pods."""
    return {
        **common_labels(scope),
        names.LABEL_APP_COMPONENT: component,
        **selector_labels(scope, component),
    }


def owner_reference(runtime: CacheRuntime, uid: str, controller: bool = True) -> dict[str, Any]:
    """Reference to the CacheRuntime: the garbage collector removes the children with it, and
    ``blockOwnerDeletion`` lets a foreground deletion wait for them. ``controller`` is False on
    objects several runtimes share (each is one owner among equals)."""
    return {
        "apiVersion": names.API_VERSION,
        "kind": CacheRuntime.crd.kind,
        "name": runtime.metadata.name,
        "uid": uid,
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def namespaced_metadata(scope: Scope, name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": scope.namespace,
        "labels": labels,
        "ownerReferences": [owner_reference(scope.runtime, scope.owner_uid)],
    }
