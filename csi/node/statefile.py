"""The node state file: the NodeState as versioned JSON, written atomically.

Format: one UTF-8 JSON object ``{"mounts": {...}, "version": 1}``, keys sorted, no blanks, one
trailing newline; the fields are those of csi/node/state.py's models. The same state always gives the
same bytes, so a file can be compared, and rewriting an unchanged state is a no-op in content.
Encoding reuses the text of every record the last state encoded shared (csi/node/stateencoder.py),
so a save costs what changed, not the size of the node's state.
Reading validates strictly (types, no unknown fields, and the cross-checks below): a file that
does not describe a consistent state is refused, never half-used.

Writing: a temporary file in the same directory, fsync, rename over the old file, fsync the
directory. A crash leaves either the old file or the new one, never a torn one. The file is created
mode 0600 (mkstemp): only the node service reads it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from csi.model.errors import StateFileError
from csi.node.state import MountEntry, NodeState
from csi.node.stateencoder import StateEncoder
from kubectl_fluid.files import atomic_write

FORMAT_VERSION = 1


class CorruptState(ValueError):
    """State bytes that do not describe a consistent NodeState."""


class _FileV1(BaseModel):
    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")

    version: Literal[1]
    mounts: dict[str, MountEntry]


# One for the process: the node service saves one state after another, each much like the last.
_ENCODER = StateEncoder()


def to_json(state: NodeState) -> bytes:
    return _ENCODER.encode(state, FORMAT_VERSION)


def from_json(data: bytes | str) -> NodeState:
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError) as err:
        raise CorruptState(f"not JSON: {err}") from None
    if not isinstance(document, dict):
        raise CorruptState("not a JSON object")
    version = document.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        raise CorruptState(
            f"format version {version} was written by a newer node service (this one reads {FORMAT_VERSION})"
        )
    try:
        parsed = _FileV1.model_validate_json(data)
    except ValidationError as err:
        raise CorruptState(_summary(err)) from None
    state = NodeState(mounts=parsed.mounts)
    _check_consistent(state)
    return state


def save_atomic(path: str | os.PathLike[str], state: NodeState) -> None:
    atomic_write(path, to_json(state))


def load(path: str | os.PathLike[str]) -> NodeState:
    """The saved state; a missing file is an empty state (first start); an unreadable or corrupt
    one raises StateFileError naming the file."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return NodeState()
    except OSError as err:
        raise StateFileError(os.fspath(path), err.strerror or str(err)) from None
    try:
        return from_json(data)
    except CorruptState as err:
        raise StateFileError(os.fspath(path), str(err)) from None


def _check_consistent(state: NodeState) -> None:
    owners: dict[str, str] = {}
    publishers: dict[str, str] = {}
    for key, entry in state.mounts.items():
        if entry.key != key:
            raise CorruptState(f"mount {key} records key {entry.key}")
        for volume_id, volume in entry.volumes.items():
            if volume_id in owners:
                raise CorruptState(f"volume {volume_id} is staged on both {owners[volume_id]} and {key}")
            owners[volume_id] = key
            for target in volume.targets:
                if target in publishers:
                    raise CorruptState(f"target {target} publishes both {publishers[target]} and {volume_id}")
                publishers[target] = volume_id


def _summary(err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "document"
    more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}"
