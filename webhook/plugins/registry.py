"""Plugins by the name a profile uses for them; and, for those that take args (the profile's
``pluginConfig``, in upstream's shape), how they are made from them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from webhook.plugins.base import Plugin
from webhook.plugins.cache_affinity import NodeAffinityWithCache, PreferNodesWithoutCache, RequireNodeWithFuse
from webhook.plugins.dataset_usage import DatasetUsageInjector
from webhook.plugins.mount_propagation import MountPropagationInjector
from webhook.plugins.runtime_config import RuntimeConfigInjector

PluginFactory = Callable[[], Plugin]
# From the args string of the plugin's pluginConfig entry; raises ProfileError.
ConfiguredFactory = Callable[[str], Plugin]
PLUGINS: Final[Mapping[str, PluginFactory]] = {
    cls.name: cls
    for cls in (
        RuntimeConfigInjector,
        MountPropagationInjector,
        DatasetUsageInjector,
        NodeAffinityWithCache,
        PreferNodesWithoutCache,
        RequireNodeWithFuse,
    )
}
CONFIGURED: Final[Mapping[str, ConfiguredFactory]] = {
    NodeAffinityWithCache.name: NodeAffinityWithCache.from_args,
}
