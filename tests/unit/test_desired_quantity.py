"""Kubernetes quantities in the API server's canonical form, and upstream's sums."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.desired import quantity


@pytest.mark.parametrize(
    ("given_", "stored"),
    [
        # Upstream's own run (resource.Quantity.String()).
        ("1024Mi", "1Gi"),
        ("0.5Gi", "512Mi"),
        (2000000000, "2G"),
        ("1500Mi", "1500Mi"),
        ("1Gi", "1Gi"),
        # apimachinery's rules: below 1024 or fractional binary is decimal SI; decimal exponents are
        # multiples of 3; the exponent form is kept; sub-nano precision rounds up.
        ("1023Ki", "1023Ki"),
        ("1.5Ki", "1536"),
        ("0.1Mi", "104857600m"),
        ("1.5k", "1500"),
        ("0.5", "500m"),
        ("1000m", "1"),
        (2, "2"),
        ("1e3", "1e3"),
        ("12e6", "12e6"),
        ("1e-10", "1e-9"),
        ("0.0001", "100u"),
        ("-1Gi", "-1Gi"),
        ("0Gi", "0"),
        ("+1M", "1M"),
    ],
)
def test_canonical(given_: int | str, stored: str) -> None:
    assert quantity.canonical(given_) == stored


def test_a_sum_keeps_the_format_of_its_base() -> None:
    assert quantity.add(quantity.add("2Gi", "1024Mi"), "1500Mi") == "4572Mi"
    assert quantity.add("1G", "1Gi") == "2073741824"
    assert quantity.add("1", "1Gi") == "1073741825"


@pytest.mark.parametrize("text", ["", "1.2.3", "Gi", "1GiB", "1 Gi", "0x10"])
def test_not_a_quantity(text: str) -> None:
    with pytest.raises(quantity.QuantityError, match="is not a quantity"):
        quantity.canonical(text)
    assert quantity.canonical_or_given(text) == text


SUFFIXES = ["", "Ki", "Mi", "Gi", "Ti", "n", "u", "m", "k", "M", "G", "T", "e3", "e-2"]


@given(
    st.integers(0, 10**6),
    st.integers(0, 999).map(lambda n: f".{n:03d}".rstrip("0").rstrip(".")),
    st.sampled_from(SUFFIXES),
)
def test_canonical_is_stable_and_keeps_the_value(whole: int, fraction: str, suffix: str) -> None:
    text = f"{whole}{fraction}{suffix}"
    value, _ = quantity.parse(text)
    once = quantity.canonical(text)
    assert quantity.canonical(once) == once
    assert quantity.parse(once)[0] == value
    assert value >= Fraction(0)
