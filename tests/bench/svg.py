"""The bench's pictures as standalone SVG text (no plotting library): step lines on a grid with labelled
axes and a legend, for figures people would rather look at than read:

- ``cdf``: latency distributions side by side (x: latency on a log scale, y: share of requests on a
  "nines" scale, 50%, 90%, 99%, 99.9% evenly apart, so that the tail, where webhooks differ, is seen);
- ``timeline``: counts over time (x: seconds, y: objects), e.g. datasets converged;
- ``bars``: grouped bars (one group per test, one bar per series), e.g. each test's ratio per FUSE,
  with a dashed line at a reference value (1.0: no difference) when given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from xml.sax.saxutils import escape

WIDTH, HEIGHT = 760, 420
LEFT, RIGHT, TOP, BOTTOM = 70, 190, 40, 50
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")

Point = tuple[float, float]


def cdf(title: str, samples: Mapping[str, Sequence[float]], unit: str = "ms") -> str:
    """Each series' empirical distribution: the share of its samples at or below each latency."""
    series: dict[str, list[Point]] = {}
    for name, values in samples.items():
        ordered = sorted(v for v in values if v > 0)
        if ordered:
            n = len(ordered)
            series[name] = [(v, (i + 1) / n) for i, v in enumerate(ordered)]
    lo = min((p[0][0] for p in series.values()), default=0.1)
    hi = max((p[-1][0] for p in series.values()), default=1.0)
    x_lo, x_hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
    if x_hi <= x_lo:
        x_hi = x_lo * 10

    def x(v: float) -> float:
        return (math.log10(v) - math.log10(x_lo)) / (math.log10(x_hi) - math.log10(x_lo))

    x_ticks = [
        (x(10.0**e), _number(10.0**e)) for e in range(round(math.log10(x_lo)), round(math.log10(x_hi)) + 1)
    ]
    y_ticks = [(_nines(q), f"{q:.1%}".replace(".0%", "%")) for q in (0, 0.5, 0.9, 0.99, 0.999)]
    legend = {name: f"{name}: p50 {_quantile(pts, 0.5):.3g}, p99 {_quantile(pts, 0.99):.3g} {unit}"
              for name, pts in series.items()}  # fmt: skip
    lines = {legend[name]: [(x(v), _nines(share)) for v, share in pts] for name, pts in series.items()}
    return _chart(
        title,
        x_label=f"latency ({unit}, log scale)",
        y_label="share of requests at or below",
        x_ticks=x_ticks,
        y_ticks=y_ticks,
        lines=lines,
    )


def timeline(title: str, series: Mapping[str, Sequence[Point]], y_label: str) -> str:
    """Each series' (seconds, count) samples as a step line from t = 0."""
    t_hi = max((t for pts in series.values() for t, _ in pts), default=1.0) or 1.0
    y_hi = max((v for pts in series.values() for _, v in pts), default=1.0) or 1.0
    t_step, y_step = _step(t_hi), _step(y_hi)
    t_top, y_top = math.ceil(t_hi / t_step) * t_step, math.ceil(y_hi / y_step) * y_step
    x_ticks = [(i * t_step / t_top, _number(i * t_step)) for i in range(round(t_top / t_step) + 1)]
    y_ticks = [(i * y_step / y_top, _number(i * y_step)) for i in range(round(y_top / y_step) + 1)]
    lines = {name: [(t / t_top, v / y_top) for t, v in sorted(pts)] for name, pts in series.items()}
    return _chart(title, x_label="seconds", y_label=y_label, x_ticks=x_ticks, y_ticks=y_ticks, lines=lines)


def bars(
    title: str, groups: Mapping[str, Mapping[str, float]], y_label: str, reference: float | None = None
) -> str:
    """One group of bars per key of ``groups``, a bar per series in it (series coloured alike across
    groups, its value written above it); a dashed line at ``reference``."""
    series = list(dict.fromkeys(s for bars in groups.values() for s in bars))
    top = max([v for bars in groups.values() for v in bars.values()] + [reference or 0.0], default=1.0)
    step = _step(top or 1.0)
    y_top = math.ceil(top / step) * step or step
    w, h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    x_ticks = [(i + 0.5) / max(len(groups), 1) for i in range(len(groups))]
    y_ticks = [(i * step / y_top, _number(i * step)) for i in range(round(y_top / step) + 1)]
    out = _frame(title, x_label="", y_label=y_label, x_ticks=[], y_ticks=y_ticks)
    slot = w / max(len(groups), 1)
    bar = slot * 0.8 / max(len(series), 1)
    for (group, values), centre in zip(groups.items(), x_ticks, strict=True):
        left = LEFT + centre * w - bar * len(series) / 2
        for i, name in enumerate(series):
            if name not in values:
                continue
            v = max(values[name], 0.0)
            x, y = left + i * bar, TOP + (1 - v / y_top) * h
            colour = COLOURS[i % len(COLOURS)]
            out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar * 0.9:.1f}" height="{TOP + h - y:.1f}" '
                       f'fill="{colour}"/>')  # fmt: skip
            out.append(f'<text x="{x + bar * 0.45:.1f}" y="{y - 3:.1f}" text-anchor="middle" '
                       f'font-size="10">{v:.2f}</text>')  # fmt: skip
        for j, part in enumerate(_wrap(group, max(int(slot / 7), 6))):
            out.append(f'<text x="{LEFT + centre * w:.1f}" y="{TOP + h + 14 + j * 12}" '
                       f'text-anchor="middle" font-size="10">{escape(part)}</text>')  # fmt: skip
    if reference is not None:
        y = TOP + (1 - reference / y_top) * h
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + w}" y2="{y:.1f}" stroke="#444" '
                   'stroke-dasharray="5,4"/>')  # fmt: skip
        out.append(f'<text x="{LEFT + w - 4}" y="{y - 4:.1f}" text-anchor="end" font-size="10" '
                   f'fill="#444">{reference:g}</text>')  # fmt: skip
    out += _legend({name: COLOURS[i % len(COLOURS)] for i, name in enumerate(series)})
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _chart(
    title: str,
    *,
    x_label: str,
    y_label: str,
    x_ticks: Sequence[tuple[float, str]],
    y_ticks: Sequence[tuple[float, str]],
    lines: Mapping[str, Sequence[Point]],
) -> str:
    """Axes and step lines; every coordinate given in 0..1 of the plot area."""
    w, h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(fx: float, fy: float) -> str:
        return f"{LEFT + fx * w:.1f},{TOP + (1 - fy) * h:.1f}"

    out = _frame(title, x_label=x_label, y_label=y_label, x_ticks=x_ticks, y_ticks=y_ticks)
    for i, points in enumerate(lines.values()):
        steps, last_y = [], 0.0
        for fx, fy in points:
            steps += [px(fx, last_y), px(fx, fy)]
            last_y = fy
        if steps:
            colour = COLOURS[i % len(COLOURS)]
            out.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="1.6" points="{" ".join(steps)}"/>'
            )
    out += _legend({name: COLOURS[i % len(COLOURS)] for i, name in enumerate(lines)})
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _frame(
    title: str,
    *,
    x_label: str,
    y_label: str,
    x_ticks: Sequence[tuple[float, str]],
    y_ticks: Sequence[tuple[float, str]],
) -> list[str]:
    """The picture's opening: title, grid, ticks, the plot's border and the axes' labels."""
    w, h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{LEFT}" y="{TOP - 16}" font-size="15">{escape(title)}</text>',
    ]
    for fx, text in x_ticks:
        out.append(f'<line x1="{LEFT + fx * w:.1f}" y1="{TOP}" x2="{LEFT + fx * w:.1f}" '
                   f'y2="{TOP + h}" stroke="#ddd"/>')  # fmt: skip
        out.append(
            f'<text x="{LEFT + fx * w:.1f}" y="{TOP + h + 16}" text-anchor="middle">{escape(text)}</text>'
        )
    for fy, text in y_ticks:
        y = TOP + (1 - fy) * h
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + w}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(text)}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{w}" height="{h}" fill="none" stroke="#444"/>')
    if x_label:
        label = escape(x_label)
        out.append(f'<text x="{LEFT + w / 2}" y="{HEIGHT - 12}" text-anchor="middle">{label}</text>')
    rotated = f"translate(16,{TOP + h / 2}) rotate(-90)"
    out.append(f'<text transform="{rotated}" text-anchor="middle">{escape(y_label)}</text>')
    return out


def _legend(colours: Mapping[str, str]) -> list[str]:
    """Right of the plot: each name beside its colour, each entry below the previous one's last line."""
    x, ly, out = WIDTH - RIGHT, TOP + 14, []
    for name, colour in colours.items():
        out.append(f'<line x1="{x + 12}" y1="{ly}" x2="{x + 32}" y2="{ly}" stroke="{colour}" '
                   'stroke-width="3"/>')  # fmt: skip
        parts = _wrap(name, 24)
        for j, part in enumerate(parts):
            out.append(f'<text x="{x + 38}" y="{ly + 4 + j * 14}">{escape(part)}</text>')
        ly += 14 * len(parts) + 12
    return out


NINES = 3  # the y axis ends at 99.9%


def _nines(share: float) -> float:
    """0..1 on the axis: how many nines the share has (0.9 -> 1, 0.99 -> 2), of NINES."""
    return min(-math.log10(max(1.0 - share, 10.0**-NINES)), NINES) / NINES


def _quantile(points: Sequence[Point], q: float) -> float:
    """The smallest sample whose share reaches q."""
    return float(next((v for v, share in points if share >= q), points[-1][0]))


def _step(top: float) -> float:
    """A round tick step giving 4 to 10 ticks up to ``top``."""
    raw = max(top / 5, 1e-9)  # a series of zeros (or denormals) still gets an axis
    magnitude = 10 ** math.floor(math.log10(raw))
    return float(next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw))


def _number(v: float) -> str:
    return f"{v:g}"


def _wrap(text: str, width: int) -> list[str]:
    lines, current = [], ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}".strip()
    return [*lines, current] if current else lines


def stages(
    title: str, parts: Sequence[tuple[str, float, str]], unit: str = "s", x_label: str = "seconds"
) -> str:
    """Consecutive stages as a waterfall, one row each: (name, duration, group), each bar starting where
    the one above ended, coloured by its group (e.g. whose time it is), with its duration beside it."""
    row, label_w, pad = 20, 300, 60
    w = WIDTH - label_w - pad
    height = TOP + row * max(len(parts), 1) + BOTTOM + 30
    whole = sum(max(d, 0.0) for _, d, _ in parts) or 1.0
    step = _step(whole)
    top = math.ceil(whole / step) * step
    groups = list(dict.fromkeys(g for _, _, g in parts))
    colour = {g: COLOURS[i % len(COLOURS)] for i, g in enumerate(groups)}
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
        f'<text x="10" y="{TOP - 16}" font-size="15">{escape(title)}</text>',
    ]
    bottom = TOP + row * len(parts)
    for i in range(round(top / step) + 1):
        x = label_w + i * step / top * w
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{bottom}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{_number(i * step)}</text>')
    at = 0.0
    for i, (name, duration, group) in enumerate(parts):
        d = max(duration, 0.0)
        y, x = TOP + i * row, label_w + at / top * w
        out.append(f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end">{escape(name)}</text>')
        bar = f'x="{x:.1f}" y="{y + 3}" width="{max(d / top * w, 0.5):.1f}" height="{row - 6}"'
        out.append(f'<rect class="stage" {bar} fill="{colour[group]}"/>')
        out.append(f'<text x="{x + d / top * w + 4:.1f}" y="{y + 14}">{d:.3g} {escape(unit)}</text>')
        at += d
    out.append(f'<text x="{label_w + w / 2}" y="{bottom + 32}" text-anchor="middle">{escape(x_label)}</text>')
    ly = bottom + 56
    for j, g in enumerate(groups):
        lx = label_w + j * 180
        out.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{colour[g]}"/>')
        total = sum(max(d, 0.0) for _, d, gg in parts if gg == g)
        out.append(f'<text x="{lx + 16}" y="{ly}">{escape(g)}: {total:.3g} {escape(unit)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
