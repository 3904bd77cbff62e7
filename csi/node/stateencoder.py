"""The state file's bytes, made again only for the records that changed since the last state encoded.

The node service saves one state after another, and each shares every unchanged record with the one
before (csi/node/state.py's transitions copy only the path to what they change). A whole dump of
the state with pydantic costs time linear in the node's volumes and targets, and that under the
GIL, on every save; here each record's JSON text is kept beside the very object it was made from,
and a later state reuses it wherever it still holds that object (``is``: records are immutable).
Only the records on the path of a change are dumped again; the rest is string joins.

The bytes are those of ``json.dumps`` of the whole document with sorted keys, compact separators and
``ensure_ascii=False`` (csi/node/statefile.py's format), assembled from the same pieces in the same
order: each mapping's keys sorted as ``sort_keys`` sorts them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from csi.node.state import MountEntry, NodeState, VolumeEntry

# The one field of each record type that holds more records, by key (TargetEntry holds none).
_NESTED: dict[type[BaseModel], str] = {NodeState: "mounts", MountEntry: "volumes", VolumeEntry: "targets"}


@dataclass(frozen=True)
class _Encoded:
    record: BaseModel  # held, so that no later object can have its id
    text: str
    # ``"key":text``, as it stands in the mapping that holds it (the key's own dump is kept too).
    member: str
    children: Mapping[str, _Encoded] = field(default_factory=dict)


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _join(parts: Mapping[str, str]) -> str:
    return "{" + ",".join(f"{_dumps(name)}:{parts[name]}" for name in sorted(parts)) + "}"


def _encode(
    record: BaseModel, previous: _Encoded | None, key: str = "", extra: Mapping[str, Any] | None = None
) -> _Encoded:
    nested = _NESTED.get(type(record))
    flat = record.model_dump(mode="json", exclude={nested} if nested else None)
    parts = {name: _dumps(value) for name, value in {**flat, **(extra or {})}.items()}
    children: dict[str, _Encoded] = {}
    if nested is not None:
        before = previous.children if previous is not None else {}
        mapping: Mapping[str, BaseModel] = getattr(record, nested)
        for name in sorted(mapping):
            child, was = mapping[name], before.get(name)
            # Inline, not a call per record: a volume can hold hundreds of unchanged targets.
            children[name] = was if was is not None and was.record is child else _encode(child, was, name)
        parts[nested] = "{" + ",".join(child.member for child in children.values()) + "}"
    text = _join(parts)
    return _Encoded(record, text, f"{_dumps(key)}:{text}", children)


class StateEncoder:
    """Encodes states one after another, reusing the text of the records the last one shared.

    Safe to share between threads: the only thing kept is the last result, replaced whole, and a
    reused text always belongs to the identical record; a race only costs a re-dump."""

    def __init__(self) -> None:
        self._last: _Encoded | None = None

    def encode(self, state: NodeState, version: int) -> bytes:
        # The top level is always joined again (it carries the version); its mounts are reused.
        encoded = _encode(state, self._last, extra={"version": version})
        self._last = encoded
        return (encoded.text + "\n").encode()
