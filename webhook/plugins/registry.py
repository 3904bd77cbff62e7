"""Plugins by the name a profile uses for them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from webhook.plugins.base import Plugin
from webhook.plugins.dataset_usage import DatasetUsageInjector
from webhook.plugins.mount_propagation import MountPropagationInjector
from webhook.plugins.runtime_config import RuntimeConfigInjector

PluginFactory = Callable[[], Plugin]
PLUGINS: Final[Mapping[str, PluginFactory]] = {
    cls.name: cls for cls in (RuntimeConfigInjector, MountPropagationInjector, DatasetUsageInjector)
}
