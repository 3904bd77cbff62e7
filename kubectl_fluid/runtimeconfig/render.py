"""runtime.json, as upstream writes it with Go's ``json.Marshal``: compact, fields in declaration
order, empty fields left out (``omitempty``), map keys sorted, and ``&``, ``<``, ``>``, U+2028 and
U+2029 written as ``\\u0026``, ``\\u003c``, ``\\u003e``, ``\\u2028``, ``\\u2029``. Equal configs give
equal bytes, so the controller can compare bytes to decide whether the ConfigMap needs a write.
tests/unit/test_runtime_json.py has Go itself re-encode what this writes and get the same bytes.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from kubectl_fluid.runtimeconfig.model import Kept, RuntimeConfig

# Go escapes these in every string it marshals (HTML safety, and JavaScript line terminators).
# They can only stand inside JSON strings, so replacing them in the encoded text is exact.
_GO_ESCAPES = str.maketrans(
    {"&": "\\u0026", "<": "\\u003c", ">": "\\u003e", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def go_json(value: Any) -> str:
    """Compact JSON of plain data as Go's encoding/json writes it: the other characters escape as
    Go escapes them (``\\n``, ``\\"``, ``\\u001b``…), and non-ASCII text stays as it is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).translate(_GO_ESCAPES)


def compact_map(entries: dict[str, str]) -> str:
    """A map as runtime.json holds it, keys sorted: also the value of runtime.sh's map variables."""
    return go_json(dict(sorted(entries.items())))


def render_json(config: RuntimeConfig) -> str:
    return go_json(_object(config))


def _object(model: BaseModel) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, field in type(model).model_fields.items():
        value = getattr(model, name)
        kept = any(isinstance(marker, Kept) for marker in field.metadata)
        # Go leaves out nil pointers (an absent component) and, under omitempty, empty values; a
        # nested struct is never empty to Go.
        if value is None or (not kept and not isinstance(value, BaseModel) and not value):
            continue
        out[field.alias or name] = _value(value)
    return out


def _value(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return _object(value)
    if isinstance(value, dict):
        return dict(sorted(value.items()))
    if isinstance(value, list):
        return [_value(item) for item in value]
    return value
