"""What ``kubectl fluid load --wait`` shows and decides (pure): a DataLoad's phase, the time since it
was made, and the Dataset's cached percentage when its cache reports one
(``status.cacheStates.cachedPercentage``); and whether the wait is over."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubectl_fluid.api import names


@dataclass(frozen=True)
class Outcome:
    ok: bool
    text: str


def phase(dataload: dict[str, Any]) -> str:
    return str((dataload.get("status") or {}).get("phase") or "") or "Created"


def cached(dataset: dict[str, Any] | None) -> str:
    states = ((dataset or {}).get("status") or {}).get("cacheStates") or {}
    return str(states.get("cachedPercentage") or "")


def elapsed_text(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 60}m{whole % 60:02d}s" if whole >= 60 else f"{whole}s"


def progress(dataload: dict[str, Any], dataset: dict[str, Any] | None, seconds: float) -> str:
    """One line: ``NAME  Executing  12s  cached 40.0%`` (the cached part when the cache says)."""
    parts = [dataload["metadata"]["name"], phase(dataload), elapsed_text(seconds)]
    percentage = cached(dataset)
    if percentage:
        parts.append(f"cached {percentage}")
    return "  ".join(parts)


def outcome(dataload: dict[str, Any], dataset: dict[str, Any] | None) -> Outcome | None:
    """None while it runs; else whether it completed, in a line for the operator."""
    status = dataload.get("status") or {}
    name = dataload["metadata"]["name"]
    current = status.get("phase")
    if current == names.PHASE_COMPLETE:
        percentage = cached(dataset)
        tail = f", dataset cached {percentage}" if percentage else ""
        return Outcome(
            True, f"dataload.{names.GROUP}/{name} complete in {status.get('duration') or '?'}{tail}"
        )
    if current == names.PHASE_FAILED:
        conditions = status.get("conditions") or []
        failed: dict[str, Any] = next((c for c in conditions if c.get("type") == names.PHASE_FAILED), {})
        why = ": ".join(p for p in (failed.get("reason"), failed.get("message")) if p) or "no reason given"
        return Outcome(False, f"dataload {name} failed: {why}; see kubectl describe dataload {name}")
    return None
