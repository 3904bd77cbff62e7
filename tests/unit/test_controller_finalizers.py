"""controller/finalizers.py: the JSON patches that add or remove one finalizer, applied here by a
small interpreter of the three operations they use (test, add, remove)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller import finalizers

NAMES = st.lists(st.sampled_from(["a.io/x", "b.io/y", "kubernetes", "c.io/z"]), unique=True, max_size=4)


def apply(obj: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    meta = out["metadata"]
    for op in ops:
        field = op["path"].split("/")[2]
        if op["op"] == "test":
            if meta[field] != op["value"]:
                raise ValueError("test failed")
        elif op["op"] == "add" and op["path"] == "/metadata/finalizers":
            assert "finalizers" not in meta or not meta["finalizers"]
            meta["finalizers"] = op["value"]
        elif op["op"] == "add":
            meta["finalizers"].append(op["value"])
        else:
            del meta["finalizers"][int(op["path"].rsplit("/", 1)[1])]
    return out


def obj(held: list[str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": "7"}
    if held:
        meta["finalizers"] = list(held)
    return {"metadata": meta}


@given(NAMES)
def test_adding_appends_the_finalizer_and_keeps_the_others(held: list[str]) -> None:
    mine = "data.fluid.io/mine"
    after = apply(obj(held), finalizers.adding(obj(held), mine))
    assert after["metadata"]["finalizers"] == [*held, mine]
    assert finalizers.has(after, mine)
    assert not finalizers.has(obj(held), mine)


@given(NAMES, st.data())
def test_removing_takes_only_that_finalizer_off(held: list[str], data: st.DataObject) -> None:
    mine = "data.fluid.io/mine"
    with_mine = list(held)
    with_mine.insert(data.draw(st.integers(0, len(held))), mine)
    after = apply(obj(with_mine), finalizers.removing(obj(with_mine), mine))
    assert after["metadata"]["finalizers"] == held


def test_both_fail_on_an_object_written_since_the_cache_saw_it() -> None:
    seen = obj(["a.io/x"])
    newer = copy.deepcopy(seen)
    newer["metadata"]["resourceVersion"] = "8"
    for ops in (finalizers.adding(seen, "m"), finalizers.removing(obj(["a.io/x", "m"]), "m")):
        with pytest.raises(ValueError, match="test failed"):
            apply(newer, ops)
