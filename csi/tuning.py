"""Value shapes of the FUSE tuning parameters, passed to ``curvine-fuse`` as ``--key value``.

Checked here rather than left to the FUSE process because a bad value found there surfaces as a
FUSE that never comes up on some node, long after the StorageClass was accepted; and because every
value becomes one argv element, a value must not look like a flag or carry blanks. Shapes follow
curvine-fuse's own flag types (names.FUSE_*_PARAMS group the keys by shape):

- counts and sizes (``io-threads``, ``worker-threads``, ``mnt-per-task``, ``mnt-number``,
  ``fuse-channel-size``, ``stream-channel-size``, ``node-cache-size``): a decimal integer
  0..2^32-1, written without leading zeros;
- ``max-background``, ``congestion-threshold``: a decimal integer 0..65535 (FUSE's 16-bit fields);
- switches (``clone-fd``, ``direct-io``, ``cache-readdir``): ``true`` or ``false`` (any case,
  written lower-case);
- kernel cache timeouts (``entry-timeout``, ``attr-timeout``, ``negative-timeout``): non-negative
  seconds, a decimal number such as ``1`` or ``0.5``, at most 2^32-1 whole seconds and 9 decimals
  (nanoseconds: nothing finer means anything), kept as written;
- ``node-cache-timeout``: a duration, digits with an optional unit ``ms``, ``s``, ``m``, ``h`` or
  ``d`` (``30m``, ``1h``), at most 2^32-1 of the unit, kept as written.

Every bound is checked on the digits before any ``int()``: Python refuses to convert strings of
more than 4300 digits, which would otherwise surface as an internal error instead of the key.

Normalising (``007`` → ``7``, ``True`` → ``true``) makes spellings of one setting share one FUSE.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from csi.errors import InvalidParameter
from kubectl_fluid.api import names

_BLANK = re.compile(r"\s")
_DIGITS = re.compile(r"[0-9]+")
_SECONDS = re.compile(r"(?P<whole>[0-9]+)(?:\.[0-9]{1,9})?")
_DURATION = re.compile(r"(?P<whole>[0-9]+)(?:ms|s|m|h|d)?")
_U32_MAX = 2**32 - 1
_U16_MAX = 2**16 - 1


@dataclass(frozen=True)
class Shape:
    description: str
    # The canonical value, or None when ``value`` does not have this shape.
    normalize: Callable[[str], str | None]


def _at_most(digits: str, maximum: int) -> int | None:
    """The value of decimal ``digits`` when it is at most ``maximum``, else None; a string too long
    to be that small is never handed to int()."""
    significant = digits.lstrip("0") or "0"
    if len(significant) > len(str(maximum)):
        return None
    value = int(significant)
    return value if value <= maximum else None


def _integer(maximum: int) -> Callable[[str], str | None]:
    def normalize(value: str) -> str | None:
        number = _at_most(value, maximum) if _DIGITS.fullmatch(value) else None
        return None if number is None else str(number)

    return normalize


def _switch(value: str) -> str | None:
    lowered = value.lower()
    return lowered if lowered in ("true", "false") else None


def _bounded(pattern: re.Pattern[str]) -> Callable[[str], str | None]:
    """Values matching ``pattern`` whose whole part is at most 2^32-1, kept as written."""

    def normalize(value: str) -> str | None:
        match = pattern.fullmatch(value)
        return value if match and _at_most(match["whole"], _U32_MAX) is not None else None

    return normalize


_COUNT = Shape(f"a decimal integer 0-{_U32_MAX}", _integer(_U32_MAX))
_U16 = Shape(f"a decimal integer 0-{_U16_MAX}", _integer(_U16_MAX))
_SWITCH = Shape("true or false", _switch)
_TIMEOUT = Shape(
    f"non-negative seconds up to {_U32_MAX} with at most 9 decimals, e.g. 1 or 0.5", _bounded(_SECONDS)
)
_AGE = Shape(
    f"a duration: up to {_U32_MAX} with an optional unit ms, s, m, h or d, e.g. 30m", _bounded(_DURATION)
)

_GROUPS: tuple[tuple[tuple[str, ...], Shape], ...] = (
    (names.FUSE_COUNT_PARAMS, _COUNT),
    (names.FUSE_U16_PARAMS, _U16),
    (names.FUSE_SWITCH_PARAMS, _SWITCH),
    (names.FUSE_TIMEOUT_PARAMS, _TIMEOUT),
    (names.FUSE_DURATION_PARAMS, _AGE),
)
SHAPES: Mapping[str, Shape] = {key: shape for keys, shape in _GROUPS for key in keys}


def normalize_tuning(key: str, value: str) -> str:
    """The canonical value of tuning parameter ``key``, or InvalidParameter naming it."""
    if not value:
        raise InvalidParameter(key, "must not be empty")
    if _BLANK.search(value):
        raise InvalidParameter(key, f"must not contain whitespace or newlines, got {value!r}")
    shape = SHAPES[key]
    normalized = shape.normalize(value)
    if normalized is None:
        raise InvalidParameter(key, f"must be {shape.description}, got {value!r}")
    return normalized
