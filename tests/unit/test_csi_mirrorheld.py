"""Laws of "the server already holds what the mirror would write" (csi/node/mirrorheld.py)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from csi.node.mirrorheld import already_held, holds

SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=12,
)
PART = st.dictionaries(st.text(max_size=3), JSON, max_size=3)
OBJECTS = st.fixed_dictionaries({"metadata": PART, "spec": PART, "status": PART})


def with_extra(obj: Any, extra: dict[str, Any]) -> Any:
    """``obj`` with keys of ``extra`` added to every dict that lacks them (what a server adds)."""
    if isinstance(obj, dict):
        return {
            **{k: v for k, v in extra.items() if k not in obj},
            **{k: with_extra(v, extra) for k, v in obj.items()},
        }
    return obj


@given(JSON)
def test_anything_holds_itself(value: Any) -> None:
    assert holds(value, value)


@given(OBJECTS, st.dictionaries(st.text(min_size=4, max_size=6), SCALARS, min_size=1, max_size=3))
def test_fields_the_server_adds_do_not_make_a_write(wanted: dict[str, Any], extra: dict[str, Any]) -> None:
    assert already_held(with_extra(wanted, extra), wanted)


@given(OBJECTS, st.sampled_from(["metadata", "spec", "status"]), st.text(max_size=3), JSON)
def test_a_field_of_the_mirrors_with_another_value_makes_a_write(
    wanted: dict[str, Any], part: str, key: str, value: Any
) -> None:
    changed = {**wanted, part: {**wanted[part], key: value}}
    if key not in wanted[part] or not holds(wanted[part][key], value):
        assert not already_held(wanted, changed)


def test_a_list_is_held_only_whole() -> None:
    wanted = {"status": {"volumes": [{"id": "a"}, {"id": "b"}]}}
    assert not already_held({"status": {"volumes": [{"id": "a"}]}}, wanted)
    assert not already_held({"status": {"volumes": [{"id": "a", "x": 1}, {"id": "b"}]}}, wanted)
    assert already_held({"status": {"volumes": [{"id": "a"}, {"id": "b"}], "phase": "Ready"}}, wanted)


def test_a_missing_part_or_field_makes_a_write() -> None:
    wanted = {"metadata": {"name": "n"}, "spec": {"a": None}}
    assert not already_held({"metadata": {"name": "n"}}, wanted)
    assert not already_held({"metadata": {"name": "n"}, "spec": {}}, wanted)


def test_a_field_its_manager_owns_and_no_longer_sets_makes_a_write() -> None:
    manager = "fluid-csi-node"
    owned: dict[str, Any] = {"f:status": {"f:phase": {}, "f:reason": {}, "f:volumes": {'k:{"id":"a"}': {}}}}
    found = {
        "metadata": {"managedFields": [{"manager": manager, "fieldsV1": owned}]},
        "status": {"phase": "Ready", "reason": "was broken", "volumes": [{"id": "a"}]},
    }
    wanted = {"status": {"phase": "Ready", "volumes": [{"id": "a"}]}}
    assert not already_held(found, wanted, manager)
    assert already_held(found, {"status": {**wanted["status"], "reason": "was broken"}}, manager)
    # Another manager's field is not the mirror's to remove.
    assert already_held(found, wanted, "fluid-controller")
