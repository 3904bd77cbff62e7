"""Where a runtime.sh variable's value comes from, in the fields a user writes, so an error about a
value can name the field to change. Only the variables a user can make long are listed; the rest
(counts, booleans, medium types, names and paths derived from the Dataset's name and the level's
index) are the controller's own.
"""

from __future__ import annotations

import re

_C = r"(?P<c>MASTER|WORKER|CLIENT)"
_LEVEL = rf"{_C}_TIEREDSTORE_LEVEL_(?P<i>\d+)"
_LEVEL_FIELD = "CacheRuntime spec.{c}.tieredStore.levels[{i}]"
_SOURCES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), source)
    for pattern, source in (
        (r"RUNTIME_ACCESSMODE_(?P<i>\d+)", "Dataset spec.accessModes[{i}]"),
        (r"MOUNT_(?P<i>\d+)_NAME", "Dataset spec.mounts[{i}].name"),
        (r"MOUNT_(?P<i>\d+)_PATH", "Dataset spec.mounts[{i}].path (or .name, where path is not absolute)"),
        (r"MOUNT_(?P<i>\d+)_MOUNTPOINT", "Dataset spec.mounts[{i}].mountPoint"),
        (r"MOUNT_(?P<i>\d+)_OPTIONS", "Dataset spec.sharedOptions or spec.mounts[{i}].options"),
        (
            r"MOUNT_(?P<i>\d+)_ENCRYPTOPTIONS",
            "Dataset spec.sharedEncryptOptions or spec.mounts[{i}].encryptOptions",
        ),
        (
            rf"{_C}_OPTIONS",
            "CacheRuntime spec.options or spec.{c}.options, or CacheRuntimeClass topology.{c}.options",
        ),
        # The first quota of a level is its only one unless the level is a hostPath one.
        (
            rf"{_LEVEL}_QUOTA_0",
            _LEVEL_FIELD + ".processMemory.quota, .emptyDir.quota or .hostPath.quotas[0]",
        ),
        (rf"{_LEVEL}_QUOTA_(?P<j>\d+)", _LEVEL_FIELD + ".hostPath.quotas[{j}]"),
        (rf"{_LEVEL}_HIGH", _LEVEL_FIELD + ".high"),
        (rf"{_LEVEL}_LOW", _LEVEL_FIELD + ".low"),
    )
)


def source_of(variable: str) -> str | None:
    """The user-written field(s) behind a runtime.sh variable, or None for the controller's own."""
    for pattern, source in _SOURCES:
        match = pattern.fullmatch(variable)
        if match:
            groups = match.groupdict()
            return source.format(c=(groups.get("c") or "").lower(), i=groups.get("i"), j=groups.get("j"))
    return None
