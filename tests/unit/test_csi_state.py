"""The node's bookkeeping (SPEC §5 refcounts): transitions, idempotency, conflicts, and the refcount
laws over random call sequences."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csi.model.errors import StateConflict
from csi.node import state as node
from tests.unit.csi_samples import KEY_PARAMS, OPS, ROOT, TARGETS, VOLUME_KEYS, Op, key_of, staging

KEY = key_of(0)
PARAMS = KEY_PARAMS[0]
MNT = f"{ROOT}/{KEY}"


def stage(state: node.NodeState, volume: str, path: str | None = None) -> tuple[node.NodeState, bool]:
    return node.stage(state, KEY, PARAMS, volume, path or f"/s/{volume}", mnt_path=MNT, mode="embedded")


def test_stage_publish_unpublish_unstage() -> None:
    empty = node.NodeState()
    s1, needed = stage(empty, "v1")
    assert needed
    assert s1.refcount(KEY) == 1
    assert s1.key_of_volume("v1") == KEY
    entry = s1.mounts[KEY]
    assert (entry.phase, entry.mnt_path, entry.mode, entry.params) == (
        "Mounting",
        MNT,
        "embedded",
        PARAMS.fuse,
    )
    s2, needed = stage(s1, "v2")
    assert not needed
    assert s2.refcount(KEY) == 2
    s3 = node.publish(s2, "v1", "/t/a", readonly=True, pod_uid="uid-a")
    s3 = node.publish(s3, "v1", "/t/b", readonly=False)
    assert s3.volume_of("/t/a") == "v1"
    assert s3.refcount(KEY) == 2
    s4 = node.unpublish(s3, "/t/a")
    assert s4.volume_of("/t/a") is None
    assert s4.volume_of("/t/b") == "v1"
    assert s4.refcount(KEY) == 2
    s5, key, last = node.unstage(s4, "v2")
    assert (key, last, s5.refcount(KEY)) == (KEY, False, 1)
    s6 = node.unpublish(s5, "/t/b")
    s7, key, last = node.unstage(s6, "v1", now="2025-01-01T00:00:00Z")
    assert (key, last, s7.refcount(KEY)) == (KEY, True, 0)
    assert (s7.mounts[KEY].phase, s7.mounts[KEY].phase_time) == ("Unmounting", "2025-01-01T00:00:00Z")
    assert node.remove_mount(s7, KEY) == empty
    # Nothing was mutated on the way.
    assert s1.refcount(KEY) == 1
    assert s3.volume_of("/t/a") == "v1"


def test_repeated_calls_change_nothing() -> None:
    s1, _ = stage(node.NodeState(), "v1")
    again, needed = stage(s1, "v1")
    assert again is s1
    assert not needed
    s2 = node.publish(s1, "v1", "/t", readonly=False, pod_uid="u")
    assert node.publish(s2, "v1", "/t", readonly=False, pod_uid="u") is s2
    assert node.publish(s2, "v1", "/t", readonly=False) is s2
    assert node.unpublish(s1, "/t") is s1
    assert node.unstage(s1, "nope") == (s1, None, False)
    assert node.remove_mount(s1, "nope") is s1
    assert node.set_phase(s1, KEY, "Mounting") is s1
    assert node.set_process(s1, KEY) is s1


def test_a_pod_uid_learnt_late_is_recorded() -> None:
    s1 = node.publish(stage(node.NodeState(), "v1")[0], "v1", "/t", readonly=False)
    s2 = node.publish(s1, "v1", "/t", readonly=False, pod_uid="u")
    assert s2.mounts[KEY].volumes["v1"].targets["/t"].pod_uid == "u"


def test_conflicts() -> None:
    s1, _ = stage(node.NodeState(), "v1", "/s/one")
    s1 = node.publish(s1, "v1", "/t", readonly=True)
    s1, _ = stage(s1, "v2")
    with pytest.raises(StateConflict, match="already staged at /s/one") as caught:
        stage(s1, "v1", "/s/two")
    assert caught.value.code == "ALREADY_EXISTS"
    other = KEY_PARAMS[1]
    with pytest.raises(StateConflict, match="other parameters"):
        node.stage(s1, key_of(3), other, "v1", "/s/one", mnt_path="/m", mode="embedded")
    with pytest.raises(StateConflict, match="recorded with other parameters"):
        node.stage(s1, KEY, other, "v9", "/s/v9", mnt_path="/m", mode="embedded")
    with pytest.raises(StateConflict, match="read-only") as caught:
        node.publish(s1, "v1", "/t", readonly=False)
    assert caught.value.code == "ALREADY_EXISTS"
    with pytest.raises(StateConflict, match="already publishes volume v1"):
        node.publish(s1, "v2", "/t", readonly=True)
    with pytest.raises(StateConflict, match="not staged") as caught:
        node.publish(s1, "v9", "/t9", readonly=True)
    assert caught.value.code == "FAILED_PRECONDITION"
    with pytest.raises(StateConflict, match="still published at /t") as caught:
        node.unstage(s1, "v1")
    assert caught.value.code == "FAILED_PRECONDITION"
    with pytest.raises(StateConflict, match="2 staged volume") as caught:
        node.remove_mount(s1, KEY)
    assert caught.value.code == "FAILED_PRECONDITION"


def test_restaging_an_unmounting_key_needs_fuse_again() -> None:
    s1, _ = stage(node.NodeState(), "v1")
    s1 = node.set_process(s1, KEY, pid=42)
    s1 = node.set_phase(s1, KEY, "Ready", now="t1")
    s2, _, last = node.unstage(s1, "v1", now="t2")
    assert last
    s3, needed = stage(s2, "v2")
    assert needed
    entry = s3.mounts[KEY]
    assert (entry.phase, entry.refcount) == ("Mounting", 1)
    # The node service decides whether the recorded process is still the one to use.
    assert entry.pid == 42


def test_existing_mount_keeps_its_path_and_mode() -> None:
    s1, _ = stage(node.NodeState(), "v1")
    s2, _ = node.stage(s1, KEY, PARAMS, "v2", "/s/v2", mnt_path="/elsewhere", mode="standalone")
    assert (s2.mounts[KEY].mnt_path, s2.mounts[KEY].mode) == (MNT, "embedded")


def test_process_and_phase() -> None:
    s1, _ = stage(node.NodeState(), "v1")
    s2 = node.set_process(s1, KEY, pod_name="fuse-abc")
    assert (s2.mounts[KEY].pid, s2.mounts[KEY].pod_name) == (None, "fuse-abc")
    s3 = node.set_phase(s2, KEY, "Broken", now="t")
    assert (s3.mounts[KEY].phase, s3.mounts[KEY].phase_time) == ("Broken", "t")
    assert node.set_phase(s3, "unknown", "Ready") is s3
    assert node.set_process(s3, "unknown", pid=1) is s3


def test_a_broken_phase_says_why_and_any_other_phase_forgets_it() -> None:
    s1, _ = stage(node.NodeState(), "v1")
    s2 = node.set_phase(s1, KEY, "Broken", now="t1", reason="gone")
    assert (s2.mounts[KEY].phase, s2.mounts[KEY].reason, s2.mounts[KEY].phase_time) == (
        "Broken",
        "gone",
        "t1",
    )
    assert node.set_phase(s2, KEY, "Broken", now="t2", reason="gone") is s2
    s3 = node.set_phase(s2, KEY, "Broken", now="t2", reason="other")
    assert (s3.mounts[KEY].reason, s3.mounts[KEY].phase_time) == ("other", "t1")  # the phase did not move
    s4 = node.set_phase(s3, KEY, "Ready", now="t3", reason="ignored")
    assert (s4.mounts[KEY].phase, s4.mounts[KEY].reason) == ("Ready", None)


def test_timestamp_format() -> None:
    from datetime import datetime, timedelta, timezone

    at = datetime(2025, 3, 4, 5, 6, 7, 890, tzinfo=timezone(timedelta(hours=2)))
    assert node.timestamp(at) == "2025-03-04T03:06:07Z"


def _refcounts(state: node.NodeState) -> dict[str, int]:
    return {key_of(v): state.refcount(key_of(v)) for v in range(len(VOLUME_KEYS))}


def _staged_per_key(state: node.NodeState) -> dict[str, int]:
    counts = {key_of(v): 0 for v in range(len(VOLUME_KEYS))}
    for v in range(len(VOLUME_KEYS)):
        if state.key_of_volume(f"v{v}") is not None:
            counts[key_of(v)] += 1
    return counts


@settings(max_examples=300, deadline=None)
@given(st.lists(OPS, max_size=60))
def test_refcount_laws(ops: list[Op]) -> None:
    """Over any sequence of calls: refcount = number of staged volumes of the key; unpublish never
    changes a refcount; fuse_needed exactly on 0 → 1; last exactly on 1 → 0; a refused call changes
    nothing; no target outlives its volume."""
    state = node.NodeState()
    for op in ops:
        before = _refcounts(state)
        volume_id, key = f"v{op.volume}", key_of(op.volume)
        try:
            if op.name in ("stage", "stage-elsewhere"):
                params = KEY_PARAMS[VOLUME_KEYS[op.volume]]
                path = staging(op.volume, op.name == "stage-elsewhere")
                state, needed = node.stage(
                    state, key, params, volume_id, path, mnt_path="/m", mode="embedded"
                )
                assert needed == (before[key] == 0 and state.refcount(key) == 1)
            elif op.name == "unstage":
                state, unstaged_key, last = node.unstage(state, volume_id)
                assert last == (before[key] == 1 and state.refcount(key) == 0)
                assert unstaged_key in (key, None)
            elif op.name == "unpublish":
                state = node.unpublish(state, TARGETS[op.target])
                assert _refcounts(state) == before
            else:
                state = op.apply(state)
        except StateConflict:
            pass
        after = _refcounts(state)
        assert after == _staged_per_key(state)
        if op.name in ("publish", "unpublish", "remove"):
            assert after == before
        for entry in state.mounts.values():
            assert entry.refcount == len(entry.volumes)
            assert (entry.phase == "Unmounting") == (entry.refcount == 0)


@given(st.lists(OPS, max_size=40), st.lists(OPS, min_size=1, max_size=5))
def test_transitions_never_mutate_their_input(ops: list[Op], more: list[Op]) -> None:
    """Accepted or refused, a call returns a new state (or the same) and leaves its input as it was:
    the node service can keep the old state when saving the new one fails."""
    state = node.NodeState()
    for op in ops:
        state = op.apply(state)
    snapshot = state.model_copy(deep=True)
    for op in more:
        op.apply(state)
    assert state == snapshot
