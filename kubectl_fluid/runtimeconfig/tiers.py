"""A component's tiered store: upstream's checks of its levels, and each level as runtime.json
describes it to the cache (``tieredStoreLevels``).

Upstream checks the levels when it builds the component's pod, before anything is created; a
level it refuses never reaches a runtime.json. The same checks run here, on every component that
runs (the worker and the client have tiered stores), so a bad level is a condition on the runtime
before any child exists, with upstream's words and the field to change.
"""

from __future__ import annotations

from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntime import RuntimeTieredStoreLevel
from kubectl_fluid.api.quantity import Quantity, QuantityError
from kubectl_fluid.runtimeconfig.errors import InvalidTieredStore
from kubectl_fluid.runtimeconfig.model import TieredStoreLevelConfig


def tier_levels(
    runtime: str, component: names.Component, levels: list[RuntimeTieredStoreLevel]
) -> list[TieredStoreLevelConfig]:
    """The levels of CacheRuntime ``runtime``'s ``component``; raises InvalidTieredStore, naming the
    field, for a level upstream refuses."""
    field = f'CacheRuntime "{runtime}" spec.{component}.tieredStore.levels'
    if sum(level.process_memory is not None for level in levels) > 1:
        raise InvalidTieredStore(
            f"{field}: RuntimeTieredStore should have only one ProcessMemoryMediumSource for all levels: "
            "a component has one process memory; keep one processMemory level"
        )
    for i, level in enumerate(levels):
        media = level.media()
        if len(media) > 1:
            raise InvalidTieredStore(
                f"{field}[{i}]: only one storage medium can be specified per level at index {i}, but found "
                f"{len(media)} ({', '.join(media)}); make each its own level"
            )
    return [_level(f"{field}[{i}]", i, level) for i, level in enumerate(levels)]


def _quota(field: str, value: int | str) -> Quantity:
    try:
        return Quantity.of(value)
    except QuantityError as bad:
        raise InvalidTieredStore(f"{field}: {bad}") from None


def _level(field: str, index: int, level: RuntimeTieredStoreLevel) -> TieredStoreLevelConfig:
    # A level without a medium is still described, as upstream does: HDD, no path, no quota.
    medium: str = names.MEDIUM_DISK
    paths: list[str] = []
    quotas: list[Quantity] = []
    if level.process_memory is not None:
        quota = _quota(f"{field}.processMemory.quota", level.process_memory.quota)
        if quota.is_zero():
            raise InvalidTieredStore(
                f"{field}.processMemory.quota: process memory quota cannot be zero at level index {index}"
            )
        medium, paths, quotas = names.MEDIUM_MEMORY, [names.PROCESS_MEMORY_MOUNT_PATH], [quota]
    elif level.host_path is not None:
        host = level.host_path
        if len(host.paths) != len(host.quotas):
            raise InvalidTieredStore(
                f"{field}.hostPath: number of paths and quotas must be equal at level index {index} "
                f"({len(host.paths)} paths, {len(host.quotas)} quotas): give each path its quota"
            )
        paths = [names.host_path_tier_mount_path(index, j) for j in range(len(host.paths))]
        quotas = [_quota(f"{field}.hostPath.quotas[{j}]", q) for j, q in enumerate(host.quotas)]
    elif level.empty_dir is not None:
        quota = _quota(f"{field}.emptyDir.quota", level.empty_dir.quota)
        if quota.is_zero():
            raise InvalidTieredStore(
                f"{field}.emptyDir.quota: emptyDir quota cannot be zero for empty dir medium source at "
                f"level index {index}"
            )
        if level.empty_dir.medium == names.EMPTY_DIR_MEMORY:
            medium = names.MEDIUM_MEMORY
        paths, quotas = [names.empty_dir_tier_mount_path(index)], [quota]
    return TieredStoreLevelConfig(
        mount_paths=paths,
        medium_type=medium,
        quotas=[str(q) for q in quotas],
        high=level.high or "",
        low=level.low or "",
    )
