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
  seconds, a decimal number such as ``1`` or ``0.5``, kept as written;
- ``node-cache-timeout``: a duration, digits with an optional unit ``ms``, ``s``, ``m``, ``h`` or
  ``d`` (``30m``, ``1h``), kept as written.

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
_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_DURATION = re.compile(r"[0-9]+(?:ms|s|m|h|d)?")
_U32_MAX = 2**32 - 1
_U16_MAX = 2**16 - 1


@dataclass(frozen=True)
class Shape:
    description: str
    # The canonical value, or None when ``value`` does not have this shape.
    normalize: Callable[[str], str | None]


def _integer(maximum: int) -> Callable[[str], str | None]:
    def normalize(value: str) -> str | None:
        return str(int(value)) if _DIGITS.fullmatch(value) and int(value) <= maximum else None

    return normalize


def _switch(value: str) -> str | None:
    lowered = value.lower()
    return lowered if lowered in ("true", "false") else None


def _pattern(pattern: re.Pattern[str]) -> Callable[[str], str | None]:
    return lambda value: value if pattern.fullmatch(value) else None


_COUNT = Shape(f"a decimal integer 0-{_U32_MAX}", _integer(_U32_MAX))
_U16 = Shape(f"a decimal integer 0-{_U16_MAX}", _integer(_U16_MAX))
_SWITCH = Shape("true or false", _switch)
_TIMEOUT = Shape("non-negative seconds, e.g. 1 or 0.5", _pattern(_SECONDS))
_AGE = Shape("a duration: digits with an optional unit ms, s, m, h or d, e.g. 30m", _pattern(_DURATION))

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
