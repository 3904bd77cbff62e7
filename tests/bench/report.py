"""Collects figures and prints them as one table, each beside its baseline with the ratio and, where an
issue set one, its goal and whether this run met it; the same rows go to a JSON file."""

from __future__ import annotations

import json
import operator
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Goal:
    """A target for a figure: on the value itself, or on its ratio to the baseline."""

    text: str
    on_ratio: bool
    limit: float
    holds: Callable[[float, float], bool] = field(compare=False, repr=False)

    def met(self, value: float, baseline: float | None) -> bool | None:
        if not self.on_ratio:
            return self.holds(value, self.limit)
        if not baseline:
            return None
        return self.holds(value / baseline, self.limit)


def at_most(limit: float, unit: str) -> Goal:
    return Goal(f"<= {limit:g} {unit}", False, limit, operator.le)


def at_least(limit: float, unit: str) -> Goal:
    return Goal(f">= {limit:g} {unit}", False, limit, operator.ge)


def ratio_at_most(limit: float) -> Goal:
    return Goal(f"ratio <= {limit:g}x", True, limit, operator.le)


def ratio_at_least(limit: float) -> Goal:
    return Goal(f"ratio >= {limit:g}x", True, limit, operator.ge)


@dataclass
class Row:
    name: str
    value: float
    unit: str
    baseline_name: str = ""
    baseline: float | None = None
    goal: Goal | None = None

    @property
    def ratio(self) -> float | None:
        return self.value / self.baseline if self.baseline else None

    @property
    def met(self) -> bool | None:
        return None if self.goal is None else self.goal.met(self.value, self.baseline)

    def as_json(self) -> dict[str, object]:
        fields = {k: v for k, v in asdict(self).items() if k != "goal"}
        return {**fields, "ratio": self.ratio, "goal": self.goal.text if self.goal else None, "met": self.met}


def _cell(met: bool | None) -> str:
    return {True: "yes", False: "NO", None: ""}[met]


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    pictures: dict[str, str] = field(default_factory=dict)  # file name -> SVG text

    def picture(self, name: str, text: str) -> None:
        self.pictures[name] = text

    def add(
        self,
        name: str,
        value: float,
        unit: str,
        baseline_name: str = "",
        baseline: float | None = None,
        *,
        goal: Goal | None = None,
    ) -> None:
        row = Row(name, value, unit, baseline_name, baseline, goal)
        self.rows.append(row)
        base = f"  (baseline {baseline_name}: {baseline:.3g} {unit})" if baseline is not None else ""
        aim = f"  [goal {goal.text}: {_cell(row.met) or 'n/a'}]" if goal else ""
        print(f"[bench] {name}: {value:.3g} {unit}{base}{aim}", flush=True)

    def table(self) -> list[list[str]]:
        return [
            [
                r.name,
                f"{r.value:.3g}",
                r.unit,
                r.baseline_name,
                "" if r.baseline is None else f"{r.baseline:.3g}",
                "" if r.ratio is None else f"{r.ratio:.2f}x",
                r.goal.text if r.goal else "",
                _cell(r.met),
            ]
            for r in self.rows
        ]

    def print(self) -> None:
        from tabulate import tabulate

        print()
        print(
            tabulate(
                self.table(),
                headers=["FIGURE", "VALUE", "UNIT", "BASELINE", "BASELINE VALUE", "RATIO", "GOAL", "MET"],
                tablefmt="plain",
            )
        )

    def write_json(self, path: Path) -> None:
        """The figures to ``path``, and each picture beside it as ``{stem}-{name}``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps([r.as_json() for r in self.rows], indent=2) + "\n")
        print(f"[bench] figures written to {path}", flush=True)
        for name, text in self.pictures.items():
            picture = path.with_name(f"{path.stem}-{name}")
            picture.write_text(text)
            print(f"[bench] picture written to {picture}", flush=True)


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[int(p) - 1]
