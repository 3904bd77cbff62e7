"""The bench's reading of Prometheus histograms (tests/bench/promtext.py)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from tests.bench import promtext

POD = 'component="apiserver",group="",resource="pods",scope="resource",verb="POST",version="v1"'
SCRAPE = f"""\
# HELP apiserver_request_duration_seconds [STABLE] Response latency distribution
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{{{POD},dry_run="",subresource="",le="0.005"}} 2
apiserver_request_duration_seconds_bucket{{{POD},dry_run="",subresource="",le="0.01"}} 6
apiserver_request_duration_seconds_bucket{{{POD},dry_run="",subresource="",le="+Inf"}} 10
apiserver_request_duration_seconds_bucket{{{POD},dry_run="",subresource="binding",le="0.005"}} 100
apiserver_request_duration_seconds_bucket{{{POD},dry_run="",subresource="binding",le="0.01"}} 100
apiserver_request_duration_seconds_bucket{{{POD},dry_run="",subresource="binding",le="+Inf"}} 100
apiserver_request_duration_seconds_bucket{{{POD},dry_run="All",le="0.005"}} 1
apiserver_request_duration_seconds_bucket{{{POD},dry_run="All",le="0.01"}} 1
apiserver_request_duration_seconds_bucket{{{POD},dry_run="All",le="+Inf"}} 1
apiserver_request_duration_seconds_sum{{{POD},dry_run="",subresource=""}} 0.5
"""

POD_CREATES = {"verb": "POST", "resource": "pods", "subresource": "", "dry_run": ""}


def test_buckets_sum_only_the_series_that_match_and_an_absent_label_matches_empty() -> None:
    b = promtext.buckets(SCRAPE, "apiserver_request_duration_seconds", POD_CREATES)
    assert b == {0.005: 2, 0.01: 6, math.inf: 10}
    # Without subresource in the match the binding series are summed in too.
    wider = promtext.buckets(SCRAPE, "apiserver_request_duration_seconds", {"verb": "POST", "dry_run": ""})
    assert wider == {0.005: 102, 0.01: 106, math.inf: 110}


def test_quantile_interpolates_inside_its_bucket_and_stops_at_the_last_finite_bound() -> None:
    b = {0.005: 2.0, 0.01: 6.0, math.inf: 10.0}
    assert promtext.quantile(0.1, b) == 0.0025  # rank 1 of 2 in (0, 0.005]
    assert promtext.quantile(0.4, b) == 0.0075  # rank 4: 2 of 4 in (0.005, 0.01]
    assert promtext.quantile(0.99, b) == 0.01  # in +Inf: the highest finite bound
    assert promtext.quantile(0.5, {0.1: 0.0, math.inf: 0.0}) is None


def test_difference_is_what_was_observed_between_two_scrapes() -> None:
    before = {0.005: 2.0, math.inf: 3.0}
    after = {0.005: 5.0, math.inf: 9.0}
    assert promtext.difference(after, before) == {0.005: 3.0, math.inf: 6.0}
    assert promtext.count(promtext.difference(after, before)) == 6.0


bounds = st.lists(st.floats(0.0001, 100.0), min_size=1, max_size=12, unique=True).map(sorted)


@given(
    bounds, st.lists(st.integers(0, 50), min_size=13, max_size=13), st.floats(0.0, 1.0), st.floats(0.0, 1.0)
)
def test_quantile_is_monotone_and_within_the_finite_bounds(
    les: list[float], adds: list[int], q1: float, q2: float
) -> None:
    cumulative, b = 0.0, {}
    for le, add in zip([*les, math.inf], adds, strict=False):
        cumulative += add
        b[le] = cumulative
    lo, hi = sorted((q1, q2))
    a, z = promtext.quantile(lo, b), promtext.quantile(hi, b)
    if cumulative == 0:
        assert a is None
        assert z is None
        return
    assert a is not None
    assert z is not None
    assert 0.0 <= a <= z <= les[-1]


def test_sums_by_a_label_over_the_kept_series() -> None:
    from tests.bench.promtext import WRITE_VERBS, sums_by

    text = "\n".join(
        [
            "# HELP apiserver_request_total x",
            'apiserver_request_total{code="200",resource="leases",verb="PUT"} 30',
            'apiserver_request_total{code="200",resource="leases",verb="GET"} 99',
            'apiserver_request_total{code="201",resource="fusemounts",verb="APPLY"} 4',
            'apiserver_request_total{code="200",resource="fusemounts",subresource="status",verb="APPLY"} 4',
            'apiserver_request_total_other{resource="leases",verb="PUT"} 7',
        ]
    )
    writes = sums_by(text, "apiserver_request_total", "resource", {"verb": WRITE_VERBS})
    assert writes == {"leases": 30.0, "fusemounts": 8.0}
    assert sums_by(text, "apiserver_request_total", "verb") == {"PUT": 30.0, "GET": 99.0, "APPLY": 8.0}
