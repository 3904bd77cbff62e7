"""How a pod names the datasets it wants, and how a dataset's PVC is recognised: the rules the
webhook applies at admission and the plugin explains afterwards, kept in one place so they agree.
Pure functions over the API's JSON; only ``names`` is imported (the plugin's start-up)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_fluid.api import names

DATASET_ANNOTATIONS = (names.ANNOTATION_DATASET, names.ANNOTATION_DATASETS)
# The phase of a Dataset the controller could not set up (upstream Fluid's word).
NOT_BOUND = "NotBound"


def split_datasets(value: str | None) -> list[str]:
    """Comma-separated entries, trimmed, empty ones dropped, de-duplicated, sorted."""
    if not value:
        return []
    return sorted({part.strip() for part in value.split(",")} - {""})


def requested_datasets(annotations: Mapping[str, str] | None) -> list[str]:
    """Entries of ``fluid.io/dataset`` and its alias ``fluid.io/datasets`` (both read when both are
    set). Entries are returned as written, so a ``namespace/name`` reference stays visible."""
    if not annotations:
        return []
    found: set[str] = set()
    for key in DATASET_ANNOTATIONS:
        found.update(split_datasets(annotations.get(key)))
    return sorted(found)


def is_dataset_pvc(pvc: Mapping[str, Any]) -> bool:
    """A PVC the controller made for a dataset: it carries ``fluid.io/s-…`` or ``fluid.io/dataset-id``.
    Presence is what counts; the values are not parsed (see ``names.dataset_id``)."""
    labels = (pvc.get("metadata") or {}).get("labels")
    if not labels:
        return False
    return names.LABEL_DATASET_ID in labels or any(names.is_dataset_pvc_label(key) for key in labels)


def dataset_not_found(dataset: str, namespace: str) -> str:
    return f'dataset "{dataset}" not found in namespace "{namespace}"'


def not_ready_cause(dataset: Mapping[str, Any] | None) -> str | None:
    """Why the controller could not set a Dataset up (its Ready condition's message while the Dataset
    is NotBound), or None: the cause beneath a missing ConfigMap, a CacheRuntimeClass not found say.
    A Bound Dataset's Ready=False (its deletion waiting for users) says nothing against its config."""
    status = (dataset or {}).get("status") or {}
    if status.get("phase") != NOT_BOUND:
        return None
    for condition in status.get("conditions") or ():
        if condition.get("type") == names.CONDITION_READY and condition.get("status") == "False":
            message = condition.get("message") or condition.get("reason")
            if message:
                return str(message)
    return f"the Dataset is {NOT_BOUND} (kubectl describe dataset says why)"


def deepest_problem(dataset: str, configmap_problem: str | None, cause: str | None) -> str | None:
    """A ConfigMap problem told by its cause when the controller knows one (``not_ready_cause``); a
    cause alone is a problem too (the config of a Dataset that is not Bound is not to be trusted)."""
    if cause is None:
        return configmap_problem
    return f'runtime config for dataset "{dataset}" is not ready: {cause}'


def configmap_problem(dataset: str, configmap: Mapping[str, Any] | None) -> str | None:
    """Why a dataset's runtime config ConfigMap cannot be injected (yet), or None. A mounted
    ConfigMap projects both maps as files; the controller writes ``data``."""
    name = names.runtime_config_configmap(dataset)
    not_ready = f'runtime config for dataset "{dataset}" is not ready: ConfigMap {name}'
    if configmap is None:
        return f"{not_ready} not found"
    if not has_key(configmap, names.RUNTIME_SH_KEY):
        return f"{not_ready} has no key {names.RUNTIME_SH_KEY}"
    return None


def has_key(configmap: Mapping[str, Any] | None, key: str) -> bool:
    """Whether the ConfigMap holds ``key``, in ``data`` or ``binaryData`` (a mounted ConfigMap
    projects both as files)."""
    configmap = configmap or {}
    return key in (configmap.get("data") or {}) or key in (configmap.get("binaryData") or {})


def has_scoped_form(configmap: Mapping[str, Any] | None) -> bool:
    """Whether a runtime config ConfigMap carries runtime-scoped.sh: one written before the
    controller made it has only runtime.sh, and nothing may point a pod at a file that is not there."""
    return has_key(configmap, names.RUNTIME_SCOPED_SH_KEY)


def config_env(dataset: str, configmap: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """(name, path) of the env vars an app container using ``dataset`` gets (SPEC §4): its runtime.sh
    under every name ``names.runtime_config_env_names()`` gives, then its runtime-scoped.sh when
    ``configmap`` (the dataset's runtime config) has it. The webhook injects these; ``kubectl fluid
    config show --env`` prints them."""
    runtime_sh = names.pod_runtime_sh_path(dataset)
    env = [(name, runtime_sh) for name in names.runtime_config_env_names(dataset)]
    if has_scoped_form(configmap):
        env.append((names.scoped_config_env_name(dataset), names.pod_runtime_scoped_sh_path(dataset)))
    return env
