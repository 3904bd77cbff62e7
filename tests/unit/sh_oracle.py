"""SPEC §3's flattening rules, re-derived from runtime.json alone.

Independent of the implementation (which walks the pydantic schema), so comparing the two catches a
config field that runtime.json carries but runtime.sh does not export, exports under another name or
in another place. What JSON cannot tell is written here from SPEC and upstream's shell form (its
integration guide's example): each object's fields in runtime.sh's order, the value a field has
where runtime.json leaves it out (omitempty, or an absent component), and which fields are maps and
which lists hold objects.
"""

from __future__ import annotations

import json
from typing import Any

# (JSON key, runtime.sh name, what it is). Kinds: "scalar" with its zero, "scalars" (a list),
# "map", an object's table, or ("objects", table) for a list of objects.
Table = tuple[tuple[str, str, Any], ...]
LEVEL: Table = (
    ("mediumType", "MEDIUMTYPE", ("scalar", "")),
    ("mountPaths", "MOUNTPATHS", "scalars"),
    ("quotas", "QUOTAS", "scalars"),
    ("high", "HIGH", ("scalar", "")),
    ("low", "LOW", ("scalar", "")),
)
SERVICE: Table = (("name", "NAME", ("scalar", "")),)
COMPONENT: Table = (
    ("enabled", "ENABLED", ("scalar", False)),
    ("name", "NAME", ("scalar", "")),
    ("replicas", "REPLICAS", ("scalar", 0)),
    ("service", "SERVICE", SERVICE),
    ("options", "OPTIONS", "map"),
    ("tieredStoreLevels", "TIEREDSTORE_LEVELS", ("objects", LEVEL)),
)
MOUNT: Table = (
    ("name", "NAME", ("scalar", "")),
    ("path", "PATH", ("scalar", "")),
    ("mountPoint", "MOUNTPOINT", ("scalar", "")),
    ("readOnly", "READONLY", ("scalar", False)),
    ("shared", "SHARED", ("scalar", False)),
    ("options", "OPTIONS", "map"),
    ("encryptOptions", "ENCRYPTOPTIONS", "map"),
)
# Root scalars and scalar lists carry RUNTIME_; objects and object lists name themselves.
ROOT: Table = (
    ("targetPath", "TARGETPATH", ("scalar", "")),
    ("accessModes", "ACCESSMODES", "scalars"),
    ("mounts", "MOUNTS", ("objects", MOUNT)),
    ("master", "MASTER", COMPONENT),
    ("worker", "WORKER", COMPONENT),
    ("client", "CLIENT", COMPONENT),
)
ROOT_LEAF_PREFIX = "RUNTIME"


def _join(*parts: str) -> str:
    return "_".join(p for p in parts if p)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    assert isinstance(value, int | str), value
    return str(value)


def _go_map(value: dict[str, str]) -> str:
    # Go's json.Marshal of a map: sorted keys, compact, HTML characters and U+2028/9 escaped.
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char in "&<>\u2028\u2029":
        text = text.replace(char, f"\\u{ord(char):04x}")
    return text


def _walk(
    table: Table, doc: dict[str, Any], prefix: str, leaf_prefix: str, out: list[tuple[str, str]]
) -> None:
    for key, name, kind in table:
        value = doc.get(key)
        if kind == "map":
            out.append((_join(leaf_prefix, name), _go_map(value or {})))
        elif kind == "scalars":
            items = value or []
            out.append((_join(leaf_prefix, name, "COUNT"), str(len(items))))
            singular = name.removesuffix("S")
            out.extend((_join(leaf_prefix, singular, str(i)), _text(item)) for i, item in enumerate(items))
        elif kind[0] == "scalar":
            out.append((_join(leaf_prefix, name), _text(kind[1] if value is None else value)))
        elif kind[0] == "objects":
            items = value or []
            out.append((_join(prefix, name, "COUNT"), str(len(items))))
            for i, item in enumerate(items):
                item_prefix = _join(prefix, name.removesuffix("S"), str(i))
                _walk(kind[1], item, item_prefix, item_prefix, out)
        else:  # a nested object; an absent one exports its zero values
            _walk(kind, value or {}, _join(prefix, name), _join(prefix, name), out)


def expected_exports(runtime_json: str) -> list[tuple[str, str]]:
    """(name, value) in runtime.sh's order."""
    out: list[tuple[str, str]] = []
    _walk(ROOT, json.loads(runtime_json), "", ROOT_LEAF_PREFIX, out)
    return out
