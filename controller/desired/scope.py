"""The inputs of one build of a runtime's children, checked once, plus the runtime config the
ConfigMap renders.

Which components run is upstream's rule, decided here once: a component runs when the class's
topology defines it and the runtime does not set ``disabled`` (a class without a client makes the
runtime clientless whatever the runtime says). The runtime config applies the same rule, so
runtime.json lists exactly the components that get workloads.

Refused here, with upstream's words where upstream refuses it too (a class with no component, and a
bad tiered store, are refused by the runtime config's build, which runs first):
- an enabled component whose template has no container: "component <type> must define at least
  one container";
- a Dataset name that is not a DNS-1035 label of at most 42 characters (it names Services,
  StatefulSets and the webhook's pod volume), and a ``fileSystemType`` that is not a label value
  (it becomes the ``app.kubernetes.io/name`` label).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from controller.desired.errors import INVALID_RUNTIME_CLASS, INVALID_SPEC, SpecError
from controller.desired.shape import NODE_SELECTOR_PATHS, check_shape, check_template_shape
from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import CacheRuntime, RuntimeComponentCommonSpec
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass, RuntimeComponentDefinition
from kubectl_fluid.api.dataset import Dataset
from kubectl_fluid.runtimeconfig import RuntimeConfig, build_runtime_config

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

    def definition(self, component: names.Component) -> RuntimeComponentDefinition | None:
        """The class's definition of an enabled component; None when the component does not run."""
        definition = self.runtime_class.component(component)
        if definition is None or self.spec(component).disabled:
            return None
        return definition

    def enabled(self, component: names.Component) -> bool:
        return self.definition(component) is not None

    @property
    def clientless(self) -> bool:
        return not self.enabled("client")

    def spec(self, component: names.Component) -> RuntimeComponentCommonSpec:
        return self.runtime.spec.component(component)

    def template(self, component: names.Component) -> dict[str, Any]:
        """The class's PodTemplateSpec of an enabled component (checked to have a container)."""
        definition = self.definition(component)
        assert definition is not None, component
        assert definition.template is not None, component
        return definition.template

    def service_name(self, component: names.Component) -> str:
        """``svc-{name}-{component}`` when the class gives the component a headless Service, else ""."""
        definition = self.definition(component)
        if definition is None or not definition.has_service():
            return ""
        return names.component_service(self.name, component)

    def runtime_ref(self) -> str:
        return f'CacheRuntime "{self.runtime.metadata.name}"'

    def class_ref(self) -> str:
        return f'CacheRuntimeClass "{self.runtime_class.metadata.name}"'


def make_scope(
    dataset: Dataset, runtime: CacheRuntime, runtime_class: CacheRuntimeClass, namespace: str
) -> Scope:
    name = dataset.metadata.name
    error = names.dataset_name_error(name)
    if error:
        raise SpecError(f'Dataset name "{name}" cannot name its cache components: {error}')
    fs_type = runtime_class.file_system_type
    if len(fs_type) > names.DNS_LABEL_MAX or not _LABEL_VALUE.fullmatch(fs_type):
        raise SpecError(
            f'CacheRuntimeClass "{runtime_class.metadata.name}": fileSystemType "{fs_type}" must be a '
            f"valid label value (at most {names.DNS_LABEL_MAX} letters, digits, '-', '_', '.'; starting "
            f"and ending with a letter or digit): it becomes the {names.LABEL_APP_NAME} label",
            INVALID_RUNTIME_CLASS,
        )
    uid = runtime.metadata.uid
    if not uid:
        # Owner references need the uid; only an object read back from the API server has one.
        raise SpecError(
            f'CacheRuntime "{runtime.metadata.name}" has no metadata.uid: build children from the object '
            "as stored by the API server"
        )
    affinity = dataset.spec.node_affinity
    if affinity is not None and affinity.required is not None:
        where = f'Dataset "{name}" spec.nodeAffinity.required'
        check_shape(affinity.required, NODE_SELECTOR_PATHS, where, INVALID_SPEC)
    config = build_runtime_config(dataset, runtime, runtime_class, namespace)
    scope = Scope(dataset, runtime, runtime_class, namespace, config, uid)
    _check_topology(scope)
    return scope


def _check_topology(scope: Scope) -> None:
    # A class without any component is refused by the runtime config's build, which runs first.
    for component in names.COMPONENTS:
        definition = scope.definition(component)
        if definition is None:
            continue
        check_template_shape(definition.template or {}, f"{scope.class_ref()} topology.{component}.template")
        if not ((definition.template or {}).get("spec") or {}).get("containers"):
            raise SpecError(
                f"{scope.class_ref()}: component {component} must define at least one container: add "
                f"topology.{component}.template.spec.containers, or set spec.{component}.disabled: true "
                f"in {scope.runtime_ref()}",
                INVALID_RUNTIME_CLASS,
            )
