"""The webhook's negative cache (webhook/notfound.py) over any sequence of 404s, watch events and
reads: it never claims "not found" for a name past its lifetime or after the watch reported it, and
below its capacity it remembers every 404 for the whole lifetime."""

from __future__ import annotations

from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.notfound import NotFound

Op = tuple[Literal["404", "added", "read"], str, float]
KEYS = ["ds1", "ds2", "ds3", "ds4", "ds5"]
ops = st.lists(
    st.tuples(
        st.sampled_from(["404", "added", "read"]), st.sampled_from(KEYS), st.floats(0, 4, allow_nan=False)
    ),
    max_size=100,
)


def _replay(cache: NotFound[str], sequence: list[Op]) -> list[tuple[str, bool, bool]]:
    """(key, what the cache said, what a 404 model with no capacity says) for each read."""
    now = 0.0
    last_404: dict[str, float] = {}
    reads = []
    for op, key, gap in sequence:
        now += gap
        if op == "404":
            cache.add(key, now)
            last_404[key] = now
        elif op == "added":
            cache.forget(key)
            last_404.pop(key, None)
        else:
            model = key in last_404 and now < last_404[key] + cache.ttl
            reads.append((key, cache.known(key, now), model))
    return reads


@settings(max_examples=500, deadline=None)
@given(ops, st.floats(0.5, 10, allow_nan=False), st.integers(1, 6))
def test_never_remembers_a_name_past_its_lifetime_or_after_the_watch_added_it(
    sequence: list[Op], ttl: float, capacity: int
) -> None:
    cache: NotFound[str] = NotFound(ttl, capacity)
    for key, said, model in _replay(cache, sequence):
        assert not said or model, key
    assert len(cache) <= capacity


@settings(max_examples=300, deadline=None)
@given(ops, st.floats(0.5, 10, allow_nan=False))
def test_below_its_capacity_it_remembers_every_404_for_its_lifetime(sequence: list[Op], ttl: float) -> None:
    for key, said, model in _replay(NotFound(ttl, capacity=len(KEYS)), sequence):
        assert said == model, key


def test_a_flood_of_names_forgets_the_oldest_first() -> None:
    cache: NotFound[str] = NotFound(ttl=5, capacity=3)
    for i, key in enumerate(["a", "b", "c", "d"]):
        cache.add(key, now=i * 0.1)
    assert [cache.known(k, now=1) for k in "abcd"] == [False, True, True, True]
    assert not cache.known("d", now=5.3)


def test_a_cache_that_remembers_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match="ttl > 0 and capacity >= 1"):
        NotFound(ttl=0)
