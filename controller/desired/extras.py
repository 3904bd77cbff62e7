"""The class's extra ConfigMaps (``extraResources.configMaps``), made in the runtime's namespace for
the components that mount them (``dependencies.extraResources``).

Every runtime of a class in one namespace mounts the same ConfigMap (its name is the class's), so
the object is shared: each runtime is one owner among equals (an ownerReference without
``controller``), writes it with a field manager of its own (``names.shared_field_manager``), and the
garbage collector removes it with the last of them. Upstream creates it once, owned by the first
runtime, and never updates it; here it follows the class. Its labels are the same for every
runtime of the class (managed-by, the class's ``fileSystemType`` and name), so two runtimes never
fight over them; a ConfigMap of that name another class (or anyone else) made is not taken over.
"""

from __future__ import annotations

from typing import Any

from controller.desired.errors import INVALID_RUNTIME_CLASS, SpecError
from controller.desired.labels import owner_reference
from controller.desired.scope import Scope
from kubectl_fluid.api import names


def extra_configmaps(scope: Scope) -> tuple[dict[str, Any], ...]:
    resources = scope.runtime_class.extra_resources
    out: dict[str, dict[str, Any]] = {}
    for i, resource in enumerate((resources.config_maps if resources else None) or ()):
        where = f"{scope.class_ref()} extraResources.configMaps[{i}]"
        if not resource.name:
            raise SpecError(f"{where}: needs a name", INVALID_RUNTIME_CLASS)
        if resource.name in out:
            raise SpecError(f"{where}: ConfigMap {resource.name} is defined twice", INVALID_RUNTIME_CLASS)
        if resource.name.startswith(names.RUNTIME_CONFIG_PREFIX):
            raise SpecError(
                f"{where}: {names.RUNTIME_CONFIG_PREFIX}* names the runtimes' own ConfigMaps: rename "
                f"{resource.name}",
                INVALID_RUNTIME_CLASS,
            )
        out[resource.name] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": resource.name,
                "namespace": scope.namespace,
                "labels": shared_labels(scope),
                "ownerReferences": [owner_reference(scope.runtime, scope.owner_uid, controller=False)],
            },
            "data": dict(resource.data or {}),
        }
    return tuple(out.values())


def shared_labels(scope: Scope) -> dict[str, str]:
    return {
        names.LABEL_APP_NAME: scope.runtime_class.file_system_type,
        names.LABEL_APP_MANAGED_BY: names.MANAGED_BY,
        names.LABEL_RUNTIME_CLASS: names.fit_63(scope.runtime_class.metadata.name),
    }
