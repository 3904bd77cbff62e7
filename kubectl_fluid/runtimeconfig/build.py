"""Build a dataset's runtime config from its Dataset, CacheRuntime and CacheRuntimeClass (SPEC §3).

Decisions where SPEC is silent:
- A mount's options are ``sharedOptions`` overlaid with the mount's own; its encrypt options are
  ``sharedEncryptOptions`` overlaid by name with the mount's own (Fluid's behaviour).
- A component exists when the runtime or its class defines it, and is enabled unless the runtime
  sets ``disabled``. A component neither defines (a clientless class without a client) is absent.
- A tiered-store level's ``mediumType`` is the name of its medium (``processMemory``, ``emptyDir``,
  ``hostPath``); ``mountPaths`` is empty for process memory, the node path for hostPath and a
  generated path for emptyDir; ``quotas`` holds the quota when one is set; unset watermarks are "".
"""

from __future__ import annotations

from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import CacheRuntime, CachingComponentSpec, TieredStoreLevel
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset, DatasetSpec, EncryptOption, Mount
from kubectl_fluid.runtimeconfig.errors import RuntimeConfigError
from kubectl_fluid.runtimeconfig.model import (
    ComponentConfig,
    MountConfig,
    RuntimeConfig,
    ServiceConfig,
    TieredStoreLevelConfig,
)


def build_runtime_config(
    dataset: Dataset,
    runtime: CacheRuntime,
    runtime_class: CacheRuntimeClass | None,
    namespace: str,
) -> RuntimeConfig:
    name = dataset.metadata.name
    if runtime.metadata.name != name:
        raise RuntimeConfigError(
            f'CacheRuntime "{runtime.metadata.name}" must have the same name as its Dataset "{name}"'
        )
    components = {c: _component(c, name, runtime, runtime_class) for c in names.COMPONENTS}
    return RuntimeConfig(
        target_path=names.target_path(namespace, name),
        access_modes=list(dataset.spec.access_modes),
        mounts=[_mount(m, dataset.spec) for m in dataset.spec.mounts],
        master=components["master"],
        worker=components["worker"],
        client=components["client"],
    )


def _encrypt_paths(options: list[EncryptOption]) -> dict[str, str]:
    return {
        o.name: names.encrypt_option_path(o.value_from.secret_key_ref.name, o.value_from.secret_key_ref.key)
        for o in options
    }


def _mount(mount: Mount, spec: DatasetSpec) -> MountConfig:
    return MountConfig(
        name=mount.name,
        path=mount.path or f"/{mount.name}",
        mount_point=mount.mount_point,
        read_only=mount.read_only,
        shared=mount.shared,
        options={**spec.shared_options, **mount.options},
        encrypt_options=_encrypt_paths([*spec.shared_encrypt_options, *mount.encrypt_options]),
    )


def _component(
    component: names.Component,
    dataset: str,
    runtime: CacheRuntime,
    runtime_class: CacheRuntimeClass | None,
) -> ComponentConfig | None:
    spec = runtime.spec.component(component)
    template = runtime_class.topology.component(component) if runtime_class else None
    if (spec is None and template is None) or (spec is not None and spec.disabled):
        return None
    levels = []
    if isinstance(spec, CachingComponentSpec) and spec.tiered_store:
        levels = [_level(i, level) for i, level in enumerate(spec.tiered_store.levels)]
    return ComponentConfig(
        enabled=True,
        name=names.component_name(dataset, component),
        replicas=spec.replicas if spec else 1,
        service=ServiceConfig(name=names.component_service(dataset, component)),
        options={
            **(template.options if template else {}),
            **runtime.spec.options,
            **(spec.options if spec else {}),
        },
        tiered_store_levels=levels,
    )


def _level(index: int, level: TieredStoreLevel) -> TieredStoreLevelConfig:
    medium = level.medium
    if medium.host_path is not None:
        medium_type, mount_paths = "hostPath", [medium.host_path.path]
    elif medium.empty_dir is not None:
        medium_type, mount_paths = "emptyDir", [names.tiered_store_mount_path(index)]
    else:
        medium_type, mount_paths = "processMemory", []
    return TieredStoreLevelConfig(
        medium_type=medium_type,
        mount_paths=mount_paths,
        quotas=[level.quota] if level.quota else [],
        high=level.high or "",
        low=level.low or "",
    )
