"""The plugin profile: which plugins each handler group runs, with and without datasets (SPEC §4).

The file keeps the shape of Fluid's ``webhook-plugins`` ConfigMap, so operators recognise it::

    plugins:
      clientless: {withDataset: [...], withoutDataset: [...]}
      serverful:  {...}
      serverless: {...}
    pluginConfig:                     # args of the plugins that take some, as upstream
      - {name: NodeAffinityWithCache, args: "<YAML>"}

Loading is strict, because a typo would otherwise serve pods with a silently different set of plugins:
an unknown plugin, group or key, a wrong type or a plugin listed twice in one list raises
``ProfileError`` and start-up stops. Two gentler cases produce warnings instead: a missing (or empty)
``clientless`` section gets ``CLIENTLESS_DEFAULT``, since clientless injection is the product's core
path; and ``clientless.withoutDataset`` is ignored, as SPEC fixes that a clientless pod without
datasets runs no plugins. A missing ``serverful`` or ``serverless`` section means no plugins there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import yaml

from webhook.errors import ProfileError
from webhook.plugins import CONFIGURED, PLUGINS, ConfiguredFactory, Plugin, PluginFactory
from webhook.routing import CLIENTLESS, GROUPS, Group

# ProfileError is re-exported: start-up loads the profile and catches its error from one module.
__all__ = [
    "CLIENTLESS_DEFAULT",
    "DEFAULT_PROFILE",
    "GroupPlugins",
    "Profile",
    "ProfileError",
    "load_profile",
]

WITH_DATASET: Final = "withDataset"
WITHOUT_DATASET: Final = "withoutDataset"
_TOP: Final = "plugins"
_CONFIG: Final = "pluginConfig"

# What manifests ship (ConfigMap webhook-plugins). Clientless pods get their runtime config; serverful
# pods (labelled fuse.serverful.fluid.io/inject, or asking for nothing: the propagation entry) get
# host-to-container propagation on the mounts of the CSI driver's volumes and, with a Fluid PVC, the
# in-use annotation, and with a Dataset's PVC the nodes where its client may run required and a
# preference for the nodes caching it (required when the pod asks, fluid.io/dataset.{name}.sched:
# required); serverless pods only the annotation until a FUSE
# sidecar plugin exists. PreferNodesWithoutCache (upstream's serverful withoutDataset) is left out: every
# pod mounting any claim reaches that group here (the propagation entry), not only pods of Fluid's
# namespaces as upstream's. A
# clientless pod that also mounts a volume of the driver gets the propagation too.
DEFAULT_PROFILE: Final = """\
plugins:
  clientless:
    withDataset: [RuntimeConfigInjector, MountPropagationInjector]
    withoutDataset: []
  serverful:
    withDataset: [MountPropagationInjector, RequireNodeWithFuse, NodeAffinityWithCache, DatasetUsageInjector]
    withoutDataset: [MountPropagationInjector]
  serverless:
    withDataset: [DatasetUsageInjector]
    withoutDataset: []
pluginConfig:
  - name: NodeAffinityWithCache
    args: |
      preferred:
        - name: fluid.io/node
          weight: 100
      required:
        - fluid.io/node
"""
CLIENTLESS_DEFAULT: Final[Mapping[str, tuple[str, ...]]] = {
    WITH_DATASET: ("RuntimeConfigInjector", "MountPropagationInjector"),
    WITHOUT_DATASET: (),
}


@dataclass(frozen=True, slots=True)
class GroupPlugins:
    with_dataset: tuple[Plugin, ...] = ()
    without_dataset: tuple[Plugin, ...] = ()


@dataclass(frozen=True, slots=True)
class Profile:
    groups: Mapping[Group, GroupPlugins]

    def plugins(self, group: Group, *, with_dataset: bool) -> tuple[Plugin, ...]:
        chosen = self.groups.get(group, GroupPlugins())
        return chosen.with_dataset if with_dataset else chosen.without_dataset

    def describe(self) -> dict[str, dict[str, list[str]]]:
        """Plugin names per group, in the file's shape: for start-up logs."""
        return {
            group: {
                WITH_DATASET: [p.name for p in plugins.with_dataset],
                WITHOUT_DATASET: [p.name for p in plugins.without_dataset],
            }
            for group, plugins in self.groups.items()
        }


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ProfileError(f"plugin profile: {where} must be a mapping, not {type(value).__name__}")
    return value


def _names(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ProfileError(f"plugin profile: {where} must be a list of plugin names")
    seen: set[str] = set()
    for item in value:
        if item in seen:
            raise ProfileError(f'plugin profile: {where} lists plugin "{item}" twice')
        seen.add(item)
    return value


def _reject_unknown(keys: Any, known: tuple[str, ...], where: str) -> None:
    unknown = [str(key) for key in keys if key not in known]
    if unknown:
        raise ProfileError(
            f"plugin profile: unknown key {', '.join(repr(k) for k in unknown)} in {where}; "
            f"known: {', '.join(known)}"
        )


def _plugin_config(value: Any, configured: Mapping[str, ConfiguredFactory]) -> dict[str, str]:
    """``pluginConfig``: each entry's args by plugin name (upstream's list of {name, args})."""
    if value is None:
        return {}
    if not isinstance(value, list):
        raise ProfileError(f"plugin profile: {_CONFIG} must be a list of {{name, args}}")
    args: dict[str, str] = {}
    for entry in value:
        where = f"{_CONFIG} entry {entry!r}"
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ProfileError(f"plugin profile: {where} must be a mapping with a name")
        _reject_unknown(entry, ("name", "args"), where)
        name = entry["name"]
        if name not in configured:
            raise ProfileError(
                f'plugin profile: {_CONFIG} configures "{name}", which takes no args; '
                f"plugins with args: {', '.join(sorted(configured))}"
            )
        if name in args:
            raise ProfileError(f'plugin profile: {_CONFIG} configures "{name}" twice')
        given = entry.get("args") or ""
        if not isinstance(given, str):
            raise ProfileError(f'plugin profile: {_CONFIG} "{name}": args must be a YAML string (args: |)')
        args[name] = given
    return args


def load_profile(
    text: str,
    registry: Mapping[str, PluginFactory] = PLUGINS,
    configured: Mapping[str, ConfiguredFactory] = CONFIGURED,
) -> tuple[Profile, list[str]]:
    """Parse and resolve a profile; returns it with warnings to log. Raises ProfileError."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ProfileError(f"plugin profile is not valid YAML: {error}") from error
    top = _mapping(document, "the document")
    _reject_unknown(top, (_TOP, _CONFIG), "the document")
    sections = _mapping(top.get(_TOP), _TOP)
    _reject_unknown(sections, GROUPS, _TOP)
    plugin_args = _plugin_config(top.get(_CONFIG), configured)

    warnings: list[str] = []
    instances: dict[str, Plugin] = {}

    def resolve(names: list[str], where: str) -> tuple[Plugin, ...]:
        for name in names:
            if name not in registry:
                raise ProfileError(
                    f'plugin profile: unknown plugin "{name}" in {where}; '
                    f"known plugins: {', '.join(sorted(registry))}"
                )
            if name not in instances:
                made = plugin_args.get(name)
                instances[name] = registry[name]() if made is None else configured[name](made)
        return tuple(instances[name] for name in names)

    groups: dict[Group, GroupPlugins] = {}
    for group in GROUPS:
        section = sections.get(group)
        if group == CLIENTLESS and not section:
            warnings.append(
                f'plugin profile has no "{CLIENTLESS}" section: using {WITH_DATASET} '
                f"[{', '.join(CLIENTLESS_DEFAULT[WITH_DATASET])}], {WITHOUT_DATASET} []"
            )
            section = {key: list(value) for key, value in CLIENTLESS_DEFAULT.items()}
        where = f"{_TOP}.{group}"
        section = _mapping(section, where)
        _reject_unknown(section, (WITH_DATASET, WITHOUT_DATASET), where)
        with_where = f"{where}.{WITH_DATASET}"
        with_dataset = resolve(_names(section.get(WITH_DATASET), with_where), with_where)
        without_names = _names(section.get(WITHOUT_DATASET), f"{where}.{WITHOUT_DATASET}")
        if group == CLIENTLESS and without_names:
            resolve(without_names, f"{where}.{WITHOUT_DATASET}")  # still a typo check
            warnings.append(
                f"plugin profile: {where}.{WITHOUT_DATASET} is ignored ({', '.join(without_names)}): "
                "a clientless pod without datasets is admitted unchanged"
            )
            without_names = []
        without_dataset = resolve(without_names, f"{where}.{WITHOUT_DATASET}")
        groups[group] = GroupPlugins(with_dataset, without_dataset)
    return Profile(groups), warnings
