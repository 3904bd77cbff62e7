"""Tiered-store levels of a worker or client pod, as upstream builds them
(``transform_tiered_store.go``), on the first container:

- ``processMemory``: an emptyDir of medium Memory sized by the quota, at ``/dev/shm``;
- ``emptyDir``: an emptyDir of the level's medium sized by the quota, at
  ``/etc/fluid/mount/tiered-store/level-{i}-index-0-emptydir``;
- ``hostPath``: one hostPath volume per path (of the level's ``type``), at
  ``…/level-{i}-index-{j}-hostpath``.

A memory level's quota (processMemory, or an emptyDir of medium Memory) is added to the container's
memory request and limit, each only when the container already has a non-zero one: a container
without a memory limit keeps none. The paths are the ones runtime.json announces. The levels were
checked in upstream's words (two processMemory levels, a level with more than one medium, a zero
quota, paths and quotas that differ in number) by the runtime config's build
(``kubectl_fluid.runtimeconfig.tiers``), which ``make_scope`` runs before any pod is built.
"""

from __future__ import annotations

from typing import Any

from controller.desired.podspec import Json, add_mount, add_volume
from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import RuntimeTieredStoreLevel
from kubectl_fluid.api.quantity import Quantity, QuantityError


def apply_tiered_store(pod: Json, container: Json, levels: list[RuntimeTieredStoreLevel]) -> None:
    """Levels already checked by the runtime config's build (see the module's docstring)."""
    for index, level in enumerate(levels):
        if level.process_memory is not None:
            size = str(Quantity.of(level.process_memory.quota))
            _add_memory(container, size)
            _put(
                pod,
                container,
                names.memory_tier_volume(index),
                names.PROCESS_MEMORY_MOUNT_PATH,
                {"emptyDir": {"medium": names.EMPTY_DIR_MEMORY, "sizeLimit": size}},
            )
        elif level.host_path is not None:
            host = level.host_path
            for j, path in enumerate(host.paths):
                source: dict[str, Any] = {"path": path}
                if host.type:
                    source["type"] = host.type
                _put(
                    pod,
                    container,
                    names.tier_volume(index, j),
                    names.host_path_tier_mount_path(index, j),
                    {"hostPath": source},
                )
        elif level.empty_dir is not None:
            empty = level.empty_dir
            size = str(Quantity.of(empty.quota))
            empty_dir: dict[str, Any] = {"sizeLimit": size}
            if empty.medium:
                empty_dir["medium"] = empty.medium
            if empty.medium == names.EMPTY_DIR_MEMORY:
                _add_memory(container, size)
            _put(
                pod,
                container,
                names.tier_volume(index, 0),
                names.empty_dir_tier_mount_path(index),
                {"emptyDir": empty_dir},
            )


def _add_memory(container: Json, size: str) -> None:
    resources = container.get("resources") or {}
    for kind in ("requests", "limits"):
        amounts = resources.get(kind) or {}
        given = amounts.get("memory")
        if isinstance(given, bool) or not isinstance(given, int | str):
            continue
        try:
            memory = Quantity.of(given)
        except QuantityError:
            continue  # not a quantity: the API server refuses the workload with its own message
        if not memory.is_zero():
            amounts["memory"] = str(memory + Quantity.of(size))


def _put(pod: Json, container: Json, name: str, path: str, source: Json) -> None:
    add_volume(pod, {"name": name, **source})
    add_mount(container, {"name": name, "mountPath": path})
