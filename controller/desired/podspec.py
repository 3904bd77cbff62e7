"""Small edits of a pod spec in its JSON form, with upstream's merge rules: volumes and volume
mounts are added or replace the one of the same name (``AppendOrOverrideVolume(Mounts)``)."""

from __future__ import annotations

from typing import Any

Json = dict[str, Any]


def put_named(items: list[Json], item: Json) -> None:
    for i, existing in enumerate(items):
        if existing.get("name") == item["name"]:
            items[i] = item
            return
    items.append(item)


def add_volume(pod: Json, volume: Json) -> None:
    put_named(pod.setdefault("volumes", []), volume)


def add_mount(container: Json, mount: Json) -> None:
    put_named(container.setdefault("volumeMounts", []), mount)


def first(pod: Json, group: str) -> Json | None:
    """``containers[0]`` or ``initContainers[0]``: the only ones upstream changes."""
    containers = pod.get(group) or []
    return containers[0] if containers else None
