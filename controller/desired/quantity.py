"""Kubernetes resource quantities as the API server stores them (``resource.Quantity.String()``).

The API server rewrites every quantity of a pod template into its canonical form (``1024Mi`` is
stored as ``1Gi``, ``2000000000`` as ``2G``, the integer ``1`` as the string ``"1"``). The controller
writes the canonical form itself, so what it wants compares equal to what is stored and a steady
cluster sees no writes; and it adds tiered-store quotas to memory requests the way upstream's Go
does (the sum keeps the format of the request it is added to).

The rules, from apimachinery's quantity.go: a quantity keeps the format of its suffix (binary
``Ki``…``Ei``, decimal SI ``n``…``E`` or none, or an ``e`` exponent); precision below 10^-9 rounds
up; a binary quantity below 1024 in magnitude, or not a whole number, is shown in decimal SI.
Decimal forms use the largest exponent, a multiple of 3, that leaves a whole mantissa; binary ones
the largest power of 1024.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Final, Literal

Format = Literal["BinarySI", "DecimalSI", "DecimalExponent"]

_BINARY: Final = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_BY_POWER: Final = {power: suffix for suffix, power in _BINARY.items()}
_DECIMAL_BY_EXPONENT: Final = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_PATTERN: Final = re.compile(
    r"(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<binary>[KMGTPE]i)|(?P<decimal>[numkMGTPE]?)|[eE](?P<exponent>[+-]?[0-9]+))"
)
_NANO: Final = 10**9


class QuantityError(ValueError):
    pass


def parse(quantity: int | str) -> tuple[Fraction, Format]:
    text = str(quantity).strip() if isinstance(quantity, int) else quantity
    match = _PATTERN.fullmatch(text)
    if match is None:
        raise QuantityError(f"{quantity!r} is not a quantity (examples: 1Gi, 512Mi, 500m, 2G)")
    value = Fraction(match["number"])
    fmt: Format
    if match["binary"]:
        value *= 1024 ** _BINARY[match["binary"]]
        fmt = "BinarySI"
    elif match["exponent"] is not None:
        value *= Fraction(10) ** int(match["exponent"])
        fmt = "DecimalExponent"
    else:
        value *= Fraction(10) ** _DECIMAL[match["decimal"] or ""]
        fmt = "DecimalSI"
    # Precision below nano rounds up (away from zero), as the Go parser does.
    value = Fraction(math.ceil(value * _NANO), _NANO)
    return (-value if match["sign"] == "-" else value), fmt


def is_zero(quantity: int | str) -> bool:
    return parse(quantity)[0] == 0


def canonical(quantity: int | str) -> str:
    return _format(*parse(quantity))


def add(base: int | str, extra: int | str) -> str:
    """``base + extra`` in ``base``'s format (Go's ``base.Add(extra)``)."""
    value, fmt = parse(base)
    return _format(value + parse(extra)[0], fmt)


def canonical_or_given(quantity: object) -> object:
    """The canonical form of a quantity, or the value unchanged when it is none (the API server's
    own validation then refuses it with its message)."""
    if isinstance(quantity, bool) or not isinstance(quantity, int | str):
        return quantity
    try:
        return canonical(quantity)
    except QuantityError:
        return quantity


def _format(value: Fraction, fmt: Format) -> str:
    if value == 0:
        return "0"
    if fmt == "BinarySI" and (abs(value) < 1024 or value.denominator != 1):
        fmt = "DecimalSI"
    sign, magnitude = ("-" if value < 0 else ""), abs(value)
    if fmt == "BinarySI":
        mantissa, power = int(magnitude), 0
        while mantissa % 1024 == 0 and power < max(_BINARY_BY_POWER):
            mantissa, power = mantissa // 1024, power + 1
        return f"{sign}{mantissa}{_BINARY_BY_POWER.get(power, '')}"
    mantissa, exponent = int(magnitude * _NANO), -9
    while mantissa % 1000 == 0:
        mantissa, exponent = mantissa // 1000, exponent + 3
    if exponent == 0:
        suffix = ""
    elif fmt == "DecimalSI" and exponent in _DECIMAL_BY_EXPONENT:
        suffix = _DECIMAL_BY_EXPONENT[exponent]
    else:
        suffix = f"e{exponent}"
    return f"{sign}{mantissa}{suffix}"
