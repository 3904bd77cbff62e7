"""Plugins of the webhook's handler groups: each edits a pod's working copy or refuses the pod."""

from webhook.plugins.base import Context, Plugin
from webhook.plugins.registry import CONFIGURED, PLUGINS, ConfiguredFactory, PluginFactory

__all__ = ["CONFIGURED", "PLUGINS", "ConfiguredFactory", "Context", "Plugin", "PluginFactory"]
