"""kubectl's table look (no borders, upper-case headers, three spaces, no trailing blanks) and its
AGE column (apimachinery's HumanDuration)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid.cli.table import NONE, age, cell, human_duration, render


def test_a_table_looks_like_kubectl_get() -> None:
    text = render(["name", "refs", "phase"], [["a", "10", "Ready"], ["long-name", "2", "<none>"]])
    assert text == (
        "NAME        REFS   PHASE\n"  # as wide as the widest cell, then three spaces
        "a           10     Ready\n"
        "long-name   2      <none>\n"
    )


def test_numbers_stay_left_aligned_text() -> None:
    # tabulate would right-align and reformat numbers; kubectl prints them as text.
    assert render(["a", "b"], [["007", "1e3"]]) == "A     B\n007   1e3\n"


def test_no_headers() -> None:
    assert render(["name"], [["x"], ["y"]], no_headers=True) == "x\ny\n"
    assert render(["name"], [], no_headers=True) == ""


@given(
    st.lists(
        st.lists(
            st.text(alphabet="abc-<>/:,0123 ", min_size=1, max_size=8).map(str.strip).filter(bool),
            min_size=3,
            max_size=3,
        ),
        min_size=1,
        max_size=5,
    )
)
def test_columns_line_up_and_lines_have_no_trailing_blanks(rows: list[list[str]]) -> None:
    rows = [[c.replace(" ", "_") for c in r] for r in rows]
    lines = render(["x", "y", "z"], rows).splitlines()
    assert len(lines) == len(rows) + 1
    starts = {tuple(m.start() for m in re.finditer(r"(?:^|(?<=   ))\S", line)) for line in lines}
    assert len(starts) == 1  # every line starts its cells at the same columns
    assert all(line == line.rstrip() for line in lines)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (330, "5m30s"),
        (600, "10m"),
        (179 * 60, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 20 * 60, "3h20m"),
        (8 * 3600, "8h"),
        (47 * 3600, "47h"),
        (2 * 86400 + 4 * 3600, "2d4h"),
        (3 * 86400, "3d"),
        (8 * 86400, "8d"),
        (400 * 86400, "400d"),
        (2 * 365 * 86400 + 3 * 86400, "2y3d"),
        (3 * 365 * 86400, "3y"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_human_duration_matches_apimachinery(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


@given(st.integers(min_value=0, max_value=20 * 365 * 86400))
def test_human_duration_shape(seconds: int) -> None:
    assert re.fullmatch(r"\d+[smhdy](\d+[smhd])?", human_duration(seconds))


def test_age() -> None:
    now = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    assert age((now - timedelta(seconds=75)).strftime("%Y-%m-%dT%H:%M:%SZ"), now) == "75s"
    assert age(None, now) == "<unknown>"
    assert age("not a time", now) == "<unknown>"


def test_cell() -> None:
    assert [cell(None), cell(""), cell([]), cell(True), cell(3), cell("x")] == [
        NONE,
        NONE,
        NONE,
        "true",
        "3",
        "x",
    ]
