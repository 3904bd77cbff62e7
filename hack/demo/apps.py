"""The demo's application pods: their only Mooncake configuration is the dataset's runtime.sh, which
the webhook mounts and names in ``FLUID_RUNTIME_CONFIG_PATH_{DS}``. Shared by ``make demo`` and the
e2e round trip, so both run the same app the same way."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from kubectl_fluid.api import names

DEMO_DIR = Path(__file__).resolve().parent
# Ignored by the pod runner (the venv's python runs the app), but what a real cluster would pull.
IMAGE = "python:3.11-slim"


def app_container(dataset: str, *args: str) -> dict[str, Any]:
    """``mooncake_app.py ARGS`` after sourcing the dataset's runtime.sh (the shell-safe env name)."""
    env_name = names.runtime_config_env_names(dataset)[-1]
    script = f'. "${env_name}" && exec python mooncake_app.py {shlex.join(args)}'
    return {"name": "app", "image": IMAGE, "command": ["sh", "-c", script], "workingDir": str(DEMO_DIR)}


def injected_pod(name: str, dataset: str, *args: str, namespace: str | None = None) -> dict[str, Any]:
    """A pod that asks the webhook for ``dataset``'s runtime config and runs the app with ``args``."""
    meta: dict[str, Any] = {
        "name": name,
        "labels": {names.LABEL_INJECT: "true"},
        "annotations": {names.ANNOTATION_DATASET: dataset},
    }
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [app_container(dataset, *args)]},
    }
