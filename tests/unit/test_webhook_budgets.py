"""The per-namespace budgets of direct GETs (webhook/budgets.py), over any sequence of takes: what a
namespace is granted never depends on another namespace, and never exceeds its burst plus its rate
over the time gone by (plus one take above the burst)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.budgets import NAMESPACE_BURST, Budgets

NAMESPACES = ["team-a", "team-b", "team-c"]
# (namespace, count, seconds since the previous take)
takes = st.lists(
    st.tuples(st.sampled_from(NAMESPACES), st.integers(0, 200), st.floats(0, 3, allow_nan=False)),
    max_size=80,
)


def _timed(sequence: list[tuple[str, int, float]]) -> list[tuple[str, int, float]]:
    """The takes with the time of each (gaps summed) in place of the gap."""
    now, timed = 100.0, []
    for namespace, count, gap in sequence:
        now += gap
        timed.append((namespace, count, now))
    return timed


def _run(budgets: Budgets, timed: list[tuple[str, int, float]]) -> list[bool]:
    return [budgets.take(namespace, count, now) for namespace, count, now in timed]


@settings(max_examples=500, deadline=None)
@given(takes, st.integers(1, 64), st.floats(0.5, 50, allow_nan=False))
def test_a_namespace_is_granted_the_same_whatever_the_others_take_and_no_more_than_its_rate(
    sequence: list[tuple[str, int, float]], burst: int, rate: float
) -> None:
    timed = _timed(sequence)
    shared = _run(Budgets(burst, rate), timed)
    elapsed = sum(gap for _, _, gap in sequence)
    for namespace in NAMESPACES:
        alone = [take for take in timed if take[0] == namespace]
        mine = [granted for take, granted in zip(timed, shared, strict=True) if take[0] == namespace]
        # The same takes at the same times, every other namespace's left out: the same answers.
        assert _run(Budgets(burst, rate), alone) == mine
        spent = [count for (_, count, _), granted in zip(alone, mine, strict=True) if granted]
        above_burst = max(0, max(spent, default=0) - burst)
        assert sum(spent) <= burst + rate * elapsed + above_burst + 1e-6


def test_a_spent_namespace_is_refused_at_once_and_served_again_as_it_refills() -> None:
    budgets = Budgets(burst=10, rate=2)
    assert budgets.take("team-a", 10, now=0)
    assert not budgets.take("team-a", 1, now=0)
    assert budgets.take("team-b", 10, now=0), "another namespace's budget is its own"
    assert not budgets.take("team-a", 2, now=0.5)
    assert budgets.take("team-a", 2, now=1.0)
    assert budgets.take("team-a", 0, now=1.0), "nothing to fetch costs nothing"


def test_a_take_above_the_burst_is_granted_from_a_full_bucket_and_leaves_a_debt() -> None:
    budgets = Budgets(burst=10, rate=10)
    assert budgets.take("team-a", 25, now=0)
    assert budgets.level("team-a", now=0) == -15
    assert not budgets.take("team-a", 1, now=1.0)
    assert budgets.take("team-a", 1, now=1.6)


def test_full_buckets_are_dropped_so_the_namespaces_seen_cost_no_memory() -> None:
    budgets = Budgets(burst=4, rate=1)
    for i in range(5000):
        assert budgets.take(f"ns-{i}", 1, now=i * 10.0)
    assert budgets.tracked() <= 1024


def test_the_defaults_serve_one_pod_naming_64_new_datasets_at_once() -> None:
    assert Budgets().take("team-a", 2 * 64, now=0)
    assert NAMESPACE_BURST >= 2 * 64


def test_a_budget_that_grants_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match="burst >= 1 and rate > 0"):
        Budgets(burst=0)
