"""Env of a component's first container and first init container: upstream's six injected variables
first (so ``$(FLUID_…)`` references in the template work), then the template's env, then the
runtime's.

Upstream appends the three lists and leaves duplicates for the kubelet, where the last definition
of a name wins. Server-side apply refuses two entries with one name (env is a list keyed by name),
so here the lists are merged instead: a name keeps the position of its first definition and the
value of its last, which is what the container sees either way.
"""

from __future__ import annotations

import copy
from typing import Any

from controller.desired.errors import SpecError
from controller.desired.scope import Scope
from kubectl_fluid.api import names

EnvVar = dict[str, Any]


def injected_env(scope: Scope, component: names.Component) -> list[EnvVar]:
    """The six variables every component gets. An empty value is left out, as the API server
    stores it: ``FLUID_RUNTIME_COMPONENT_SVC_NAME`` of a component without a Service has no value."""
    values = [
        (names.ENV_DATASET_NAME, scope.name),
        (names.ENV_DATASET_NAMESPACE, scope.namespace),
        (names.ENV_RUNTIME_CONFIG_PATH, names.COMPONENT_CONFIG_PATH),
        (names.ENV_RUNTIME_MOUNT_PATH, names.target_path(scope.namespace, scope.name)),
        (names.ENV_RUNTIME_COMPONENT_TYPE, component),
        (names.ENV_RUNTIME_COMPONENT_SVC_NAME, scope.service_name(component)),
    ]
    return [{"name": name, "value": value} if value else {"name": name} for name, value in values]


def merge_env(*layers: tuple[str, list[Any]]) -> list[EnvVar]:
    """``layers`` are (where they come from, entries), lowest priority first."""
    merged: dict[str, EnvVar] = {}
    for where, entries in layers:
        for i, entry in enumerate(entries):
            name = entry.get("name") if isinstance(entry, dict) else None
            if not isinstance(name, str) or not name:
                raise SpecError(f"{where}[{i}]: every env entry needs a name")
            # A dict keeps the first insertion's position when a later one replaces the value.
            merged[name] = copy.deepcopy(entry)
    return list(merged.values())
