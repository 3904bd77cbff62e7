"""Every object the controller keeps for one CacheRuntime, built from its Dataset, itself and its
CacheRuntimeClass: pure, deterministic, no I/O. The reconciler applies what this returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller.desired.configmap import runtime_config_configmap
from controller.desired.extras import extra_configmaps
from controller.desired.scope import Scope, make_scope
from controller.desired.services import headless_service
from controller.desired.storage import persistent_volume, persistent_volume_claim
from controller.desired.workloads import client_daemonset, statefulset
from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset


@dataclass(frozen=True)
class Children:
    scope: Scope
    configmap: dict[str, Any]
    extra_configmaps: tuple[dict[str, Any], ...]
    """The class's extraResources ConfigMaps: shared with the class's other runtimes in the namespace."""
    statefulsets: tuple[dict[str, Any], ...]
    """master, worker: those that are enabled."""
    services: tuple[dict[str, Any], ...]
    """Headless Services of the components whose class asks for one, master first."""
    daemonset: dict[str, Any] | None
    """The client; None when it is disabled or the class has none (clientless)."""
    pv: dict[str, Any]
    pvc: dict[str, Any]

    def secret_keys(self) -> dict[str, list[str]]:
        """Secret → sorted keys the Dataset's encryptOptions name, for each Secret the controller
        mounts in a component pod (the class's own Secret volumes are the class's business)."""
        workloads = [*self.statefulsets, *([self.daemonset] if self.daemonset else [])]
        mounted = {
            volume["secret"]["secretName"]
            for workload in workloads
            for volume in workload["spec"]["template"]["spec"].get("volumes") or ()
            if "secret" in volume and volume["name"] == names.secret_volume(volume["secret"]["secretName"])
        }
        spec = self.scope.dataset.spec
        options = [*(spec.shared_encrypt_options or ())]
        for mount in spec.all_mounts():
            options += mount.encrypt_options or ()
        keys: dict[str, set[str]] = {secret: set() for secret in mounted}
        for option in options:
            ref = option.value_from.secret_key_ref if option.value_from else None
            if ref is not None and ref.name in keys and ref.key:
                keys[ref.name].add(ref.key)
        return {secret: sorted(keys[secret]) for secret in sorted(keys)}

    def namespaced(self) -> list[dict[str, Any]]:
        """Every namespaced child in apply order: the ConfigMaps and the Services before the pods that
        mount or resolve them, the PVC last. The PV is cluster-scoped and not among them."""
        daemonset = [self.daemonset] if self.daemonset is not None else []
        return [
            self.configmap,
            *self.extra_configmaps,
            *self.services,
            *self.statefulsets,
            *daemonset,
            self.pvc,
        ]


def desired_children(
    dataset: Dataset, runtime: CacheRuntime, runtime_class: CacheRuntimeClass, namespace: str
) -> Children:
    """Raises RuntimeConfigError, with a message for a person to act on, when the inputs cannot make
    valid children."""
    scope = make_scope(dataset, runtime, runtime_class, namespace)
    statefulsets = (statefulset(scope, "master"), statefulset(scope, "worker"))
    services = (headless_service(scope, c) for c in ("master", "worker", "client"))
    return Children(
        scope=scope,
        configmap=runtime_config_configmap(scope),
        extra_configmaps=extra_configmaps(scope),
        statefulsets=tuple(s for s in statefulsets if s is not None),
        services=tuple(s for s in services if s is not None),
        daemonset=client_daemonset(scope),
        pv=persistent_volume(scope),
        pvc=persistent_volume_claim(scope),
    )
