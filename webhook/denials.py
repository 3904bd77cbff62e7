"""Denial messages stay short whatever a pod holds (SPEC §4: under 1 KiB).

A denial is read by a person in ``kubectl``'s output and stored in Events; a pod naming thousands of
datasets must not make a message of the same size. Messages name the first few problems in full and
count the rest; any message is cut to ``MAX_DENIAL_BYTES`` as a last resort.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

# Our own words; the API server adds its prefix (``admission webhook "…" denied the request: ``), and
# the whole must still stay under 1 KiB.
MAX_DENIAL_BYTES: Final = 900
# A quoted entry from the pod (a name that is not a name may be kilobytes long) is cut to this.
MAX_QUOTED: Final = 64
ELLIPSIS: Final = "…"


def quote(text: str) -> str:
    """``"text"``, cut to ``MAX_QUOTED`` characters."""
    return f'"{text if len(text) <= MAX_QUOTED else text[:MAX_QUOTED] + ELLIPSIS}"'


def some(parts: Sequence[str], separator: str, budget: int, more: str = "{n} more") -> str:
    """As many of ``parts`` as fit in ``budget`` characters, then ``and {n} more`` for the rest;
    always at least the first."""
    shown: list[str] = []
    used = 0
    for index, part in enumerate(parts):
        cost = len(part) + (len(separator) if shown else 0)
        if shown and used + cost > budget:
            return f"{separator.join(shown)}{separator}and {more.format(n=len(parts) - index)}"
        shown.append(part)
        used += cost
    return separator.join(shown)


def clamp(message: str, limit: int = MAX_DENIAL_BYTES) -> str:
    """``message`` in at most ``limit`` bytes of UTF-8, cut at a character boundary."""
    data = message.encode()
    if len(data) <= limit:
        return message
    cut = data[: limit - len(ELLIPSIS.encode())].decode(errors="ignore")
    return cut + ELLIPSIS
