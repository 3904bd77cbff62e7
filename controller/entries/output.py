"""A script's stdout as the JSON object an entry answers with (pure): what mountUFS and reportSummary
share before each reads its own fields."""

from __future__ import annotations

import json
from typing import Any


class ScriptOutputError(ValueError):
    """An entry's stdout is not the JSON object it must print."""


def json_object(stdout: bytes | str, entry: str, error: type[ScriptOutputError]) -> dict[str, Any]:
    """The object ``entry`` printed; ``error`` (saying what it printed instead) when it is not one."""
    text = (stdout.decode("utf-8", "replace") if isinstance(stdout, bytes) else stdout).strip()
    if not text:
        raise error(f"{entry} printed nothing on stdout")
    try:
        out = json.loads(text)
    except ValueError as e:
        raise error(f"{entry}'s stdout is not JSON: {text[:200]!r}") from e
    if not isinstance(out, dict):
        raise error(f"{entry}'s stdout is not a JSON object: {text[:200]!r}")
    return out
