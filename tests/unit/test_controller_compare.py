"""The merge patch the controller sends for a status: it turns the status as cached into the one
wanted, keys no longer wanted included."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from controller.compare import merge_patch
from kubectl_fluid.cli.injection import merge_patch as apply_merge_patch


def test_removed_keys_are_nulled_nested_ones_patched() -> None:
    actual = {"phase": "Failed", "master": {"phase": "Ready", "readyReplicas": 1}, "valueFile": "x"}
    desired = {"master": {"phase": "NotReady"}, "valueFile": "x", "conditions": []}
    assert merge_patch(actual, desired) == {
        "phase": None,
        "master": {"phase": "NotReady", "readyReplicas": None},
        "conditions": [],
    }
    assert merge_patch(desired, desired) == {}


values = st.recursive(
    st.one_of(st.integers(0, 3), st.sampled_from(["a", "b"]), st.booleans()),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(["p", "q", "r"]), children, max_size=3),
    ),
    max_leaves=12,
)
objects = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), values, max_size=4)


@given(objects, objects)
def test_applying_the_patch_gives_the_desired_object(actual: dict[str, Any], desired: dict[str, Any]) -> None:
    assert apply_merge_patch(actual, merge_patch(actual, desired)) == desired
