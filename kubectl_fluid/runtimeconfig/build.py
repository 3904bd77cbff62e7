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
from kubectl_fluid.api.cacheruntime import CacheRuntime, RuntimeTieredStoreLevel
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

# STAND-IN until h-rtconfig lands (it rewrites this module for the upstream models): just enough of
# upstream's rules for the controller to build on. Take h-rtconfig's version when merging.


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
        access_modes=dataset.spec.effective_access_modes(),
        mounts=[_mount(m, dataset.spec) for m in dataset.spec.all_mounts()],
        master=components["master"],
        worker=components["worker"],
        client=components["client"],
    )


def _encrypt_paths(options: list[EncryptOption]) -> dict[str, str]:
    paths = {}
    for o in options:
        ref = o.value_from.secret_key_ref if o.value_from else None
        if ref is None or not ref.name or not ref.key:
            raise RuntimeConfigError(f"encryptOption {o.name} has empty secretKeyRef name or key")
        paths[o.name] = names.encrypt_option_path(ref.name, ref.key)
    return paths


def _mount(mount: Mount, spec: DatasetSpec) -> MountConfig:
    return MountConfig(
        name=mount.name or "",
        path=mount.dataset_path(),
        mount_point=mount.mount_point,
        read_only=bool(mount.read_only),
        shared=bool(mount.shared),
        options={**(spec.shared_options or {}), **(mount.options or {})},
        encrypt_options=_encrypt_paths(
            [*(spec.shared_encrypt_options or []), *(mount.encrypt_options or [])]
        ),
    )


def _component(
    component: names.Component,
    dataset: str,
    runtime: CacheRuntime,
    runtime_class: CacheRuntimeClass | None,
) -> ComponentConfig | None:
    spec = runtime.spec.component(component)
    definition = runtime_class.component(component) if runtime_class else None
    if definition is None or spec.disabled:
        return None
    return ComponentConfig(
        enabled=True,
        name=names.component_name(dataset, component),
        replicas=spec.replica_count() or 0,
        service=ServiceConfig(
            name=names.component_service(dataset, component) if definition.has_service() else ""
        ),
        options={**(definition.options or {}), **(runtime.spec.options or {}), **(spec.options or {})},
        tiered_store_levels=[_level(i, level) for i, level in enumerate(spec.tiered_levels())],
    )


def _level(index: int, level: RuntimeTieredStoreLevel) -> TieredStoreLevelConfig:
    medium_type, mount_paths, quotas = names.MEDIUM_DISK, [], []
    if level.process_memory is not None:
        medium_type, mount_paths = names.MEDIUM_MEMORY, [names.PROCESS_MEMORY_MOUNT_PATH]
        quotas = [str(level.process_memory.quota)]
    elif level.host_path is not None:
        mount_paths = [names.host_path_tier_mount_path(index, j) for j in range(len(level.host_path.paths))]
        quotas = [str(q) for q in level.host_path.quotas]
    elif level.empty_dir is not None:
        if level.empty_dir.medium == names.EMPTY_DIR_MEMORY:
            medium_type = names.MEDIUM_MEMORY
        mount_paths, quotas = [names.empty_dir_tier_mount_path(index)], [str(level.empty_dir.quota)]
    return TieredStoreLevelConfig(
        medium_type=medium_type,
        mount_paths=mount_paths,
        quotas=quotas,
        high=level.high or "",
        low=level.low or "",
    )
