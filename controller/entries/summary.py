"""reportSummary's output as Dataset status fields (pure).

Upstream's format (CacheRuntimeReportSummary): one JSON object of strings, ``cached``,
``cachedPercentage``, ``cacheCapacity``, ``cacheHitRatio``; upstream copies the four into
``status.cacheStates``. Curvine's ``cv report fluid-summary`` adds ``fileNum`` and ``ufsTotal``, the
Dataset's own status fields (its printer columns TOTAL FILES and Ufs Total Size): the product takes
them when the script gives them, and leaves them alone when it does not. A number where a string is
expected is taken as its decimal text (Go's json would refuse it; a script printing ``"fileNum": 4``
meant it). Anything else that is not JSON of that shape is an error, and the previous states stay.
"""

from __future__ import annotations

from typing import Any, Final

from controller.entries.output import ScriptOutputError, json_object

# status.cacheStates keys, upstream's common.Cached, CachedPercentage, CacheCapacity, CacheHitRatio.
CACHE_STATE_KEYS: Final = ("cached", "cachedPercentage", "cacheCapacity", "cacheHitRatio")
# Dataset status fields a summary may carry beside them.
DATASET_KEYS: Final = ("ufsTotal", "fileNum")


class SummaryError(ScriptOutputError):
    """reportSummary's stdout is not upstream's summary object."""


def _text(key: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise SummaryError(f"reportSummary's {key} is not a string: {value!r}")
    return value if isinstance(value, str) else format(value, "g") if isinstance(value, float) else str(value)


def summary_status(stdout: bytes | str) -> dict[str, Any]:
    """The Dataset status fields the summary sets: ``cacheStates`` (always, upstream sets all four,
    empty when absent), and ``ufsTotal``/``fileNum`` when given."""
    out = json_object(stdout, "reportSummary", SummaryError)
    states = {key: _text(key, out[key]) if out.get(key) is not None else "" for key in CACHE_STATE_KEYS}
    fields: dict[str, Any] = {"cacheStates": states}
    for key in DATASET_KEYS:
        if out.get(key) is not None:
            fields[key] = _text(key, out[key])
    return fields


def changed(status: dict[str, Any] | None, fields: dict[str, Any]) -> bool:
    """The summary's fields differ from the Dataset's status (no write when they do not)."""
    status = status or {}
    return any(status.get(key) != value for key, value in fields.items())
