"""Status conditions (metav1.Condition) as plain dicts: set one, keep when it last changed."""

from __future__ import annotations

import datetime
from typing import Any


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def set_condition(
    conditions: list[dict[str, Any]],
    type_: str,
    status: bool,
    reason: str,
    message: str,
    *,
    observed_generation: int | None = None,
    at: str | None = None,
) -> list[dict[str, Any]]:
    """A new list with ``type_`` set; ``lastTransitionTime`` moves only when the status flips, so an
    unchanged condition compares equal and causes no write."""
    wanted = "True" if status else "False"
    old = next((c for c in conditions if c.get("type") == type_), None)
    transitioned = old is None or old.get("status") != wanted
    cond: dict[str, Any] = {
        "type": type_,
        "status": wanted,
        "reason": reason,
        "message": message,
        "lastTransitionTime": (at or now())
        if transitioned or old is None
        else old.get("lastTransitionTime", at or now()),
    }
    if observed_generation is not None:
        cond["observedGeneration"] = observed_generation
    return [cond if c.get("type") == type_ else c for c in conditions] if old else [*conditions, cond]


def same_status(actual: dict[str, Any] | None, desired: dict[str, Any]) -> bool:
    """Equal but for condition timestamps (which ``set_condition`` already carries over)."""

    def strip(status: dict[str, Any] | None) -> dict[str, Any]:
        status = dict(status or {})
        status["conditions"] = [
            {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in status.get("conditions", [])
        ]
        return status

    return strip(actual) == strip(desired)
