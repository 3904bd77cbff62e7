"""Pure builders of a dataset's runtime config: ``runtime.json``, its shell form ``runtime.sh`` and
that form with names carrying the dataset, ``runtime-scoped.sh``."""

from kubectl_fluid.runtimeconfig.build import build_runtime_config
from kubectl_fluid.runtimeconfig.errors import (
    InvalidRuntimeClass,
    InvalidTieredStore,
    RuntimeConfigError,
    RuntimeConfigTooLarge,
)
from kubectl_fluid.runtimeconfig.model import RuntimeConfig
from kubectl_fluid.runtimeconfig.render import render_json
from kubectl_fluid.runtimeconfig.scoped import render_scoped_sh
from kubectl_fluid.runtimeconfig.shell import flatten, render_sh

__all__ = [
    "InvalidRuntimeClass",
    "InvalidTieredStore",
    "RuntimeConfig",
    "RuntimeConfigError",
    "RuntimeConfigTooLarge",
    "build_runtime_config",
    "flatten",
    "render_json",
    "render_scoped_sh",
    "render_sh",
]
