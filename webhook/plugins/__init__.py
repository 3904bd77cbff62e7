"""Plugins of the webhook's handler groups: each edits a pod's working copy or refuses the pod."""

from webhook.plugins.base import Context, Plugin
from webhook.plugins.registry import PLUGINS, PluginFactory

__all__ = ["PLUGINS", "Context", "Plugin", "PluginFactory"]
