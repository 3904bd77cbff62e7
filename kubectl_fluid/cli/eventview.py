"""The newest Event of some reasons about one object, and how ``explain`` prints it. Pure.

kubelet says why a pod is stuck only in Events (``FailedMount``: the CSI node's refusal, word for
word), and a ReplicaSet, StatefulSet, DaemonSet or Job says why it has no pods only there too
(``FailedCreate``: the API server's answer, an admission webhook's denial included). ``explain``
shows the newest, as the last line of ``kubectl describe``'s Events would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

# A pod stuck before its containers start: its volumes could not be attached or mounted.
MOUNT_REASONS = ("FailedMount", "FailedAttachVolume")
# A workload's controller could not create a pod.
CREATE_REASONS = ("FailedCreate",)
_NEVER = datetime.min


def _when(event: Mapping[str, Any]) -> datetime:
    """When the event last happened: a series' last, else lastTimestamp, eventTime, creation."""
    series = event.get("series") or {}
    meta = event.get("metadata") or {}
    for stamp in (
        series.get("lastObservedTime"),
        event.get("lastTimestamp"),
        event.get("eventTime"),
        meta.get("creationTimestamp"),
    ):
        if stamp:
            try:
                # Seconds and microseconds are both written; parsed, they compare as times.
                return datetime.fromisoformat(str(stamp)).replace(tzinfo=None)
            except ValueError:
                continue
    return _NEVER


def newest(
    events: Iterable[Mapping[str, Any]], reasons: Iterable[str], uid: str | None = None
) -> Mapping[str, Any] | None:
    """The newest event with one of ``reasons``, of the object ``uid`` when given (a name may have
    been another object's before)."""
    wanted = set(reasons)
    found = [
        e
        for e in events
        if e.get("reason") in wanted
        and (
            uid is None or not (e.get("involvedObject") or {}).get("uid") or e["involvedObject"]["uid"] == uid
        )
    ]
    return max(found, key=_when, default=None)


def event_line(event: Mapping[str, Any]) -> str:
    """``FailedMount (x4): message``, the reason, how often, and the message as it was written."""
    count = int(event.get("count") or (event.get("series") or {}).get("count") or 1)
    times = f" (x{count})" if count > 1 else ""
    message = " ".join(str(event.get("message") or "").split())
    return f"{event.get('reason')}{times}: {message}"
