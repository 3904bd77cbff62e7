"""What the FuseMount mirror writes: one object per mount key of this node, only when it changed, and
deletions of the ones whose mount is gone. (Against a real API server: tests/e2e/test_csi_node.py.)"""

from __future__ import annotations

from csi.node import state as node
from csi.node.publisher import changes, desired_objects
from kubectl_fluid.api import names
from tests.unit.csi_samples import KEY_PARAMS, ROOT, key_of

NODE = "kwok-node-0"


def staged(state: node.NodeState, key_index: int, volume: str) -> node.NodeState:
    key = key_of({0: 0, 1: 3, 2: 5}[key_index])
    new, _ = node.stage(
        state, key, KEY_PARAMS[key_index], volume, f"/s/{volume}", mnt_path=f"{ROOT}/{key}", mode="embedded"
    )
    return new


def test_one_object_per_mount_key_named_and_labelled_for_the_node() -> None:
    state = staged(staged(staged(node.NodeState(), 0, "v0"), 0, "v1"), 1, "v3")
    wanted = desired_objects(NODE, state)
    assert sorted(wanted) == sorted(names.fuse_mount_name(NODE, key) for key in state.mounts)
    for obj in wanted.values():
        key = obj["spec"]["mountKey"]
        assert obj["metadata"]["labels"] == names.fuse_mount_labels(NODE, key)
        assert obj["spec"]["nodeName"] == NODE
        assert obj["status"]["refCount"] == state.refcount(key)
    counts = sorted(obj["status"]["refCount"] for obj in wanted.values())
    assert counts == [1, 2]


def test_only_changed_objects_are_written_and_vanished_ones_deleted() -> None:
    before = staged(staged(node.NodeState(), 0, "v0"), 1, "v3")
    written = desired_objects(NODE, before)
    assert changes(written, written) == ([], [])

    published = node.publish(before, "v0", "/pods/p1/mount", False, "uid-1")
    apply, delete = changes(desired_objects(NODE, published), written)
    assert apply == [names.fuse_mount_name(NODE, key_of(0))]
    assert delete == []

    after, _, last = node.unstage(before, "v3")
    assert last
    # Unstaged to zero, the key is still recorded (Unmounting) until its FUSE has stopped...
    apply, delete = changes(desired_objects(NODE, after), written)
    assert apply == [names.fuse_mount_name(NODE, key_of(3))]
    # ...and once removed, its object goes.
    gone = node.remove_mount(after, key_of(3))
    assert changes(desired_objects(NODE, gone), written) == ([], [names.fuse_mount_name(NODE, key_of(3))])


def test_objects_found_at_start_are_rewritten_once_or_deleted() -> None:
    state = staged(node.NodeState(), 0, "v0")
    wanted = desired_objects(NODE, state)
    (name,) = wanted
    found_at_start: dict[str, dict[str, object]] = {name: {}, f"{NODE}-stale": {}}
    assert changes(wanted, found_at_start) == ([name], [f"{NODE}-stale"])
