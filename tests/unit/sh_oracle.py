"""SPEC §3's flattening rules, re-derived from runtime.json alone.

Independent of the implementation (which walks the pydantic schema), so comparing the two catches a
config field that runtime.json carries but runtime.sh does not export, or exports under another name.
What JSON cannot tell (which objects are maps, which lists hold objects, what an omitted component
looks like) is written here from SPEC.
"""

from __future__ import annotations

import json
from typing import Any

MAPS = frozenset({"options", "encryptOptions"})
OBJECT_LISTS = frozenset({"mounts", "tieredStoreLevels"})
# SPEC spells this one with an underscore (WORKER_TIEREDSTORE_LEVEL_0_...).
ENV_NAMES = {"tieredStoreLevels": "TIEREDSTORE_LEVELS"}
COMPONENTS = ("master", "worker", "client")
# runtime.json omits a disabled component; runtime.sh exports this, SPEC's "full set, zero values".
ZERO_COMPONENT: dict[str, Any] = {
    "enabled": False,
    "name": "",
    "replicas": 0,
    "service": {"name": ""},
    "options": {},
    "tieredStoreLevels": [],
}


def _join(*parts: str) -> str:
    return "_".join(p for p in parts if p)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    assert isinstance(value, int | str), value
    return str(value)


def _walk(key: str, value: Any, prefix: str, leaf_prefix: str, out: dict[str, str]) -> None:
    name = ENV_NAMES.get(key, key.upper())
    if key in MAPS:
        out[_join(leaf_prefix, name)] = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
    elif isinstance(value, dict):
        for sub_key, sub in value.items():
            _walk(sub_key, sub, _join(prefix, name), _join(prefix, name), out)
    elif isinstance(value, list):
        base = prefix if key in OBJECT_LISTS else leaf_prefix
        out[_join(base, name, "COUNT")] = str(len(value))
        for i, item in enumerate(value):
            item_name = _join(base, name.removesuffix("S"), str(i))
            if key in OBJECT_LISTS:
                for sub_key, sub in item.items():
                    _walk(sub_key, sub, item_name, item_name, out)
            else:
                out[item_name] = _scalar(item)
    else:
        out[_join(leaf_prefix, name)] = _scalar(value)


def expected_exports(runtime_json: str) -> dict[str, str]:
    doc = json.loads(runtime_json)
    for component in COMPONENTS:
        doc.setdefault(component, ZERO_COMPONENT)
    out: dict[str, str] = {}
    for key, value in doc.items():
        # Root scalars and scalar lists carry RUNTIME_; objects and object lists name themselves.
        _walk(key, value, "", "RUNTIME", out)
    return out
