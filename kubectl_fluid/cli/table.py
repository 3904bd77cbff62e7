"""kubectl's tables: no borders, upper-case headers, columns three spaces apart, left-aligned, no
trailing blanks; ``<none>`` for an absent value; ages as kubectl prints them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

NONE = "<none>"
UNKNOWN = "<unknown>"
_SEPARATOR = "   "


def render(headers: Sequence[str], rows: Sequence[Sequence[str]], no_headers: bool = False) -> str:
    """The table as text ending in a newline ("" for no rows without headers)."""
    # tabulate costs ~30 ms to import (it loads importlib.metadata): only tables pay it, never --help.
    import tabulate as tabulate_module
    from tabulate import DataRow, TableFormat, tabulate

    # tabulate widens every column by 2 beyond its header; kubectl's columns are as wide as their
    # widest cell, then 3 spaces. The module constant is the only switch for it.
    tabulate_module.MIN_PADDING = 0

    row = DataRow("", _SEPARATOR, "")
    kubectl_format = TableFormat(
        lineabove=None,
        linebelowheader=None,
        linebetweenrows=None,
        linebelow=None,
        headerrow=row,
        datarow=row,
        padding=0,
        with_header_hide=None,
    )
    if no_headers and not rows:
        return ""
    text = tabulate(
        [list(r) for r in rows],
        headers=() if no_headers else [h.upper() for h in headers],
        tablefmt=kubectl_format,
        disable_numparse=True,
        stralign="left",
        missingval=NONE,
    )
    return "".join(line.rstrip() + "\n" for line in text.splitlines())


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery's HumanDuration, which kubectl's AGE column uses: precise when recent,
    coarser as it grows (``45s``, ``5m30s``, ``3h20m``, ``2d4h``, ``400d``, ``2y3d``)."""
    s = int(seconds)
    minutes, hours = s // 60, s // 3600
    days, years = hours // 24, hours // 24 // 365
    if s < -1:
        text = "<invalid>"
    elif s < 0:
        text = "0s"
    elif s < 120:
        text = f"{s}s"
    elif minutes < 10:
        text = _pair(minutes, "m", s % 60, "s")
    elif minutes < 180:
        text = f"{minutes}m"
    elif hours < 8:
        text = _pair(hours, "h", minutes % 60, "m")
    elif hours < 48:
        text = f"{hours}h"
    elif hours < 24 * 8:
        text = _pair(days, "d", hours % 24, "h")
    elif hours < 24 * 365 * 2:
        text = f"{days}d"
    elif hours < 24 * 365 * 8:
        text = _pair(years, "y", days % 365, "d")
    else:
        text = f"{years}y"
    return text


def _pair(big: int, big_unit: str, small: int, small_unit: str) -> str:
    return f"{big}{big_unit}{small}{small_unit}" if small else f"{big}{big_unit}"


def parse_time(timestamp: str | None) -> datetime | None:
    if not timestamp:
        return None
    try:
        parsed = datetime.fromisoformat(timestamp)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def age(timestamp: str | None, now: datetime | None = None) -> str:
    """AGE of an RFC 3339 timestamp (``creationTimestamp``), ``<unknown>`` when there is none."""
    when = parse_time(timestamp)
    if when is None:
        return UNKNOWN
    return human_duration(((now or datetime.now(UTC)) - when).total_seconds())


def cell(value: object) -> str:
    """A table cell: ``<none>`` for absent or empty values, text otherwise."""
    if value is None or value in ("", [], {}):
        return NONE
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
