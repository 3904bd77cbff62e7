"""RuntimeConfigInjector (SPEC §4): hand each dataset's runtime config to the application, as a
read-only ConfigMap volume and env vars pointing at its runtime.sh (and at its runtime-scoped.sh, whose
names carry the dataset, when the ConfigMap has it); no dataset volume, no FUSE.

Entries the injector owns are replaced, never duplicated, so a second run changes nothing: volumes
and env vars by name; mounts by volume name *and* by mount path, since the API server refuses two
mounts at one path in a container. An entry that is already right is kept as it is, the volume as
the API server defaults it included: on reinvocation (a later webhook added a container) only what
is missing is added.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Final

from kubectl_fluid.api import datasetrefs, names
from webhook import podedit
from webhook.denials import some
from webhook.errors import Denied
from webhook.plugins.base import Context

Entries = dict[str, dict[str, Any]]
# The problems named in full in one denial; the rest are counted (SPEC §4: denials under 1 KiB).
_PROBLEMS_BUDGET: Final = 600
# What the API server sets on a configMap volume without a mode (0644), after our patch too.
_DEFAULT_MODE: Final = 0o644


# Stands in for a runtime config ConfigMap that has runtime-scoped.sh, for ``datasetrefs.config_env``.
_SCOPED_CONFIGMAP: Final = {"data": {names.RUNTIME_SCOPED_SH_KEY: ""}}


@dataclass(frozen=True, slots=True)
class _Wanted:
    """What the injection of one dataset adds: its volume, its mount (by path without the trailing
    "/"), its env entries, and the name of its scoped env var."""

    volume: str
    volume_entry: dict[str, Any]
    mount_path: str
    mount: dict[str, Any]
    env: tuple[tuple[str, dict[str, Any]], ...]
    scoped_env: str


@functools.lru_cache(maxsize=4096)
def _wanted(dataset: str, scoped: bool) -> _Wanted:
    """Built once per dataset and form and shared by every admission after (issue 33: building them
    cost a few microseconds of each admission). Safe because nothing edits them: plugins replace the
    elements of the working copy's lists, never change one (webhook/podedit.py), and the patch only
    serialises them."""
    volume = names.runtime_config_volume(dataset)
    mount_path = names.pod_config_dir(dataset)
    env = datasetrefs.config_env(dataset, _SCOPED_CONFIGMAP if scoped else None)
    return _Wanted(
        volume=volume,
        volume_entry={"name": volume, "configMap": {"name": names.runtime_config_configmap(dataset)}},
        mount_path=mount_path.rstrip("/"),
        mount={"name": volume, "mountPath": mount_path, "readOnly": True},
        env=tuple((name, {"name": name, "value": path}) for name, path in env),
        scoped_env=names.scoped_config_env_name(dataset),
    )


def _problem(ctx: Context, dataset: str) -> str | None:
    """Why ``dataset`` cannot be injected yet, as a sentence for the pod's author, or None."""
    found = ctx.lookup.dataset(ctx.namespace, dataset)
    if found is None:
        return datasetrefs.dataset_not_found(dataset, ctx.namespace)
    configmap = ctx.lookup.configmap(ctx.namespace, names.runtime_config_configmap(dataset))
    problem = datasetrefs.configmap_problem(dataset, configmap)
    if configmap is not None:
        return problem  # there, served or refused for what it lacks, as before
    # Missing: told by its cause when the controller knows one (issue 28, item 7), as a class not
    # found says more than the ConfigMap it kept from being written.
    return datasetrefs.deepest_problem(dataset, problem, datasetrefs.not_ready_cause(found))


class RuntimeConfigInjector:
    name: Final = "RuntimeConfigInjector"

    def mutate(self, pod: dict[str, Any], ctx: Context) -> None:
        if not ctx.datasets:
            return
        # Validate everything before the first edit: a refusal must leave nothing behind, and naming
        # every problem at once saves the author a round trip per dataset.
        problems = [problem for ds in ctx.datasets if (problem := _problem(ctx, ds)) is not None]
        if problems:
            raise Denied(some(problems, "; ", _PROBLEMS_BUDGET, "{n} more datasets not ready"))

        # Every wanted entry is built once per dataset (``_wanted``) and shared by all containers and
        # admissions: elements of the working copy's lists are replaced, never edited (podedit).
        volumes: Entries = {}
        mounts: Entries = {}
        mount_paths: dict[str, str] = {}  # mount path without its trailing "/" -> volume
        env: Entries = {}
        env_owner: dict[str, str] = {}
        for dataset in ctx.datasets:
            configmap = ctx.lookup.configmap(ctx.namespace, names.runtime_config_configmap(dataset))
            wanted = _wanted(dataset, datasetrefs.has_scoped_form(configmap))
            volumes[wanted.volume] = wanted.volume_entry
            mounts[wanted.volume] = wanted.mount
            mount_paths[wanted.mount_path] = wanted.volume
            for env_name, entry in wanted.env:
                warn = _warn_shared_scoped_name if env_name == wanted.scoped_env else _warn_shared_env_name
                warn(ctx, env_owner.get(env_name), dataset, env_name)
                env_owner[env_name] = dataset
                env[env_name] = entry

        podedit.merge_named(podedit.volumes_of(pod), volumes, _same_volume)
        for container in list(podedit.app_containers(pod)):
            _merge_mounts(podedit.volume_mounts_of(container), mounts, mount_paths)
            podedit.merge_named(podedit.env_of(container), env)
        podedit.labels_of(pod)[names.LABEL_INJECT_DONE] = names.TRUE


def _warn_shared_scoped_name(ctx: Context, previous: str | None, dataset: str, env_name: str) -> None:
    # ``ds-1`` and ``ds.1`` share FLUID_SCOPED_CONFIG_PATH_DS_1 and, inside the files, every FLUID_DS_1_*
    # name: no other name of the scoped form tells them apart.
    if previous is not None:
        ctx.warnings.append(
            f'datasets "{previous}" and "{dataset}" both map to {env_name} and to the same '
            f'{names.scoped_variable_prefix(dataset)}* names, which are "{dataset}"\'s; source '
            f'"{previous}"\'s runtime.sh ({names.runtime_config_env_names(previous)[0]}) on its own'
        )


def _same_volume(have: dict[str, Any], want: dict[str, Any]) -> bool:
    """``have`` is ``want``, or ``want`` as the API server stored it (with the default mode)."""
    if have == want:
        return True
    source = have.get("configMap")
    return (
        isinstance(source, dict)
        and source.get("defaultMode") == _DEFAULT_MODE
        and have == {**want, "configMap": {**want["configMap"], "defaultMode": _DEFAULT_MODE}}
    )


def _warn_shared_env_name(ctx: Context, previous: str | None, dataset: str, env_name: str) -> None:
    # ``ds-1`` and ``ds.1`` both make the shell-safe FLUID_RUNTIME_CONFIG_PATH_DS_1; the later dataset
    # (in sorted order) wins it, and the author should know to use the verbatim name for the other.
    if previous is not None:
        ctx.warnings.append(
            f'datasets "{previous}" and "{dataset}" both map to the env name {env_name}, which points at '
            f'"{dataset}"; use {names.runtime_config_env_names(previous)[0]} for "{previous}"'
        )


def _merge_mounts(items: list[dict[str, Any]], mounts: Entries, paths: dict[str, str]) -> None:
    def owner(mount: dict[str, Any]) -> str | None:
        """The injected volume whose mount this one collides with, by volume name or by path."""
        name = mount.get("name")
        if isinstance(name, str) and name in mounts:
            return name
        return paths.get(str(mount.get("mountPath", "")).rstrip("/"))

    # Usually nothing collides: one scan and one extend, as this runs for every container.
    if not items or all(owner(mount) is None for mount in items):
        items.extend(mounts.values())
        return
    for volume, mount in mounts.items():
        podedit.upsert(items, mount, [i for i, existing in enumerate(items) if owner(existing) == volume])
