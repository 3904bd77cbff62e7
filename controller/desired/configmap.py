"""The runtime config ConfigMap: runtime.json, runtime.sh and runtime-scoped.sh rendered from one config
(SPEC §2, §3, §7)."""

from __future__ import annotations

from typing import Any

from controller.desired.labels import common_labels, namespaced_metadata
from controller.desired.scope import Scope
from kubectl_fluid.api import names
from kubectl_fluid.runtimeconfig import render_json, render_scoped_sh, render_sh


def runtime_config_configmap(scope: Scope) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": namespaced_metadata(
            scope, names.runtime_config_configmap(scope.name), common_labels(scope)
        ),
        "data": {
            names.RUNTIME_JSON_KEY: render_json(scope.config),
            names.RUNTIME_SH_KEY: render_sh(scope.config),
            names.RUNTIME_SCOPED_SH_KEY: render_scoped_sh(scope.config, scope.name),
        },
    }
