"""RFC 6902 patches: the diff's shape and the small applier."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from webhook.patch import PatchError, apply_patch, escape, json_patch, unescape


def _roundtrip(original: Any, mutated: Any) -> list[dict[str, Any]]:
    before = copy.deepcopy(original)
    ops = json_patch(original, mutated)
    assert apply_patch(original, ops) == mutated
    assert original == before
    return ops


def test_keys_are_escaped() -> None:
    assert escape("done.sidecar.fluid.io/inject") == "done.sidecar.fluid.io~1inject"
    assert escape("a~b/c~1") == "a~0b~1c~01"
    assert unescape(escape("a~b/c~1")) == "a~b/c~1"
    ops = _roundtrip({"labels": {"x": "1"}}, {"labels": {"x": "1", "a/b~c": "2"}})
    assert ops == [{"op": "add", "path": "/labels/a~1b~0c", "value": "2"}]


def test_missing_parents_are_added_whole() -> None:
    original: dict[str, Any] = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "app"}]}}
    mutated = {
        "metadata": {"name": "p", "labels": {"k/x": "v"}},
        "spec": {"containers": [{"name": "app", "env": [{"name": "E"}]}], "volumes": [{"name": "v"}]},
    }
    assert _roundtrip(original, mutated) == [
        {"op": "add", "path": "/metadata/labels", "value": {"k/x": "v"}},
        {"op": "add", "path": "/spec/containers/0/env", "value": [{"name": "E"}]},
        {"op": "add", "path": "/spec/volumes", "value": [{"name": "v"}]},
    ]


def test_appends_are_adds_at_the_end() -> None:
    ops = _roundtrip({"l": [1, 2]}, {"l": [1, 2, 3, 4]})
    assert ops == [{"op": "add", "path": "/l/-", "value": 3}, {"op": "add", "path": "/l/-", "value": 4}]
    assert _roundtrip({"l": []}, {"l": [{"a": 1}]}) == [{"op": "add", "path": "/l/-", "value": {"a": 1}}]


def test_changed_elements_are_diffed_in_place_and_shrunk_lists_replaced() -> None:
    original = {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
    mutated = {"env": [{"name": "A", "value": "9"}, {"name": "B", "value": "2"}, {"name": "C"}]}
    assert _roundtrip(original, mutated) == [
        {"op": "replace", "path": "/env/0/value", "value": "9"},
        {"op": "add", "path": "/env/-", "value": {"name": "C"}},
    ]
    shrunk = {"env": [{"name": "B", "value": "2"}]}
    assert _roundtrip(original, shrunk) == [{"op": "replace", "path": "/env", "value": shrunk["env"]}]


def test_removals_type_changes_and_json_equality() -> None:
    assert _roundtrip({"a": 1, "b": 2}, {"b": 2}) == [{"op": "remove", "path": "/a"}]
    assert _roundtrip({"a": {"x": 1}}, {"a": [1]}) == [{"op": "replace", "path": "/a", "value": [1]}]
    # true is not 1 in JSON, though it is in Python; 1 and 1.0 are the same number.
    assert _roundtrip({"a": 1}, {"a": True}) == [{"op": "replace", "path": "/a", "value": True}]
    assert json_patch({"a": 1}, {"a": 1.0}) == []
    assert _roundtrip([1], {"a": 1}) == [{"op": "replace", "path": "", "value": {"a": 1}}]


def test_identical_documents_give_no_ops() -> None:
    doc = {"a": [1, {"b": None}], "c": "d"}
    assert json_patch(doc, copy.deepcopy(doc)) == []
    assert json_patch(doc, doc) == []


def test_apply_all_ops_without_touching_the_input() -> None:
    doc: dict[str, Any] = {"a": {"b": [1, 2, 3]}, "c": "x"}
    before = copy.deepcopy(doc)
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/c", "value": "x"},
        {"op": "add", "path": "/a/b/0", "value": 0},
        {"op": "remove", "path": "/a/b/3"},
        {"op": "replace", "path": "/a/b/1", "value": 10},
        {"op": "add", "path": "/d", "value": {"e": []}},
        {"op": "add", "path": "/d/e/-", "value": "y"},
    ]
    assert apply_patch(doc, ops) == {"a": {"b": [0, 10, 2]}, "c": "x", "d": {"e": ["y"]}}
    assert doc == before
    value = ops[4]["value"]
    assert value == {"e": []}, "an op's value must not be edited by later ops"


@pytest.mark.parametrize(
    "op",
    [
        {"op": "test", "path": "/a", "value": 2},
        {"op": "test", "path": "/a", "value": True},
        {"op": "replace", "path": "/missing", "value": 1},
        {"op": "remove", "path": "/missing"},
        {"op": "add", "path": "/missing/x", "value": 1},
        {"op": "add", "path": "/l/5", "value": 1},
        {"op": "replace", "path": "/l/-", "value": 1},
        {"op": "replace", "path": "/l/01", "value": 1},
        {"op": "add", "path": "/a/x", "value": 1},
        {"op": "move", "path": "/a", "from": "/l"},
        {"op": "add", "path": "a", "value": 1},
        {"op": "remove", "path": ""},
    ],
)
def test_apply_refuses_what_does_not_apply(op: dict[str, Any]) -> None:
    with pytest.raises(PatchError):
        apply_patch({"a": 1, "l": [0]}, [op])
