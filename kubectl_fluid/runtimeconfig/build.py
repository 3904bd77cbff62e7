"""Build a dataset's runtime config from its Dataset, CacheRuntime and CacheRuntimeClass, with the
values upstream Fluid computes (``generateRuntimeConfigData``; SPEC §3):

- Mounts: every mount of the Dataset, in order. ``options`` are ``sharedOptions`` overlaid by the
  mount's own; ``encryptOptions`` are ``sharedEncryptOptions`` overlaid by name by the mount's own,
  each the file ``/etc/fluid/secrets/{secret}/{key}``; an option without a Secret name or key is an
  error. ``path`` is the mount's ``path`` when absolute (a relative one is ignored, as upstream
  does), else ``/{name}``. ``accessModes`` default to ``[ReadOnlyMany]``.
- A component is present when the class's topology defines it and the runtime does not disable it
  (a class defining none is an error). Its ``options`` are the class's, then the runtime's
  ``spec.options``, then its own (later wins); ``replicas`` the runtime's (the client has none);
  ``service.name`` ``svc-{name}-{component}`` where the class gives it ``service.headless``, else "".
- Tiered-store levels: see ``tiers``.
"""

from __future__ import annotations

from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass, RuntimeComponentDefinition
from kubectl_fluid.api.dataset import Dataset, EncryptOption, Mount
from kubectl_fluid.runtimeconfig.errors import InvalidRuntimeClass, RuntimeConfigError
from kubectl_fluid.runtimeconfig.model import ComponentConfig, MountConfig, RuntimeConfig, ServiceConfig
from kubectl_fluid.runtimeconfig.tiers import tier_levels


def build_runtime_config(
    dataset: Dataset, runtime: CacheRuntime, runtime_class: CacheRuntimeClass, namespace: str
) -> RuntimeConfig:
    """Raises RuntimeConfigError, saying what to change, where the inputs make no runtime config."""
    name = dataset.metadata.name
    if runtime.metadata.name != name:
        raise RuntimeConfigError(
            f'CacheRuntime "{runtime.metadata.name}" must have the same name as its Dataset "{name}"'
        )
    definitions = {c: runtime_class.component(c) for c in names.COMPONENTS}
    if all(definition is None for definition in definitions.values()):
        raise InvalidRuntimeClass(
            f'CacheRuntimeClass "{runtime_class.metadata.name}": at least one component should be defined '
            "in runtimeClass: give its topology a master, a worker or a client"
        )
    return RuntimeConfig(
        mounts=[_mount(dataset, i, mount) for i, mount in enumerate(dataset.spec.all_mounts())],
        access_modes=dataset.spec.effective_access_modes(),
        target_path=names.target_path(namespace, name),
        master=_component("master", runtime, definitions["master"]),
        worker=_component("worker", runtime, definitions["worker"]),
        client=_component("client", runtime, definitions["client"]),
    )


def _secret_file(dataset: Dataset, field: str, option: EncryptOption) -> str:
    ref = option.value_from.secret_key_ref if option.value_from else None
    if ref is None or not ref.name or not ref.key:
        raise RuntimeConfigError(
            f'Dataset "{dataset.metadata.name}" spec.{field}: encryptOption {option.name} has empty '
            "secretKeyRef name or key: set valueFrom.secretKeyRef.name to the Secret and .key to the key "
            "holding the value"
        )
    return names.encrypt_option_path(ref.name, ref.key)


def _mount(dataset: Dataset, index: int, mount: Mount) -> MountConfig:
    spec = dataset.spec
    encrypt: dict[str, str] = {}
    for field, options in (
        ("sharedEncryptOptions", spec.shared_encrypt_options),
        (f"mounts[{index}].encryptOptions", mount.encrypt_options),
    ):
        for option in options or ():
            encrypt[option.name] = _secret_file(dataset, field, option)
    return MountConfig(
        mount_point=mount.mount_point,
        options={**(spec.shared_options or {}), **(mount.options or {})},
        encrypt_options=encrypt,
        name=mount.name or "",
        path=mount.dataset_path(),
        read_only=bool(mount.read_only),
        shared=bool(mount.shared),
    )


def _component(
    component: names.Component, runtime: CacheRuntime, definition: RuntimeComponentDefinition | None
) -> ComponentConfig | None:
    spec = runtime.spec.component(component)
    if definition is None or spec.disabled:
        return None
    name = runtime.metadata.name
    return ComponentConfig(
        enabled=True,
        name=names.component_name(name, component),
        options={**(definition.options or {}), **(runtime.spec.options or {}), **(spec.options or {})},
        replicas=spec.replica_count() or 0,
        service=ServiceConfig(
            name=names.component_service(name, component) if definition.has_service() else ""
        ),
        tiered_store_levels=tier_levels(name, component, spec.tiered_levels()),
    )
