"""The watch cache holds the answers to the controller's own writes (``observe``): the next pass over
a key compares against what the server has, never against an older version, whichever of the answer
and the watch event comes first; and the watch's event for a version the writer already holds does
not queue the writer's key again."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid.kube.resources import CONFIGMAPS
from kubectl_fluid.kube.watchcache import WatchCache


def cm(rv: int, value: str = "") -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "name": "a", "resourceVersion": str(rv)}, "data": {"v": value}}


def cache() -> tuple[WatchCache, list[tuple[str, str]]]:
    c = WatchCache(None, CONFIGMAPS)  # type: ignore[arg-type]  # no I/O in these tests
    heard: list[tuple[str, str]] = []
    c.add_handler(lambda event, obj: heard.append((event, obj["metadata"]["resourceVersion"])))
    return c, heard


def held(c: WatchCache) -> str:
    obj = c.get("ns", "a")
    assert obj is not None
    return str(obj["metadata"]["resourceVersion"])


def test_an_answer_is_held_before_the_watch_brings_it_and_its_own_event_is_not_heard() -> None:
    c, heard = cache()
    c._apply({"type": "ADDED", "object": cm(5)})
    c.observe(cm(7, "written"))
    assert held(c) == "7"
    assert c.get("ns", "a") == {**cm(7, "written"), "apiVersion": "v1", "kind": "ConfigMap"}
    c._apply({"type": "MODIFIED", "object": cm(6)})  # an earlier change, delivered late
    assert held(c) == "7"
    c._apply({"type": "MODIFIED", "object": cm(7, "written")})
    assert held(c) == "7"
    assert c.resource_version == "7"
    c._apply({"type": "MODIFIED", "object": cm(8, "someone else")})
    assert held(c) == "8"
    assert heard == [("ADDED", "5"), ("MODIFIED", "6"), ("MODIFIED", "8")]


def test_an_announced_answer_is_heard_when_the_watch_brings_it() -> None:
    """An object several keys share: the others react to the writer's change."""
    c, heard = cache()
    c.observe(cm(3), announce=True)
    c._apply({"type": "ADDED", "object": cm(3)})
    assert heard == [("ADDED", "3")]


def test_an_event_that_came_before_the_answer_is_heard_once_and_nothing_is_held_back_later() -> None:
    c, heard = cache()
    c._apply({"type": "ADDED", "object": cm(3)})
    c.observe(cm(3))
    c._apply({"type": "MODIFIED", "object": cm(4)})
    assert heard == [("ADDED", "3"), ("MODIFIED", "4")]


def test_an_answer_older_than_what_the_watch_brought_is_ignored() -> None:
    c, _ = cache()
    c._apply({"type": "ADDED", "object": cm(9, "newer")})
    c.observe(cm(8, "older"))
    assert held(c) == "9"


def test_a_deletion_removes_what_an_answer_put_there() -> None:
    c, _ = cache()
    c.observe(cm(3))
    c._apply({"type": "DELETED", "object": cm(4)})
    assert c.get("ns", "a") is None


@given(st.lists(st.tuples(st.booleans(), st.integers(1, 50)), min_size=1, max_size=30))
def test_the_cache_never_goes_back_to_an_older_version(steps: list[tuple[bool, int]]) -> None:
    """Answers and watch events in any interleaving: what is held is the newest seen."""
    c, _ = cache()
    for from_watch, rv in steps:
        if from_watch:
            c._apply({"type": "MODIFIED", "object": cm(rv)})
        else:
            c.observe(cm(rv))
    assert int(held(c)) == max(rv for _, rv in steps)


def test_versions_that_are_not_numbers_take_the_latest_answer() -> None:
    c, _ = cache()
    c._apply(
        {"type": "ADDED", "object": {"metadata": {"namespace": "ns", "name": "a", "resourceVersion": "x"}}}
    )
    c.observe({"metadata": {"namespace": "ns", "name": "a", "resourceVersion": "y"}})
    assert held(c) == "y"
