"""runtime.json: compact, key-sorted JSON, so equal configs give equal bytes and the controller can
compare bytes to decide whether the ConfigMap needs a write."""

from __future__ import annotations

import json
from typing import Any

from kubectl_fluid.runtimeconfig.model import RuntimeConfig


def compact_json(value: Any) -> str:
    # Non-ASCII stays as is: ConfigMap data is UTF-8, and readers see the text a user wrote.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def render_json(config: RuntimeConfig) -> str:
    # exclude_none drops disabled or absent components, as SPEC §3 asks.
    return compact_json(config.model_dump(by_alias=True, exclude_none=True))
