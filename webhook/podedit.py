"""Copy-on-write editing of a pod on the admission hot path.

``working_copy`` copies only the parts plugins may change: the pod, ``metadata``, its ``labels``
and ``annotations``, ``spec``, ``spec.volumes``, ``spec.containers`` and ``spec.initContainers``, each
container, and each container's ``env`` and ``volumeMounts``. Everything else, including every element
of those lists (a volume, an env var, a mount), is shared with the original pod. The contract for
plugins follows: change the copied containers freely, but *replace* a shared element instead of editing
it (``upsert`` does). That keeps the original intact, so the JSON patch is a diff of the two, and makes
the diff cheap: unchanged parts are the same objects and compare by identity.

Absent (or null) parents are not created by the copy; the accessors below create them when a plugin
writes, so a pod the plugins leave alone yields an empty patch.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from typing import Any

from kubectl_fluid.api import names

_CONTAINER_LISTS = ("containers", "initContainers")
# Whether an entry already in the pod (first) is as good as the one wanted (second).
Same = Callable[[dict[str, Any], dict[str, Any]], bool]


def _copy_container(container: dict[str, Any]) -> dict[str, Any]:
    copy = dict(container)
    for key in ("env", "volumeMounts"):
        items = copy.get(key)
        if items is not None:
            copy[key] = list(items)
    return copy


def working_copy(pod: dict[str, Any]) -> dict[str, Any]:
    """A pod plugins may edit under the contract above; ``pod`` itself is never changed."""
    work = dict(pod)
    meta = work.get("metadata")
    if meta is not None:
        meta = work["metadata"] = dict(meta)
        for key in ("labels", "annotations"):
            if meta.get(key) is not None:
                meta[key] = dict(meta[key])
    spec = work.get("spec")
    if spec is not None:
        spec = work["spec"] = dict(spec)
        if spec.get("volumes") is not None:
            spec["volumes"] = list(spec["volumes"])
        for key in _CONTAINER_LISTS:
            containers = spec.get(key)
            if containers is not None:
                spec[key] = [_copy_container(c) for c in containers]
    return work


def _child_dict(parent: dict[str, Any], key: str) -> dict[str, Any]:
    child = parent.get(key)
    if child is None:
        child = parent[key] = {}
    return child


def _child_list(parent: dict[str, Any], key: str) -> list[Any]:
    child = parent.get(key)
    if child is None:
        child = parent[key] = []
    return child


# Accessors for writing: each returns the working copy's own map or list, created when absent.
def labels_of(pod: dict[str, Any]) -> dict[str, Any]:
    return _child_dict(_child_dict(pod, "metadata"), "labels")


def annotations_of(pod: dict[str, Any]) -> dict[str, Any]:
    return _child_dict(_child_dict(pod, "metadata"), "annotations")


def volumes_of(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return _child_list(_child_dict(pod, "spec"), "volumes")


def env_of(container: dict[str, Any]) -> list[dict[str, Any]]:
    return _child_list(container, "env")


def volume_mounts_of(container: dict[str, Any]) -> list[dict[str, Any]]:
    return _child_list(container, "volumeMounts")


def app_containers(pod: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Containers and init containers of the working copy, minus Fluid's FUSE sidecars
    (``fluid-fuse*``): they serve the data and are configured by whoever injects them."""
    spec = pod.get("spec") or {}
    for key in _CONTAINER_LISTS:
        for container in spec.get(key) or ():
            if not container.get("name", "").startswith(names.FUSE_CONTAINER_PREFIX):
                yield container


def upsert(
    items: list[dict[str, Any]], wanted: dict[str, Any], matches: list[int], same: Same = operator.eq
) -> None:
    """Make ``wanted`` the one entry of ``items`` at the ``matches`` positions (ascending; see
    ``named``): the first match is replaced in place (kept when ``same`` as wanted, so a second run
    changes nothing), later matches are dropped (for env, the last duplicate would win in the kubelet),
    and with no match ``wanted`` is appended."""
    if not matches:
        items.append(wanted)
        return
    first = matches[0]
    if not same(items[first], wanted):
        items[first] = wanted
    for index in reversed(matches[1:]):
        del items[index]


def named(items: list[dict[str, Any]], name: str) -> list[int]:
    """Positions of the entries (volumes, env vars) called ``name``."""
    # A comprehension, not a predicate callback: this runs per container, env name and dataset.
    return [index for index, item in enumerate(items) if item.get("name") == name]


def merge_named(
    items: list[dict[str, Any]], wanted: dict[str, dict[str, Any]], same: Same = operator.eq
) -> None:
    """``upsert`` each of ``wanted`` (by name, in order). Usually none is present yet: then one scan
    and one extend do it, which matters on the hot path (per container, for every env var)."""
    if not items or not any(item.get("name") in wanted for item in items):
        items.extend(wanted.values())
        return
    for name, entry in wanted.items():
        upsert(items, entry, named(items, name), same)
