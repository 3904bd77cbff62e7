"""The inputs of one build of a runtime's children, checked once, plus the runtime config every child
derives from (so the ConfigMap and the workloads can never disagree on names, replicas or which
components exist).

Decisions where SPEC is silent:
- A Dataset name must be a DNS label (no ``.``), not just a DNS subdomain: it becomes part of Service
  names (``svc-{name}-master``) and of the pod volume the webhook adds (``fluid-runtime-config-{name}``),
  both DNS labels. Refusing it here names the cause instead of a later API error on one child.
- The class's ``fileSystemType`` becomes the ``app.kubernetes.io/name`` label, so it must be a valid
  label value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import CacheRuntime, ComponentSpec
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass, ComponentTemplate
from kubectl_fluid.api.dataset import Dataset
from kubectl_fluid.runtimeconfig import RuntimeConfig, RuntimeConfigError, build_runtime_config
from kubectl_fluid.runtimeconfig.model import ComponentConfig

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")


@dataclass(frozen=True)
class Scope:
    dataset: Dataset
    runtime: CacheRuntime
    runtime_class: CacheRuntimeClass
    namespace: str
    config: RuntimeConfig
    owner_uid: str

    @property
    def name(self) -> str:
        return self.dataset.metadata.name

    @property
    def clientless(self) -> bool:
        return self.config.client is None

    def component(self, component: names.Component) -> ComponentConfig | None:
        """The component's config, None when it is disabled or neither runtime nor class has it."""
        config: ComponentConfig | None = getattr(self.config, component)
        return config

    def spec(self, component: names.Component) -> ComponentSpec | None:
        return self.runtime.spec.component(component)

    def template(self, component: names.Component) -> ComponentTemplate | None:
        return self.runtime_class.topology.component(component)

    def runtime_ref(self) -> str:
        return f'CacheRuntime "{self.runtime.metadata.name}"'

    def class_ref(self) -> str:
        return f'CacheRuntimeClass "{self.runtime_class.metadata.name}"'


def make_scope(
    dataset: Dataset, runtime: CacheRuntime, runtime_class: CacheRuntimeClass, namespace: str
) -> Scope:
    name = dataset.metadata.name
    if len(name) > names.MAX_DATASET_NAME_LENGTH or not _DNS_LABEL.fullmatch(name):
        raise RuntimeConfigError(
            f'Dataset name "{name}" cannot name its cache components: it must be a DNS label of at most '
            f'{names.MAX_DATASET_NAME_LENGTH} lowercase letters, digits and "-" (no "."), because Service '
            f"{names.component_service(name, 'master')} and pod volume {names.runtime_config_volume(name)} "
            "are named after it"
        )
    fs_type = runtime_class.file_system_type
    if len(fs_type) > names.DNS_LABEL_MAX or not _LABEL_VALUE.fullmatch(fs_type):
        raise RuntimeConfigError(
            f'CacheRuntimeClass "{runtime_class.metadata.name}": fileSystemType "{fs_type}" must be a '
            f"valid label value (at most {names.DNS_LABEL_MAX} letters, digits, '-', '_', '.'; starting "
            f"and ending with a letter or digit): it becomes the {names.LABEL_APP_NAME} label"
        )
    uid = runtime.metadata.uid
    if not uid:
        # Owner references need the uid; only an object read back from the API server has one.
        raise RuntimeConfigError(
            f'CacheRuntime "{runtime.metadata.name}" has no metadata.uid: build children from the object '
            "as stored by the API server"
        )
    config = build_runtime_config(dataset, runtime, runtime_class, namespace)
    return Scope(dataset, runtime, runtime_class, namespace, config, uid)
