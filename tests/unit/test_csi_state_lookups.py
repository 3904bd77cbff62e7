"""The node state's lookups (which key a volume is staged on, which volume a target publishes) are
kept beside each state by its transitions (csi/node/state.py): they always answer what a walk over
every mount, volume and target answers."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as hs

from csi.node import state as node
from tests.unit.csi_samples import OPS, TARGETS, VOLUME_KEYS, Op

VOLUMES = [f"v{i}" for i in range(len(VOLUME_KEYS))] + ["unknown"]


def walked_key(state: node.NodeState, volume_id: str) -> str | None:
    return next((key for key, entry in state.mounts.items() if volume_id in entry.volumes), None)


def walked_volume(state: node.NodeState, target: str) -> str | None:
    found = [vid for e in state.mounts.values() for vid, v in e.volumes.items() if target in v.targets]
    return found[0] if found else None


def answers_as_walking(state: node.NodeState) -> None:
    for volume_id in VOLUMES:
        assert state.key_of_volume(volume_id) == walked_key(state, volume_id)
    for target in [*TARGETS, "/pods/unknown"]:
        assert state.volume_of(target) == walked_volume(state, target)


@settings(max_examples=200, deadline=None)
@given(hs.lists(OPS, max_size=40))
def test_every_state_of_a_sequence_of_transitions_answers_as_walking_it(ops: list[Op]) -> None:
    state = node.NodeState()
    answers_as_walking(state)
    for op in ops:
        state = op.apply(state)
        answers_as_walking(state)
        # The same mounts, built afresh (as the state file is read back), and copied by other means.
        answers_as_walking(node.NodeState(mounts=state.mounts))
        answers_as_walking(state.model_copy(update={"mounts": dict(state.mounts)}))
