"""Every object the controller keeps for one CacheRuntime, built from its Dataset, itself and its
CacheRuntimeClass: pure, deterministic, no I/O. The reconciler applies what this returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller.desired.configmap import runtime_config_configmap
from controller.desired.scope import make_scope
from controller.desired.services import headless_service
from controller.desired.storage import persistent_volume, persistent_volume_claim
from controller.desired.workloads import client_daemonset, statefulset
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset


@dataclass(frozen=True)
class Children:
    configmap: dict[str, Any]
    statefulsets: tuple[dict[str, Any], ...]
    """master, worker: those that are enabled."""
    services: tuple[dict[str, Any], ...]
    """Headless Services of the StatefulSets, in the same order."""
    daemonset: dict[str, Any] | None
    """The client; None when it is disabled or the runtime has none (clientless)."""
    pv: dict[str, Any]
    pvc: dict[str, Any]

    def namespaced(self) -> list[dict[str, Any]]:
        """Every namespaced child in apply order: the ConfigMap and the Services before the pods that
        mount or resolve them, the PVC last. The PV is cluster-scoped and not among them."""
        daemonset = [self.daemonset] if self.daemonset is not None else []
        return [self.configmap, *self.services, *self.statefulsets, *daemonset, self.pvc]


def desired_children(
    dataset: Dataset, runtime: CacheRuntime, runtime_class: CacheRuntimeClass, namespace: str
) -> Children:
    """Raises RuntimeConfigError, with a message for a person to act on, when the inputs cannot make
    valid children."""
    scope = make_scope(dataset, runtime, runtime_class, namespace)
    statefulsets = (statefulset(scope, "master"), statefulset(scope, "worker"))
    services = (headless_service(scope, "master"), headless_service(scope, "worker"))
    return Children(
        configmap=runtime_config_configmap(scope),
        statefulsets=tuple(s for s in statefulsets if s is not None),
        services=tuple(s for s in services if s is not None),
        daemonset=client_daemonset(scope),
        pv=persistent_volume(scope),
        pvc=persistent_volume_claim(scope),
    )
