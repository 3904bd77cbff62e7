"""Kubernetes' resource.Quantity (k8s.io/apimachinery/pkg/api/resource): parsing the quantity
grammar, adding, and the canonical text ``Quantity.String()`` gives. Upstream Fluid writes that text
into runtime.json (a tiered-store quota of ``1024Mi`` reads ``1Gi`` there), and the API server stores
quantities in it, so the product computes it the same way, to the byte.

A value is kept exactly, as an integer times a power of ten, with the format its suffix implies
(binary ``Ki``…``Ei``, decimal SI ``n``…``E``, or a decimal exponent ``e3``). What ``str()`` then
writes follows apimachinery, its quirks included; tests/unit/test_quantity.py checks it against
apimachinery itself (hack/go-oracle):

- Parsing rounds a value up (away from zero) to a multiple of 1n and caps a binary one at 2^63-1.
- Binary form is kept for integers of magnitude 1024 and more; anything else prints as decimal SI
  (``0.5Ki`` → ``512``, ``1.5`` Ki-multiples that are not integers → decimal).
- Decimal forms print the mantissa with its exponent lowered to a multiple of 3 (``1500``, ``1500m``,
  ``2G``, ``15e2`` → ``1500``). Past ``E`` (10^18) decimal SI has no suffix, and apimachinery then
  prints the mantissa alone (``1000000E`` → ``1``).
- A text the parser finds already canonical is returned as written, sign and leading zeros included
  (``+1Ki`` and ``01`` stay as they are; ``1E3`` stays ``1E3``).
- The exponent of ``e``/``E`` is read as a 64-bit integer and kept in 32 bits, as in Go.

One deliberate difference: a number of more than 256 digits is refused (apimachinery takes any
length). No capacity needs that many, and Python bounds how long a number text it converts may be.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Format = Literal["BinarySI", "DecimalSI", "DecimalExponent"]

_DIGITS = frozenset("0123456789")
# Characters apimachinery's scanner takes as the start of a suffix.
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DECIMAL_SI = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SI = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SI_SUFFIX = {exponent: suffix for suffix, exponent in _DECIMAL_SI.items()}
_BINARY_SUFFIX = {power // 10: suffix for suffix, power in _BINARY_SI.items()} | {0: ""}
_EXPONENT = re.compile(r"[eE]([+-]?[0-9]+)")
_NANO = -9
_MAX_INT64 = 2**63 - 1
# The most digits the parser's 64-bit fast path takes (apimachinery's maxInt64Factors).
_FAST_DIGITS = 18
MAX_DIGITS = 256

HOW_TO_WRITE = "a quantity such as 1Gi, 500Mi, 2G or 1.5 (Kubernetes' resource quantity syntax)"


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


@dataclass(frozen=True)
class Quantity:
    """``unscaled`` * 10^``scale``, in ``format``. ``given`` is the text ``str()`` returns unchanged
    where apimachinery keeps the input's own spelling."""

    unscaled: int
    scale: int
    format: Format
    given: str | None = None

    @classmethod
    def parse(cls, text: str) -> Quantity:
        """As ``resource.ParseQuantity``; raises QuantityError for what it refuses."""
        return _parse(text)

    @classmethod
    def of(cls, value: int | str) -> Quantity:
        """A quantity as the API server hands it over: a JSON integer or a string."""
        return _parse(str(value) if isinstance(value, int) else value)

    def is_zero(self) -> bool:
        return self.unscaled == 0

    def __add__(self, other: Quantity) -> Quantity:
        """As ``Quantity.Add``: exact, in this one's format unless this one is zero. Raises
        QuantityError where the exact sum would need more than 2 * MAX_DIGITS digits."""
        scale = min(self.scale, other.scale)
        for term in (self, other):
            if term.unscaled and len(str(abs(term.unscaled))) + term.scale - scale > 2 * MAX_DIGITS:
                raise QuantityError(
                    f"{self} + {other}: the exact sum would have more than {2 * MAX_DIGITS} digits; "
                    "write both in units of similar size"
                )
        unscaled = self.unscaled * _ten_to(self.scale - scale) + other.unscaled * _ten_to(other.scale - scale)
        return Quantity(unscaled, scale, other.format if self.is_zero() else self.format)

    def __str__(self) -> str:
        if self.given is not None:
            return self.given
        if self.unscaled == 0:
            return "0"
        if self.format == "BinarySI" and not _below(self.unscaled, self.scale, 1024):
            whole = _integer(self.unscaled, self.scale)
            if whole is not None:
                return _binary_text(whole)
        # A binary value under 1024 or with a fraction prints as decimal SI: nothing is rounded.
        return _decimal_text(
            self.unscaled, self.scale, "DecimalExponent" if self.format == "DecimalExponent" else "DecimalSI"
        )


def canonical_quantity(value: int | str) -> str:
    """``Quantity.String()`` of a quantity field's value (``1024Mi`` → ``1Gi``)."""
    return str(Quantity.of(value))


def _ten_to(power: int) -> int:
    """10^power for power >= 0 (typed: ``int ** int`` may be a float to a type checker)."""
    result: int = 10**power
    return result


def _int32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def _below(unscaled: int, scale: int, bound: int) -> bool:
    """|unscaled * 10^scale| < bound, without building a huge power of ten."""
    magnitude = abs(unscaled)
    if magnitude == 0:
        return True
    if scale >= 0:
        return scale < len(str(bound)) and magnitude * _ten_to(scale) < bound
    return magnitude < bound * _ten_to(-scale)


def _integer(unscaled: int, scale: int) -> int | None:
    if scale >= 0:
        return unscaled * _ten_to(scale)
    whole, fraction = divmod(unscaled, _ten_to(-scale))
    return whole if fraction == 0 else None


def _binary_text(value: int) -> str:
    mantissa, power = value, 0
    while mantissa % 1024 == 0:
        mantissa //= 1024
        power += 1
    # Past Ei apimachinery has no suffix and writes the mantissa alone (only sums get there).
    return f"{mantissa}{_BINARY_SUFFIX.get(power, '')}"


def _decimal_text(unscaled: int, scale: int, format: Format) -> str:
    digits = str(abs(unscaled))
    stripped = digits.rstrip("0")
    exponent = scale + len(digits) - len(stripped)
    shift = exponent % 3
    mantissa = ("-" if unscaled < 0 else "") + stripped + "0" * shift
    exponent -= shift
    if format == "DecimalExponent":
        return mantissa + (f"e{exponent}" if exponent else "")
    return mantissa + _SI_SUFFIX.get(exponent, "")


@dataclass(frozen=True)
class _Parts:
    positive: bool
    number: str  # the text of the number, sign included, suffix excluded
    whole: str  # integer digits without leading zeros ("0" when none)
    fraction: str
    suffix: str


def _error(text: str, why: str) -> QuantityError:
    shown = text if len(text) <= 64 else text[:64] + "…"
    return QuantityError(f'"{shown}" is not a quantity: {why}; write {HOW_TO_WRITE}')


def _scan(text: str) -> _Parts:
    """apimachinery's parseQuantityString: sign, digits, fraction, then a suffix."""
    end, pos, positive = len(text), 0, True
    if text[:1] in ("+", "-"):
        positive, pos = text[0] == "+", 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos == end:
        return _Parts(positive, "0", "0", "", "")
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    whole = text[start:pos] or "0"
    fraction = ""
    if pos < end and text[pos] == ".":
        start = pos = pos + 1
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        fraction = text[start:pos]
    number, start = text[:pos], pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in ("+", "-"):
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise _error(text, f"unexpected {text[pos]!r}")
    return _Parts(positive, number, whole, fraction, text[start:])


def _suffix(text: str, suffix: str) -> tuple[int, int, Format]:
    """(base, exponent, format) of a suffix."""
    if suffix in _DECIMAL_SI:
        return 10, _DECIMAL_SI[suffix], "DecimalSI"
    if suffix in _BINARY_SI:
        return 2, _BINARY_SI[suffix], "BinarySI"
    match = _EXPONENT.fullmatch(suffix)
    if match and -(2**63) <= int(match[1]) <= _MAX_INT64:
        return 10, _int32(int(match[1])), "DecimalExponent"
    raise _error(
        text, f'unknown suffix "{suffix}" (use Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or e<n>)'
    )


def _parse(text: str) -> Quantity:
    if text == "":
        raise _error(text, "it is empty")
    if text == "0":
        return Quantity(0, 0, "DecimalSI", "0")
    parts = _scan(text)
    if len(parts.whole) + len(parts.fraction) > MAX_DIGITS:
        raise _error(text, f"it has more than {MAX_DIGITS} digits, more than any capacity needs")
    base, exponent, format = _suffix(text, parts.suffix)
    fast = _fast_path(text, parts, base, exponent, format)
    if fast is not None:
        return fast
    if not any(c in _DIGITS for c in parts.number):
        raise _error(text, "it has no digits")
    unscaled, scale = int(parts.whole + parts.fraction), -len(parts.fraction)
    if base == 10:
        scale += exponent
    else:
        unscaled <<= exponent
    unscaled, scale = _round_up_to_nano(unscaled, scale)
    if format == "BinarySI" and not _below(unscaled, scale, _MAX_INT64 + 1):
        unscaled, scale = _MAX_INT64, 0
    if format == "BinarySI" and unscaled > 0 and _below(unscaled, scale, 1):
        format = "DecimalSI"
    return Quantity(unscaled if parts.positive else -unscaled, scale, format)


def _fast_path(text: str, parts: _Parts, base: int, exponent: int, format: Format) -> Quantity | None:
    """apimachinery's 64-bit path, which alone keeps the input's own text where it looks canonical;
    None where the exact (slow) path decides. Both give the same value."""
    digits = len(parts.whole) + len(parts.fraction)
    if base == 10:
        precision, scale, multiplier = _FAST_DIGITS - digits, exponent, 1
    elif not parts.fraction:
        # Binary suffixes have exponents 10..60: 1Mi (2^20) spends about 6 decimal digits.
        precision, scale, multiplier = 15 - len(parts.whole) - exponent * 3 // 10 - 1, 0, 1 << exponent
    else:
        return None
    scale -= len(parts.fraction)
    if precision < 0 or scale < _NANO:
        return None
    shifted = parts.whole + parts.fraction
    value = int(shifted)
    if value * multiplier > _MAX_INT64:
        return None
    if format == "BinarySI":
        canonical = value & 0x07 != 0
    else:
        canonical = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
    signed = value * multiplier if parts.positive else -value * multiplier
    return Quantity(signed, scale, format, text if canonical else None)


def _round_up_to_nano(unscaled: int, scale: int) -> tuple[int, int]:
    """Away from zero to a multiple of 10^-9, as apimachinery rounds (some is never none)."""
    if scale >= _NANO or unscaled == 0:
        return unscaled, scale
    shift = _NANO - scale
    if len(str(unscaled)) <= shift:
        return 1, _NANO
    whole, rest = divmod(unscaled, _ten_to(shift))
    return whole + (1 if rest else 0), _NANO
