"""The bench's pictures (tests/bench/svg.py): well-formed SVG whose lines stay in the plot and say
what they show."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.bench import svg

NS = "{http://www.w3.org/2000/svg}"


def polylines(text: str) -> list[list[tuple[float, float]]]:
    root = ET.fromstring(text)
    out = []
    for line in root.iter(f"{NS}polyline"):
        pts = [tuple(float(c) for c in p.split(",")) for p in line.attrib["points"].split()]
        out.append([(x, y) for x, y in pts])
    return out


def inside(points: list[tuple[float, float]]) -> bool:
    return all(
        svg.LEFT - 0.1 <= x <= svg.WIDTH - svg.RIGHT + 0.1
        and svg.TOP - 0.1 <= y <= svg.HEIGHT - svg.BOTTOM + 0.1
        for x, y in points
    )


def test_cdf_draws_one_rising_line_per_series_with_its_percentiles_in_the_legend() -> None:
    text = svg.cdf("admission latency", {"fluid-webhook": [1.0, 2.0, 3.0, 40.0], "Go webhook": [0.5, 0.6]})
    lines = polylines(text)
    assert len(lines) == 2
    for pts in lines:
        assert inside(pts)
        ys = [y for _, y in pts]
        assert ys == sorted(ys, reverse=True)  # SVG's y grows downwards: a rising share
    legend = " ".join("".join(ET.fromstring(text).itertext()).split())
    assert "fluid-webhook: p50 2, p99" in legend
    assert "40 ms" in legend
    assert "Go webhook" in legend


def test_an_empty_series_draws_nothing_and_the_picture_is_still_valid() -> None:
    assert polylines(svg.cdf("t", {"empty": []})) == []
    assert polylines(svg.timeline("t", {"none": []}, "datasets")) == []
    assert polylines(svg.timeline("t", {}, "datasets")) == []


@given(
    st.dictionaries(
        st.text("abcdef -", min_size=1, max_size=30),
        st.lists(st.tuples(st.floats(0, 5000), st.floats(0, 3000)), min_size=1, max_size=40),
        min_size=1,
        max_size=4,
    )
)
def test_timeline_lines_stay_inside_the_plot(series: dict[str, list[tuple[float, float]]]) -> None:
    text = svg.timeline("convergence", series, "datasets")
    lines = polylines(text)
    assert len(lines) == len(series)  # every series has a sample, so every one is drawn
    for pts in lines:
        assert inside(pts)
        xs = [x for x, _ in pts]
        assert xs == sorted(xs)


@given(st.lists(st.floats(0.001, 1e5), min_size=1, max_size=200))
def test_cdf_of_any_samples_stays_inside_and_ends_at_all_of_them(samples: list[float]) -> None:
    (pts,) = polylines(svg.cdf("t", {"s": samples}))
    assert inside(pts)
    assert abs(pts[-1][1] - svg.TOP) < 0.11  # the last step reaches 100%


def rects(text: str) -> list[dict[str, float]]:
    """The bars: every filled rect but the white background."""
    root = ET.fromstring(text)
    return [
        {k: float(r.attrib[k]) for k in ("x", "y", "width", "height")}
        for r in root.iter(f"{NS}rect")
        if r.attrib.get("fill") not in ("white", "none")
    ]


def test_bars_draw_one_bar_per_value_in_its_group_with_the_value_above_it() -> None:
    groups = {"seq read": {"client": 1.0, "CSI": 0.5}, "stat": {"client": 0.98}}
    text = svg.bars("ratios", groups, "app / node", reference=0.97)
    bars = rects(text)
    assert len(bars) == 3
    one, half = bars[0], bars[1]
    assert half["height"] == pytest.approx(one["height"] / 2)
    assert one["y"] + one["height"] == pytest.approx(svg.HEIGHT - svg.BOTTOM)  # from the axis up
    assert bars[2]["x"] > bars[1]["x"] > bars[0]["x"]  # groups left to right
    words = " ".join("".join(ET.fromstring(text).itertext()).split())
    for said in ("1.00", "0.50", "0.98", "client", "CSI", "seq read"):
        assert said in words, words
    assert len(list(ET.fromstring(text).iter(f"{NS}line"))) > 0


@given(
    st.dictionaries(
        st.text("abcdef -", min_size=1, max_size=30),
        st.dictionaries(st.sampled_from(["a", "b", "c"]), st.floats(0, 5), max_size=3),
        max_size=6,
    ),
    st.none() | st.floats(0, 2),
)
def test_bars_stay_inside_the_plot(groups: dict[str, dict[str, float]], reference: float | None) -> None:
    bars = rects(svg.bars("t", groups, "ratio", reference))
    assert len(bars) == sum(len(v) for v in groups.values())
    for b in bars:
        assert inside([(b["x"], b["y"]), (b["x"] + b["width"], b["y"] + b["height"])])
