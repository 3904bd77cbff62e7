"""Who holds back a deletion (pure): the pods that use a Dataset, the CacheRuntimes that name a
CacheRuntimeClass, and the words that say so.

A pod uses a Dataset in any of three ways, and each keeps its deletion waiting: it mounts the
Dataset's PVC (the CSI path); it has the Dataset's runtime-config ConfigMap as a volume (what the
webhook's RuntimeConfigInjector gives a clientless pod, whatever the profile records besides); or the
webhook recorded the Dataset in ``fluid.io/datasets-in-use``. Pods that have finished
(Succeeded/Failed) use nothing, and neither do the runtime's own component pods, which mount the
runtime config too and go with the runtime. Upstream Fluid refuses the same way while any active pod uses a
volume Fluid made.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubectl_fluid.api import names

# How many names a message lists before it says "and N more".
SHOWN = 5


def uses_dataset(pod: dict[str, Any], dataset: str) -> bool:
    if _finished(pod) or _component_of(pod, dataset):
        return False
    claim, configmap = names.dataset_pvc(dataset), names.runtime_config_configmap(dataset)
    for volume in _volumes(pod):
        if (volume.get("persistentVolumeClaim") or {}).get("claimName") == claim:
            return True
        if (volume.get("configMap") or {}).get("name") == configmap:
            return True
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    recorded = annotations.get(names.ANNOTATION_DATASETS_IN_USE) or ""
    return dataset in {part.strip() for part in recorded.split(",")}


def dataset_users(pods: Iterable[dict[str, Any]], dataset: str) -> list[str]:
    """The names of the pods (of the Dataset's namespace) that use ``dataset``, sorted."""
    return sorted({pod["metadata"]["name"] for pod in pods if uses_dataset(pod, dataset)})


def pvc_users(pods: Iterable[dict[str, Any]], claim: str) -> list[str]:
    """The names of the pods that mount PVC ``claim``, sorted."""
    return sorted(
        {
            pod["metadata"]["name"]
            for pod in pods
            if not _finished(pod)
            and any((v.get("persistentVolumeClaim") or {}).get("claimName") == claim for v in _volumes(pod))
        }
    )


class ClassIndex:
    """Which CacheRuntimes name which class, kept up to date from the runtime watch's events
    (``update``), so the users of a class are found without reading every runtime of the cache.
    Runtimes being deleted count until they are gone: their workloads run until then."""

    def __init__(self) -> None:
        self._class_of: dict[tuple[str, str], str] = {}
        self._users: dict[str, set[tuple[str, str]]] = {}

    def update(self, runtime: tuple[str, str], runtime_class: str | None) -> str | None:
        """Record that ``runtime`` (namespace, name) names ``runtime_class`` (None: it is gone);
        return the class it named before."""
        before = self._class_of.pop(runtime, None)
        if before is not None:
            self._users[before].discard(runtime)
            if not self._users[before]:
                del self._users[before]
        if runtime_class is not None:
            self._class_of[runtime] = runtime_class
            self._users.setdefault(runtime_class, set()).add(runtime)
        return before

    def users(self, runtime_class: str) -> list[str]:
        """``namespace/name`` of the runtimes that name ``runtime_class``, sorted."""
        return sorted(f"{namespace}/{name}" for namespace, name in self._users.get(runtime_class, ()))


def shown(items: list[str]) -> str:
    """A few names and how many there are: ``a, b, c, d, e and 3 more (8)``."""
    head = ", ".join(items[:SHOWN])
    if len(items) <= SHOWN:
        return head
    return f"{head} and {len(items) - SHOWN} more ({len(items)})"


def dataset_in_use_message(dataset: str, users: list[str]) -> str:
    return (
        f"deletion waits for {len(users)} pod(s) that use Dataset {dataset} (its PVC "
        f"{names.dataset_pvc(dataset)} or its injected runtime config): {shown(users)}; delete those "
        "pods (or their controllers) to let the Dataset go"
    )


def class_in_use_message(runtime_class: str, users: list[str]) -> str:
    return (
        f'CacheRuntimeClass "{runtime_class}" is being deleted and waits for {len(users)} CacheRuntime(s) '
        f"that use it: {shown(users)}; delete those CacheRuntimes (or their Datasets), or set their "
        "spec.runtimeClassName to another class, to let it go"
    )


def _finished(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _volumes(pod: dict[str, Any]) -> list[dict[str, Any]]:
    volumes: list[dict[str, Any]] = (pod.get("spec") or {}).get("volumes") or []
    return volumes


def _component_of(pod: dict[str, Any], dataset: str) -> bool:
    """A pod of the Dataset's own CacheRuntime (same name, same namespace): its master, workers or
    client, labelled so by the workloads the controller made."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return labels.get(names.LABEL_CACHERUNTIME_NAME) == dataset
