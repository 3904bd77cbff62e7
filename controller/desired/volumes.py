"""Volumes and mounts of a component's pods: the runtime config, the Secrets behind encrypt options,
and the tiered-store levels (SPEC §2, §3).

Decisions where SPEC is silent:
- Every component (master, worker, client) mounts every Secret the Dataset references: runtime.json
  hands each component the same encrypt option paths. Only the referenced keys are projected
  (``items``), so unrelated keys of a shared Secret stay out of the pod, and a missing key shows up
  as a pod event instead of a silently missing file.
- Tiered-store levels of worker and client: ``emptyDir`` (its medium; ``sizeLimit`` = quota when set)
  at the generated path runtime.json announces; ``hostPath`` (``DirectoryOrCreate``) at its own path;
  ``processMemory`` needs no volume.
- Volumes are sorted by name and mounts by path, so equal inputs give equal bytes (and a parent
  directory is always mounted before anything under it).
- Two mounts on one path would be refused by the API server; they are refused here with the
  component's name.
"""

from __future__ import annotations

import itertools
from typing import Any

from controller.desired.scope import Scope
from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import CachingComponentSpec, TieredStoreLevel
from kubectl_fluid.api.dataset import Dataset
from kubectl_fluid.runtimeconfig import RuntimeConfigError

Volume = dict[str, Any]
VolumeMount = dict[str, Any]


def component_volumes(scope: Scope, component: names.Component) -> tuple[list[Volume], list[VolumeMount]]:
    pairs = [_config_volume(scope)]
    pairs += [_secret_volume(secret, keys) for secret, keys in secret_references(scope.dataset).items()]
    spec = scope.spec(component)
    if isinstance(spec, CachingComponentSpec) and spec.tiered_store:
        for index, level in enumerate(spec.tiered_store.levels):
            pair = _level_volume(index, level)
            if pair is not None:
                pairs.append(pair)
    volumes = sorted((v for v, _ in pairs), key=lambda v: str(v["name"]))
    mounts = sorted((m for _, m in pairs), key=lambda m: str(m["mountPath"]))
    for before, after in itertools.pairwise(mounts):
        if before["mountPath"] == after["mountPath"]:
            raise RuntimeConfigError(
                f"{component} of {scope.runtime_ref()}: volumes {before['name']} and {after['name']} "
                f"would both mount at {after['mountPath']}; give tiered-store hostPath levels distinct "
                f"paths outside {names.COMPONENT_CONFIG_DIR} and {names.SECRETS_ROOT}"
            )
    return volumes, mounts


def secret_references(dataset: Dataset) -> dict[str, list[str]]:
    """Secret name → sorted keys, over sharedEncryptOptions and every mount's encryptOptions."""
    options = [*dataset.spec.shared_encrypt_options]
    for mount in dataset.spec.mounts:
        options += mount.encrypt_options
    keys: dict[str, set[str]] = {}
    for option in options:
        ref = option.value_from.secret_key_ref
        keys.setdefault(ref.name, set()).add(ref.key)
    return {secret: sorted(keys[secret]) for secret in sorted(keys)}


def _config_volume(scope: Scope) -> tuple[Volume, VolumeMount]:
    volume = {
        "name": names.COMPONENT_CONFIG_VOLUME,
        "configMap": {"name": names.runtime_config_configmap(scope.name)},
    }
    mount = {"name": names.COMPONENT_CONFIG_VOLUME, "mountPath": names.COMPONENT_CONFIG_DIR, "readOnly": True}
    return volume, mount


def _secret_volume(secret: str, keys: list[str]) -> tuple[Volume, VolumeMount]:
    name = names.secret_volume(secret)
    volume = {
        "name": name,
        "secret": {"secretName": secret, "items": [{"key": key, "path": key} for key in keys]},
    }
    return volume, {"name": name, "mountPath": names.secret_mount_dir(secret), "readOnly": True}


def _level_volume(index: int, level: TieredStoreLevel) -> tuple[Volume, VolumeMount] | None:
    name = names.tiered_store_volume(index)
    medium = level.medium
    if medium.host_path is not None:
        source = {"hostPath": {"path": medium.host_path.path, "type": "DirectoryOrCreate"}}
        return {"name": name, **source}, {"name": name, "mountPath": medium.host_path.path}
    if medium.empty_dir is not None:
        empty_dir: dict[str, str] = {}
        if medium.empty_dir.medium:
            empty_dir["medium"] = medium.empty_dir.medium
        if level.quota:
            empty_dir["sizeLimit"] = level.quota
        return {"name": name, "emptyDir": empty_dir}, {
            "name": name,
            "mountPath": names.tiered_store_mount_path(index),
        }
    return None
