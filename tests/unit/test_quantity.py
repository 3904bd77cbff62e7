"""kubectl_fluid.api.quantity against apimachinery itself: for any text, Quantity.parse refuses what
ParseQuantity refuses and str() is what String() prints; sums are what Add gives. The oracle is
hack/go-oracle (tests/unit/go_oracle.py), built on first use."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kubectl_fluid.api.quantity import Quantity, QuantityError, canonical_quantity
from tests.unit.go_oracle import ERROR, GoOracle


def ours(text: str) -> str:
    try:
        return str(Quantity.parse(text))
    except QuantityError:
        return ERROR


# --- upstream's examples, and the quirks, without the oracle ---------------------------------------
@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        # runtime.json's quotas as upstream writes them (the digest of upstream, 3.5).
        ("1024Mi", "1Gi"),
        ("0.5Gi", "512Mi"),
        ("2000000000", "2G"),
        ("1500Mi", "1500Mi"),
        ("1Gi", "1Gi"),
        (2000000000, "2G"),
        (1073741824, "1073741824"),
        (0, "0"),
        # Decimal: exponent lowered to a multiple of 3; 1n is the finest step, rounded away from zero.
        ("1.5e3", "1500"),
        ("1500m", "1500m"),
        ("0.1", "100m"),
        ("0.0000000001", "1n"),
        ("-0.0000000001", "-1n"),
        ("1e-10", "1e-9"),
        ("1000000E", "1"),  # past E apimachinery has no suffix and drops it
        # Binary: kept for integers of 1024 or more, else decimal.
        ("0.5Ki", "512"),
        ("1.5Ki", "1536"),
        ("1536Ki", "1536Ki"),
        ("0.0001Ki", "102400u"),
        ("8Ei", "9223372036854775807"),  # capped at 2^63-1
        # Texts the parser keeps as written.
        ("+1Ki", "+1Ki"),
        ("01", "01"),
        ("1E3", "1E3"),
        ("1.Gi", "1.Gi"),
    ],
)
def test_canonical_text(given: int | str, canonical: str) -> None:
    assert canonical_quantity(given) == canonical


@pytest.mark.parametrize(
    "text", ["", "1K", "1Gi ", " 1", "abc", "1e", "1ee3", "1.5.5", ".e-10", "1e99999999999999999999"]
)
def test_what_apimachinery_refuses_is_refused_with_the_text_and_the_syntax_named(text: str) -> None:
    with pytest.raises(QuantityError, match="is not a quantity") as refused:
        Quantity.parse(text)
    assert f'"{text}"' in str(refused.value)
    assert "1Gi" in str(refused.value)


def test_a_number_past_any_capacity_is_refused_not_crashed_on() -> None:
    with pytest.raises(QuantityError, match="more than 256 digits"):
        Quantity.parse("9" * 257)
    assert canonical_quantity("9" * 256) == "9" * 256
    with pytest.raises(QuantityError, match="exact sum would have more than 512 digits"):
        Quantity.parse("2Gi") + Quantity.parse("1e999999")
    assert canonical_quantity("1e-999999999") == "1e-9"  # rounded up without a huge power of ten


def test_sums_as_upstream_adds_tier_quotas_to_memory_requests() -> None:
    # The digest's edge-case fixture: requests 2Gi and limits 4Gi, plus a 1Gi processMemory level
    # and a 1500Mi Memory emptyDir level.
    tiers = Quantity.parse("1Gi") + Quantity.parse("1500Mi")
    assert str(Quantity.parse("2Gi") + tiers) == "4572Mi"
    assert str(Quantity.parse("4Gi") + tiers) == "6620Mi"
    assert str(Quantity.parse("0") + Quantity.parse("1Gi")) == "1Gi"  # a zero takes the other's format


# --- against apimachinery --------------------------------------------------------------------------
SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]


@st.composite
def quantity_texts(draw: st.DrawFn, max_exponent: int = 400) -> str:
    """Texts of the quantity grammar: every suffix, fractions, exponents, signs, leading zeros, and
    values big and tiny enough to leave apimachinery's 64-bit fast path."""
    sign = draw(st.sampled_from(["", "", "+", "-"]))
    zeros = draw(st.sampled_from(["", "", "0", "00"]))
    whole = draw(st.text("0123456789", max_size=draw(st.sampled_from([3, 12, 25]))))
    fraction = draw(st.none() | st.text("0123456789", max_size=draw(st.sampled_from([2, 9, 25]))))
    exponent = draw(st.integers(-40, 40) | st.integers(-max_exponent, max_exponent))
    suffix = draw(
        st.sampled_from(SUFFIXES)
        | st.builds(
            lambda e, p, s: f"{e}{p}{s}", st.sampled_from("eE"), st.sampled_from(["", "+"]), st.just(exponent)
        )
    )
    number = zeros + whole + ("" if fraction is None else "." + fraction)
    return sign + (number or "0") + suffix


# Anything near the grammar, to agree on what is refused too. Short, so that no exponent is large
# enough to make apimachinery build a power of ten with millions of digits.
near_texts = st.text(alphabet="0123456789.+-eEinumkKMGTPi x", max_size=8)


@settings(max_examples=600, deadline=None)
@given(quantity_texts())
@example("9223372036854775807")
@example("9223372036854775808")
@example("999999999999999999")
@example("1000000000000000000")
@example("0.000000001")
@example("0.0000000001")
@example("12345678901Ki")
@example("123456789012Ki")
@example("7Ei")
@example("-8Ei")
@example("1e18")
@example("1e19E")
@example("+1234567890123456789")  # 19 digits: past the fast path, so the text is not kept
@example("+123456789012345678")  # 18 digits: kept as written
@example("1e4294967299")  # the exponent kept in 32 bits, as Go's int32() does
@example("1e9223372036854775807")
def test_string_is_apimachinerys(oracle: GoOracle, text: str) -> None:
    assert ours(text) == oracle.quantity(text), text


@settings(max_examples=400, deadline=None)
@given(near_texts)
@example(".")
@example("-")
@example("+.")
@example(".Pi")
@example(".Gi")
@example("0.0")
@example("-0Ki")
@example("1e+")
def test_what_is_refused_and_what_is_not_is_apimachinerys(oracle: GoOracle, text: str) -> None:
    assert ours(text) == oracle.quantity(text), text


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2**70), 2**70) | st.integers(-(10**6), 10**6))
def test_json_integers_are_read_as_apimachinery_reads_them(oracle: GoOracle, value: int) -> None:
    # Quantity.UnmarshalJSON parses a JSON number's own text.
    assert canonical_quantity(value) == oracle.quantity(str(value)), value


@settings(max_examples=300, deadline=None)
@given(quantity_texts(max_exponent=40), quantity_texts(max_exponent=40))
@example("0.0001Ki", "1023.8976")  # binary under 1 is parsed as decimal: the sum is 1024, not 1Ki
def test_sums_are_apimachinerys(oracle: GoOracle, a: str, b: str) -> None:
    try:
        ours_sum = str(Quantity.parse(a) + Quantity.parse(b))
    except QuantityError:
        ours_sum = ERROR
    assert ours_sum == oracle.add(a, b), (a, b)
