"""The runtime config ConfigMap: runtime.json, runtime.sh and runtime-scoped.sh rendered from one config
(SPEC §2, §3, §7)."""

from __future__ import annotations

import contextlib
from typing import Any

from controller.desired.labels import common_labels, namespaced_metadata
from controller.desired.scope import Scope
from kubectl_fluid.api import names
from kubectl_fluid.runtimeconfig import RuntimeConfigTooLarge, render_json, render_scoped_sh, render_sh


def runtime_config_configmap(scope: Scope) -> dict[str, Any]:
    data = {
        names.RUNTIME_JSON_KEY: render_json(scope.config),
        names.RUNTIME_SH_KEY: render_sh(scope.config),
    }
    # Its names are longer than runtime.sh's by FLUID_{DS}_: a config that only just fits runtime.sh's
    # limits goes without it (pods then get no variable pointing at it), rather than without its
    # upstream form too.
    with contextlib.suppress(RuntimeConfigTooLarge):
        data[names.RUNTIME_SCOPED_SH_KEY] = render_scoped_sh(scope.config, scope.name)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": namespaced_metadata(
            scope, names.runtime_config_configmap(scope.name), common_labels(scope)
        ),
        "data": data,
    }
