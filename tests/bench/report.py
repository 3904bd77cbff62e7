"""Collects figures and prints them as one table, each beside its baseline with the ratio."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field


@dataclass
class Row:
    name: str
    value: float
    unit: str
    baseline_name: str = ""
    baseline: float | None = None

    @property
    def ratio(self) -> str:
        if not self.baseline:
            return ""
        return f"{self.value / self.baseline:.2f}x"


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)

    def add(
        self, name: str, value: float, unit: str, baseline_name: str = "", baseline: float | None = None
    ) -> None:
        self.rows.append(Row(name, value, unit, baseline_name, baseline))
        base = f"  (baseline {baseline_name}: {baseline:.3g} {unit})" if baseline is not None else ""
        print(f"[bench] {name}: {value:.3g} {unit}{base}", flush=True)

    def print(self) -> None:
        from tabulate import tabulate

        table = [
            [
                r.name,
                f"{r.value:.3g}",
                r.unit,
                r.baseline_name,
                "" if r.baseline is None else f"{r.baseline:.3g}",
                r.ratio,
            ]
            for r in self.rows
        ]
        print()
        print(
            tabulate(
                table,
                headers=["FIGURE", "VALUE", "UNIT", "BASELINE", "BASELINE VALUE", "RATIO"],
                tablefmt="plain",
            )
        )


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[int(p) - 1]
