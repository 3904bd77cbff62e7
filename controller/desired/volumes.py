"""Volumes every component pod gets, in upstream's order (``transform_volumes.go``):

1. the runtime config: volume ``fluid-runtime-{name}-config`` of ConfigMap
   ``fluid-runtime-config-{name}``, read-only at ``/etc/fluid/config`` in the first container and the
   first init container;
2. the class's extra ConfigMaps the component's ``dependencies.extraResources`` names, read-only at
   their ``mountPath``, in the same two containers; a name the class's ``extraResources`` does not
   define is refused;
3. the runtime's ``spec.<component>.volumeMounts``, in the first container, and the volumes of
   ``spec.volumes`` they name (only those); a name found neither there nor in the pod is refused;
4. the Secrets of the Dataset's encrypt options (``sharedEncryptOptions``, then those of mounts that
   are not Fluid-native ``local://``/``pvc://``), whole, read-only at ``/etc/fluid/secrets/{secret}``
   in the first container, when ``dependencies.secretMount`` says so (by default master and worker
   yes, client no).

A volume or mount replaces the one of the same name already in the template.
"""

from __future__ import annotations

import copy

from controller.desired.errors import INVALID_RUNTIME_CLASS, SpecError
from controller.desired.podspec import Json, add_mount, add_volume, first
from controller.desired.scope import Scope
from kubectl_fluid.api import names
from kubectl_fluid.api.dataset import Dataset, EncryptOption

_SECRET_MOUNT_DEFAULT: dict[names.Component, bool] = {"master": True, "worker": True, "client": False}


def apply_volumes(scope: Scope, component: names.Component, pod: Json) -> None:
    main, init = first(pod, "containers"), first(pod, "initContainers")
    assert main is not None
    both = [c for c in (main, init) if c is not None]
    _readonly_configmap(
        pod,
        both,
        names.component_config_volume(scope.name),
        names.runtime_config_configmap(scope.name),
        names.COMPONENT_CONFIG_DIR,
    )
    for configmap, mount_path in extra_configmaps(scope, component):
        _readonly_configmap(
            pod, both, names.extra_configmap_volume(scope.name, configmap), configmap, mount_path
        )
    _runtime_volumes(scope, component, pod, main)
    if secret_mount(scope, component):
        for secret in mounted_secrets(scope.dataset):
            volume = names.secret_volume(secret)
            add_volume(pod, {"name": volume, "secret": {"secretName": secret}})
            add_mount(main, {"name": volume, "mountPath": names.secret_mount_dir(secret), "readOnly": True})


def extra_configmaps(scope: Scope, component: names.Component) -> list[tuple[str, str]]:
    """(ConfigMap, mountPath) of the class's extra ConfigMaps a component mounts."""
    definition = scope.definition(component)
    dependency = definition.dependencies.extra_resources if definition and definition.dependencies else None
    resources = scope.runtime_class.extra_resources
    defined = {c.name for c in (resources.config_maps if resources else None) or () if c.name}
    out = []
    for i, dep in enumerate((dependency.config_maps if dependency else None) or ()):
        where = f"{scope.class_ref()} topology.{component}.dependencies.extraResources.configMaps[{i}]"
        if not dep.name or dep.name not in defined:
            raise SpecError(
                f"{where}: component has undefined config map extra resource '{dep.name or ''}', check "
                "the CacheRuntimeClass definition (extraResources.configMaps must define it)",
                INVALID_RUNTIME_CLASS,
            )
        if not dep.mount_path:
            raise SpecError(f"{where}: ConfigMap {dep.name} needs a mountPath", INVALID_RUNTIME_CLASS)
        out.append((dep.name, dep.mount_path))
    return out


def secret_mount(scope: Scope, component: names.Component) -> bool:
    definition = scope.definition(component)
    setting = definition.dependencies.secret_mount if definition and definition.dependencies else None
    if setting is None:
        return _SECRET_MOUNT_DEFAULT[component]
    return bool(setting.enabled)


def mounted_secrets(dataset: Dataset) -> list[str]:
    """Names of the Secrets a component with secret mounts gets, in upstream's order, once each."""
    options: list[EncryptOption] = list(dataset.spec.shared_encrypt_options or ())
    for mount in dataset.spec.all_mounts():
        if not mount.mount_point.startswith(names.NATIVE_MOUNT_SCHEMES):
            options += mount.encrypt_options or ()
    secrets: dict[str, None] = {}
    for option in options:
        ref = option.value_from.secret_key_ref if option.value_from else None
        if ref is not None and ref.name:
            secrets[ref.name] = None
    return list(secrets)


def _readonly_configmap(pod: Json, containers: list[Json], volume: str, configmap: str, path: str) -> None:
    add_volume(pod, {"name": volume, "configMap": {"name": configmap}})
    for container in containers:
        add_mount(container, {"name": volume, "mountPath": path, "readOnly": True})


def _runtime_volumes(scope: Scope, component: names.Component, pod: Json, main: Json) -> None:
    mounts = scope.spec(component).volume_mounts or []
    for i, mount in enumerate(mounts):
        if not isinstance(mount.get("name"), str) or not mount.get("mountPath"):
            raise SpecError(
                f"{scope.runtime_ref()} spec.{component}.volumeMounts[{i}]: needs a name and a mountPath"
            )
        add_mount(main, copy.deepcopy(mount))
    wanted = {m.get("name") for m in mounts}
    present = {v.get("name") for v in pod.get("volumes") or ()}
    for volume in scope.runtime.spec.volumes or ():
        if volume.get("name") in wanted and volume.get("name") not in present:
            add_volume(pod, copy.deepcopy(volume))
    present = {v.get("name") for v in pod.get("volumes") or ()}
    for i, mount in enumerate(mounts):
        if mount.get("name") not in present:
            raise SpecError(
                f"{scope.runtime_ref()} spec.{component}.volumeMounts[{i}]: volume not found for "
                f"volumeMount {mount.get('name')}, check the CacheRuntime Spec (spec.volumes must have it)"
            )
