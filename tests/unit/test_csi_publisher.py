"""What the FuseMount mirror writes: one object per mount key of this node, only when it changed, and
deletions of the ones whose mount is gone. (Against a real API server: tests/e2e/test_csi_node.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from csi.node import state as node
from csi.node.publisher import MirrorPublisher, changes, desired_objects
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


def test_objects_found_holding_what_is_wanted_are_not_written_again() -> None:
    state = staged(node.NodeState(), 0, "v0")
    wanted = desired_objects(NODE, state)
    (name,) = wanted
    obj = wanted[name]
    listed = {
        **obj,
        "metadata": {**obj["metadata"], "uid": "u", "resourceVersion": "7", "managedFields": []},
        # A field another manager owns (the controller's on a lost node) is not the mirror's to judge.
        "status": {**obj["status"], "lostSince": "2026-01-01T00:00:00Z"},
    }
    assert changes(wanted, {name: listed}) == ([], [])
    edited = {**listed, "spec": {**listed["spec"], "fsPath": "/elsewhere"}}
    assert changes(wanted, {name: edited}) == ([name], [])


class Recording(MirrorPublisher):
    """The mirror with the API server replaced by a record of what it would write (its I/O methods)."""

    def __init__(self, server: dict[str, dict[str, Any]], resync: float) -> None:
        async def connect() -> Any:
            return object()

        super().__init__(NODE, connect, debounce=0.001, resync=resync)
        self.server = server
        self.applied: list[str] = []

    async def _list_own(self) -> dict[str, dict[str, Any]]:
        # As the API server lists them: what was applied, and fields of its own besides.
        return {
            name: {**obj, "metadata": {**obj.get("metadata", {}), "uid": "u"}}
            for name, obj in self.server.items()
        }

    async def _apply(self, obj: dict[str, Any]) -> None:
        self.applied.append(obj["metadata"]["name"])
        self.server[obj["metadata"]["name"]] = obj


def run_mirror(resync: float, scenario: Callable[[Recording], Awaitable[None]]) -> Recording:
    async def main() -> Recording:
        mirror = Recording({}, resync=resync)
        mirror.start()
        try:
            await scenario(mirror)
        finally:
            await mirror.close()
        return mirror

    return asyncio.run(main())


def test_a_node_back_from_not_ready_publishes_every_mount_again_at_once() -> None:
    state = staged(node.NodeState(), 0, "v0")
    (name,) = desired_objects(NODE, state)

    async def scenario(mirror: Recording) -> None:
        mirror.publish(state)
        assert await mirror.synced(timeout=5)
        mirror.node_ready(True)  # the first word of the watch: nothing to do
        mirror.node_ready(False)
        await asyncio.sleep(0.05)
        # The controller marks the object Unknown meanwhile.
        held = mirror.server[name]
        mirror.server[name] = {**held, "status": {**held["status"], "phase": "Unknown"}}
        assert mirror.applied == [name], "written again while the node is lost?"
        mirror.node_ready(True)
        for _ in range(200):
            if len(mirror.applied) == 2:
                break
            await asyncio.sleep(0.01)

    assert run_mirror(300.0, scenario).applied == [name, name]


def test_no_resync_over_the_controllers_unknown_while_the_node_is_lost() -> None:
    state = staged(node.NodeState(), 0, "v0")

    async def scenario(mirror: Recording) -> None:
        mirror.publish(state)
        assert await mirror.synced(timeout=5)
        mirror.node_ready(False)
        await asyncio.sleep(0.3)  # a dozen resync periods

    assert len(run_mirror(0.02, scenario).applied) == 1


def test_the_resync_leaves_alone_what_the_server_holds_already() -> None:
    state = staged(node.NodeState(), 0, "v0")

    async def scenario(mirror: Recording) -> None:
        mirror.publish(state)
        await asyncio.sleep(0.3)  # a dozen resync periods

    assert len(run_mirror(0.02, scenario).applied) == 1


def test_the_resync_puts_right_an_object_edited_or_deleted_by_hand() -> None:
    state = staged(node.NodeState(), 0, "v0")
    (name,) = desired_objects(NODE, state)

    async def scenario(mirror: Recording) -> None:
        mirror.publish(state)
        assert await mirror.synced(timeout=5)
        held = mirror.server[name]
        mirror.server[name] = {**held, "status": {**held["status"], "refCount": 7}}
        await asyncio.sleep(0.2)
        assert mirror.applied == [name, name]
        del mirror.server[name]
        await asyncio.sleep(0.2)

    mirror = run_mirror(0.02, scenario)
    assert mirror.applied == [name, name, name]
    assert mirror.server[name]["status"]["refCount"] == 1
