"""The state file's encoder (csi/node/stateencoder.py): what it reuses from the last state encoded
never changes the bytes, which are those of one json.dumps of the whole document."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as hs

from csi.model.params import FuseParams
from csi.node import state as node
from csi.node.stateencoder import StateEncoder
from tests.unit.csi_samples import OPS, Op, states


def whole_dump(state: node.NodeState) -> bytes:
    document = {"version": 1, **state.model_dump(mode="json")}
    return (json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


@settings(max_examples=150, deadline=None)
@given(hs.lists(OPS, max_size=40))
def test_each_state_of_a_sequence_of_transitions_encodes_as_a_whole_dump(ops: list[Op]) -> None:
    # The node service's pattern: every state shares most of its records with the one before.
    encoder, state = StateEncoder(), node.NodeState()
    assert encoder.encode(state, 1) == whole_dump(state)
    for op in ops:
        state = op.apply(state)
        assert encoder.encode(state, 1) == whole_dump(state)


@settings(max_examples=100, deadline=None)
@given(hs.lists(states(), min_size=1, max_size=4))
def test_unrelated_states_one_after_another_encode_as_whole_dumps(sequence: list[node.NodeState]) -> None:
    encoder = StateEncoder()
    for state in [*sequence, *reversed(sequence)]:
        assert encoder.encode(state, 1) == whole_dump(state)


def test_text_outside_ascii_and_escapes_are_as_json_dumps_writes_them() -> None:
    state, _ = node.stage(
        node.NodeState(), "k", FuseParams(master_addrs="m:1", fs_path="/é"), "v\"1", '/s/\\ñ\n',
        mnt_path="/m/k", mode="embedded", curvine_path="/é/ü",
    )  # fmt: skip
    state = node.publish(state, 'v"1', "/t/\u2603", readonly=True, pod_uid="u")
    encoder = StateEncoder()
    assert encoder.encode(state, 1) == whole_dump(state)
    after = node.unpublish(state, "/t/\u2603")
    assert encoder.encode(after, 1) == whole_dump(after)
