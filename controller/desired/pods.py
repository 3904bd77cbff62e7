"""The pod template of a cache component: one container named after the component (SPEC §2).

Decisions where SPEC is silent:
- image, command and args: the runtime's when set (non-empty), else the class template's. No image
  in either is an error naming both places to set one.
- env: the four ``FLUID_*`` variables first, then the component's own. Setting one of the four
  yourself, or one name twice, is refused: server-side apply keys env by name and rejects
  duplicates, and the four are the contract between the controller and the component.
- resources, nodeSelector and tolerations are copied from the runtime's component as given; empty
  ones are left out so the object reads like what the API server stores.
- No checksum annotation rolls pods when the config changes: the kubelet refreshes the mounted
  ConfigMap in place, and restarting a cache throws its data away.
"""

from __future__ import annotations

import copy
from typing import Any

from controller.desired.labels import component_labels
from controller.desired.ports import container_ports, template_ports
from controller.desired.scope import Scope
from controller.desired.volumes import component_volumes
from kubectl_fluid.api import names
from kubectl_fluid.runtimeconfig import RuntimeConfigError

_RESERVED_ENV = (
    names.ENV_DATASET_NAME,
    names.ENV_DATASET_NAMESPACE,
    names.ENV_RUNTIME_CONFIG_PATH,
    names.ENV_RUNTIME_COMPONENT_TYPE,
)


def pod_template(scope: Scope, component: names.Component) -> dict[str, Any]:
    volumes, mounts = component_volumes(scope, component)
    pod: dict[str, Any] = {"containers": [_container(scope, component, mounts)], "volumes": volumes}
    spec = scope.spec(component)
    if spec is not None and spec.node_selector:
        pod["nodeSelector"] = dict(spec.node_selector)
    if spec is not None and spec.tolerations:
        pod["tolerations"] = copy.deepcopy(spec.tolerations)
    return {"metadata": {"labels": component_labels(scope, component)}, "spec": pod}


def _container(scope: Scope, component: names.Component, mounts: list[dict[str, Any]]) -> dict[str, Any]:
    spec = scope.spec(component)
    template = scope.template(component)
    image = (spec.image if spec else None) or (template.image if template else None)
    if not image:
        raise RuntimeConfigError(
            f"{component} of {scope.runtime_ref()} has no image: set topology.{component}.image in "
            f"{scope.class_ref()} or spec.{component}.image in the CacheRuntime"
        )
    container: dict[str, Any] = {"name": component, "image": image}
    command = (spec.command if spec else []) or (template.command if template else [])
    args = (spec.args if spec else []) or (template.args if template else [])
    if command:
        container["command"] = list(command)
    if args:
        container["args"] = list(args)
    container["env"] = _env(scope, component)
    ports = container_ports(template_ports(scope, component))
    if ports:
        container["ports"] = ports
    if spec is not None and spec.resources:
        container["resources"] = copy.deepcopy(spec.resources)
    container["volumeMounts"] = mounts
    return container


def _env(scope: Scope, component: names.Component) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [
        {"name": names.ENV_DATASET_NAME, "value": scope.name},
        {"name": names.ENV_DATASET_NAMESPACE, "value": scope.namespace},
        {"name": names.ENV_RUNTIME_CONFIG_PATH, "value": names.COMPONENT_CONFIG_PATH},
        {"name": names.ENV_RUNTIME_COMPONENT_TYPE, "value": component},
    ]
    spec = scope.spec(component)
    seen: set[str] = set()
    for entry in spec.env if spec else []:
        name = entry.get("name")
        where = f"spec.{component}.env of {scope.runtime_ref()}"
        if not isinstance(name, str) or not name:
            raise RuntimeConfigError(f"{where}: every entry needs a name")
        if name in _RESERVED_ENV:
            raise RuntimeConfigError(f"{where}: {name} is set by the controller; remove it")
        if name in seen:
            raise RuntimeConfigError(f"{where}: {name} appears twice")
        seen.add(name)
        env.append(copy.deepcopy(entry))
    return env
