"""FUSE tuning parameters (SPEC §5): StorageClass keys handed to the real ``curvine-fuse`` as flags,
each value checked here and written as curvine-fuse takes it.

Checked here rather than left to the FUSE process because a bad value found there surfaces as a
FUSE that never comes up on some node, long after the StorageClass was accepted (CreateVolume
refuses it instead, and the PVC's ProvisioningFailed event names the key); and because every value
becomes one argv element, a value must not look like a flag or carry blanks. The keys and their
groups are kubectl_fluid/api/curvinefuse.py's; the shapes follow curvine-fuse's own types:

- counts (``worker-threads``, ``client.conn-timeout-ms``, ...): a decimal integer 0..2^32-1;
  ``io-threads`` and ``list-limit`` at least 1; ``mnt-number`` only 1 (more mount points would sit
  under the mount point the driver binds volumes from);
- ``max-background``, ``congestion-threshold``: 1..65535 (FUSE's 16-bit fields), and the threshold
  at most max-background, each defaulting to curvine-fuse's own (256, 192) when not given;
  ``web-port``: 0..65535;
- switches (``direct-io``, ``client.short-circuit``, ...): ``true`` or ``false`` (any case,
  written lower-case); ``direct-io`` and ``write-back-cache`` not both true;
- ``debug``, ``readonly``: ``true`` passes the bare flag, ``false`` leaves it out;
- kernel cache timeouts: ``entry-timeout-ms`` (and attr, negative) whole milliseconds
  0..2^63-1; the design document's ``entry-timeout`` (and attr, negative) in seconds, a decimal
  such as ``1`` or ``0.5`` with at most 3 decimals (curvine-fuse counts whole milliseconds), handed
  over as ``--entry-timeout-ms``;
- durations (``node-cache-timeout``, ``meta-cache-ttl``, ``client.ttl-ms``, ...): digits with an
  optional unit ``ms``, ``s``, ``m``, ``h`` or ``d`` (``30m``), at most 2^32-1 of the unit;
- byte sizes (``client.block-size``, ...): a decimal with an optional unit ``B``, ``K(B)``,
  ``M(B)``, ``G(B)``, ``T(B)`` or ``P(B)`` (any case, written upper-case);
- ``options``: comma-separated FUSE mount options of curvine's direct mount backend, never two
  opposites (``ro`` and ``rw``...), nor ``rw`` with ``readonly``;
- ``client.hostname``: a DNS name or an IPv4 address; ``client.umask``: octal, at most ``7777``,
  with or without ``0o`` (written as three or four digits, ``022``);
  ``client.storage-type`` and ``client.ttl-action``: one of curvine's names (written lower-case).

Every bound is checked on the digits before any ``int()``: Python refuses to convert strings of
more than 4300 digits, which would otherwise surface as an internal error instead of the key.

Normalising (``007`` → ``7``, ``True`` → ``true``, ``0.5`` seconds → ``500`` ms) makes spellings
of one setting share one FUSE.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from csi.model.addresses import normalize_hostname
from csi.model.errors import InvalidParameter
from kubectl_fluid.api import curvinefuse as cf

_BLANK = re.compile(r"\s")
_DIGITS = re.compile(r"[0-9]+")
_SECONDS = re.compile(r"(?P<whole>[0-9]+)(?:\.(?P<fraction>[0-9]{1,3}))?")
_DURATION = re.compile(r"(?P<whole>[0-9]+)(?:ms|s|m|h|d)?")
_SIZE = re.compile(r"(?P<whole>[0-9]+)(?:\.[0-9]{1,9})?(?P<unit>[kmgtp]b?|b)?", re.IGNORECASE)
_OCTAL = re.compile(r"(?:0[oO])?(?P<digits>[0-7]{1,4})")
_U32_MAX = 2**32 - 1
_U16_MAX = 2**16 - 1
_I64_MAX = 2**63 - 1


@dataclass(frozen=True)
class Shape:
    description: str
    # The canonical value ("" to leave the flag out), or None when ``value`` does not have this shape.
    normalize: Callable[[str], str | None]


def _at_most(digits: str, maximum: int) -> int | None:
    """The value of decimal ``digits`` when it is at most ``maximum``, else None; a string too long
    to be that small is never handed to int()."""
    significant = digits.lstrip("0") or "0"
    if len(significant) > len(str(maximum)):
        return None
    value = int(significant)
    return value if value <= maximum else None


def _integer(minimum: int, maximum: int) -> Callable[[str], str | None]:
    def normalize(value: str) -> str | None:
        number = _at_most(value, maximum) if _DIGITS.fullmatch(value) else None
        return None if number is None or number < minimum else str(number)

    return normalize


def _one_of(choices: tuple[str, ...]) -> Callable[[str], str | None]:
    def normalize(value: str) -> str | None:
        lowered = value.lower()
        return lowered if lowered in choices else None

    return normalize


def _presence(value: str) -> str | None:
    lowered = value.lower()
    return {"true": "true", "false": ""}.get(lowered)


def _bounded(pattern: re.Pattern[str]) -> Callable[[str], str | None]:
    """Values matching ``pattern`` whose whole part is at most 2^32-1, kept as written."""

    def normalize(value: str) -> str | None:
        match = pattern.fullmatch(value)
        return value if match and _at_most(match["whole"], _U32_MAX) is not None else None

    return normalize


def _milliseconds_of_seconds(value: str) -> str | None:
    match = _SECONDS.fullmatch(value)
    whole = _at_most(match["whole"], _U32_MAX) if match else None
    if match is None or whole is None:
        return None
    return str(whole * 1000 + int((match["fraction"] or "").ljust(3, "0")))


def _size(value: str) -> str | None:
    match = _SIZE.fullmatch(value)
    if match is None or _at_most(match["whole"], _I64_MAX) is None:
        return None
    return value.upper()


def _umask(value: str) -> str | None:
    match = _OCTAL.fullmatch(value)
    return f"{int(match['digits'], 8):03o}" if match else None


def _mount_options(value: str) -> str | None:
    options = value.split(",")
    if any(option not in cf.FUSE_MOUNT_OPTIONS for option in options):
        return None
    kept = list(dict.fromkeys(options))  # a repeated option means nothing more
    if any(a in kept and b in kept for a, b in cf.FUSE_OPPOSITE_OPTIONS):
        return None
    return ",".join(kept)


_COUNT = Shape(f"a decimal integer 0-{_U32_MAX}", _integer(0, _U32_MAX))
_POSITIVE = Shape(f"a decimal integer 1-{_U32_MAX} (curvine-fuse refuses 0)", _integer(1, _U32_MAX))
_BACKGROUND = Shape(f"a decimal integer 1-{_U16_MAX} (curvine-fuse refuses 0)", _integer(1, _U16_MAX))
_PORT = Shape(f"a decimal integer 0-{_U16_MAX}", _integer(0, _U16_MAX))
_ONE = Shape("1: more mount points would lie below the one the driver binds volumes from", _integer(1, 1))
_SWITCH = Shape("true or false", _one_of(("true", "false")))
_PRESENCE = Shape("true or false", _presence)
_MILLISECONDS = Shape(f"whole milliseconds, a decimal integer 0-{_I64_MAX}", _integer(0, _I64_MAX))
_SECONDS_SHAPE = Shape(
    f"non-negative seconds up to {_U32_MAX} with at most 3 decimals (curvine-fuse takes whole "
    "milliseconds), e.g. 1 or 0.5",
    _milliseconds_of_seconds,
)
_DURATION_SHAPE = Shape(
    f"a duration: up to {_U32_MAX} with an optional unit ms, s, m, h or d, e.g. 30m", _bounded(_DURATION)
)
_SIZE_SHAPE = Shape(
    "a size: a decimal number with an optional unit B, K, KB, M, MB, G, GB, T, TB, P or PB", _size
)
_OPTIONS = Shape(
    f"comma-separated FUSE mount options of {', '.join(cf.FUSE_MOUNT_OPTIONS)}, without opposites "
    "such as ro and rw",
    _mount_options,
)
_HOSTNAME = Shape("a DNS name or an IPv4 address", lambda value: value)  # checked by normalize_hostname
_UMASK = Shape("an octal umask of at most 4 digits, e.g. 022 or 0o022", _umask)

_GROUPS: tuple[tuple[tuple[str, ...], Shape], ...] = (
    ((*cf.FUSE_COUNT_PARAMS, *cf.FUSE_CLIENT_COUNT_PARAMS), _COUNT),
    (cf.FUSE_POSITIVE_PARAMS, _POSITIVE),
    (cf.FUSE_BACKGROUND_PARAMS, _BACKGROUND),
    (cf.FUSE_PORT_PARAMS, _PORT),
    ((cf.PARAM_MNT_NUMBER,), _ONE),
    ((*cf.FUSE_SWITCH_PARAMS, *cf.FUSE_CLIENT_SWITCH_PARAMS), _SWITCH),
    (cf.FUSE_PRESENCE_PARAMS, _PRESENCE),
    (cf.FUSE_MILLISECONDS_PARAMS, _MILLISECONDS),
    ((*cf.FUSE_DURATION_PARAMS, *cf.FUSE_CLIENT_DURATION_PARAMS), _DURATION_SHAPE),
    (cf.FUSE_CLIENT_SIZE_PARAMS, _SIZE_SHAPE),
    ((cf.PARAM_OPTIONS,), _OPTIONS),
    ((cf.PARAM_CLIENT_HOSTNAME,), _HOSTNAME),
    ((cf.PARAM_CLIENT_UMASK,), _UMASK),
    (
        (cf.PARAM_CLIENT_STORAGE_TYPE,),
        Shape(f"one of {', '.join(cf.CLIENT_STORAGE_TYPES)}", _one_of(cf.CLIENT_STORAGE_TYPES)),
    ),
    (
        (cf.PARAM_CLIENT_TTL_ACTION,),
        Shape(f"one of {', '.join(cf.CLIENT_TTL_ACTIONS)}", _one_of(cf.CLIENT_TTL_ACTIONS)),
    ),
)
SHAPES: Mapping[str, Shape] = {key: shape for keys, shape in _GROUPS for key in keys}
# The design document's keys in seconds, by the key curvine-fuse takes instead.
_SECONDS_OF: Mapping[str, str] = cf.FUSE_SECONDS_PARAMS


def tuning_name(key: str) -> str | None:
    """The tuning key a StorageClass key stands for (itself, or the name curvine-fuse took it to);
    None when ``key`` is no tuning key at all."""
    if key in SHAPES:
        return key
    return cf.FUSE_RENAMED_PARAMS.get(key) or _SECONDS_OF.get(key)


def normalize_tuning(key: str, value: str) -> tuple[str, str] | None:
    """``(flag name, value)`` as curvine-fuse takes StorageClass key ``key`` set to ``value``, or
    None when the value asks for nothing (``debug: "false"``); InvalidParameter naming ``key`` when
    the value cannot be used."""
    name = tuning_name(key)
    if name is None:
        raise KeyError(key)
    if not value:
        raise InvalidParameter(key, "must not be empty")
    if _BLANK.search(value):
        raise InvalidParameter(key, f"must not contain whitespace or newlines, got {value!r}")
    shape = _SECONDS_SHAPE if key in _SECONDS_OF else SHAPES[name]
    if name == cf.PARAM_CLIENT_HOSTNAME:
        return name, normalize_hostname(value, key)
    normalized = shape.normalize(value)
    if normalized is None:
        raise InvalidParameter(key, f"must be {shape.description}, got {value!r}")
    return (name, normalized) if normalized else None


def check_combination(tuning: Mapping[str, str]) -> None:
    """The rules curvine-fuse applies across keys (FuseConf::init), on the normalised tuning."""
    background = int(tuning.get(cf.PARAM_MAX_BACKGROUND, cf.DEFAULT_MAX_BACKGROUND))
    threshold = int(tuning.get(cf.PARAM_CONGESTION_THRESHOLD, cf.DEFAULT_CONGESTION_THRESHOLD))
    if threshold > background:
        if cf.PARAM_CONGESTION_THRESHOLD in tuning:
            key = cf.PARAM_CONGESTION_THRESHOLD
            told = f"is {threshold}, above max-background {background}"
            if cf.PARAM_MAX_BACKGROUND not in tuning:
                told += " (curvine-fuse's default)"
            raise InvalidParameter(key, f"{told}; curvine-fuse needs congestion-threshold <= max-background")
        raise InvalidParameter(
            cf.PARAM_MAX_BACKGROUND,
            f"is {background}, below curvine-fuse's default congestion-threshold {threshold}: set "
            f"congestion-threshold too, at most {background}",
        )
    if tuning.get(cf.PARAM_DIRECT_IO) == "true" and tuning.get(cf.PARAM_WRITE_BACK_CACHE) == "true":
        raise InvalidParameter(
            cf.PARAM_WRITE_BACK_CACHE,
            "cannot be true with direct-io true: direct I/O bypasses the page cache that write-back "
            "caching needs (curvine-fuse refuses both)",
        )
    if tuning.get(cf.PARAM_READONLY) == "true" and "rw" in tuning.get(cf.PARAM_OPTIONS, "").split(","):
        raise InvalidParameter(cf.PARAM_OPTIONS, "holds rw, which contradicts readonly true")
