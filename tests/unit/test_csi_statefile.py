"""The node state file: byte-stable versioned JSON, atomic saves, clear refusals of bad files; and
the FuseMount mirror built from the state."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings

from csi.model.errors import StateFileError
from csi.model.mountkey import fuse_mount_dir
from csi.node import state as node
from csi.node.mirror import to_fusemount
from csi.node.statefile import CorruptState, from_json, load, save_atomic, to_json
from kubectl_fluid.api import names
from kubectl_fluid.api.fusemount import FuseMount
from tests.unit.csi_samples import KEY_PARAMS, ROOT, key_of, states

KEY = key_of(0)


def sample() -> node.NodeState:
    state, _ = node.stage(
        node.NodeState(),
        KEY,
        KEY_PARAMS[0],
        "vol-b",
        "/s/b",
        mnt_path=fuse_mount_dir(ROOT, KEY),
        mode="embedded",
    )
    state, _ = node.stage(state, KEY, KEY_PARAMS[0], "vol-a", "/s/a", mnt_path="/ignored", mode="embedded")
    state = node.publish(state, "vol-b", "/t/2", readonly=False, pod_uid="uid-2")
    state = node.publish(state, "vol-b", "/t/1", readonly=True)
    state = node.set_process(state, KEY, pid=4242)
    return node.set_phase(state, KEY, "Ready", now="2025-01-02T03:04:05Z")


def test_empty_state_bytes() -> None:
    assert to_json(node.NodeState()) == b'{"mounts":{},"version":1}\n'
    assert from_json(b'{"mounts":{},"version":1}') == node.NodeState()


@settings(max_examples=150, deadline=None)
@given(states())
def test_json_round_trip_is_byte_stable(state: node.NodeState) -> None:
    data = to_json(state)
    back = from_json(data)
    assert back == state
    assert to_json(back) == data
    # Sorted keys and compact separators: re-serialising the parsed JSON gives the same bytes.
    reparsed = json.dumps(json.loads(data), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert data == (reparsed + "\n").encode()


def test_a_state_file_from_before_start_times_were_recorded_loads() -> None:
    state = node.set_process(sample(), KEY, pid=4242, pid_start_time=987654)
    assert b'"pid_start_time":987654' in to_json(state)
    current = to_json(sample())
    old = current.replace(b'"pid_start_time":null,', b"")
    assert old != current
    assert from_json(old) == sample()
    assert from_json(old).mounts[KEY].pid_start_time is None


def test_bytes_do_not_depend_on_insertion_order() -> None:
    a = sample()
    b, _ = node.stage(
        node.NodeState(),
        KEY,
        KEY_PARAMS[0],
        "vol-a",
        "/s/a",
        mnt_path=fuse_mount_dir(ROOT, KEY),
        mode="embedded",
    )
    b, _ = node.stage(b, KEY, KEY_PARAMS[0], "vol-b", "/s/b", mnt_path="/ignored", mode="embedded")
    b = node.publish(b, "vol-b", "/t/1", readonly=True)
    b = node.publish(b, "vol-b", "/t/2", readonly=False, pod_uid="uid-2")
    b = node.set_phase(node.set_process(b, KEY, pid=4242), KEY, "Ready", now="2025-01-02T03:04:05Z")
    assert a == b
    assert to_json(a) == to_json(b)


def test_save_and_load(tmp_path: Path) -> None:
    path = tmp_path / "state" / names.CSI_STATE_FILE
    assert load(path) == node.NodeState()  # first start: no file yet
    state = sample()
    save_atomic(path, state)
    assert load(path) == state
    assert path.read_bytes() == to_json(state)
    save_atomic(path, node.NodeState())
    assert load(path) == node.NodeState()
    # No temporary files are left behind.
    assert os.listdir(path.parent) == [names.CSI_STATE_FILE]


def test_a_failed_save_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / names.CSI_STATE_FILE
    save_atomic(path, sample())

    def broken_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="Input/output"):
        save_atomic(path, node.NodeState())
    monkeypatch.undo()
    assert load(path) == sample()
    assert os.listdir(tmp_path) == [names.CSI_STATE_FILE]


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"", "not JSON"),
        (b'{"mounts":{', "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[]", "not a JSON object"),
        (b'{"mounts":{}}', "version"),
        (b'{"mounts":{},"version":2}', "newer node service"),
        (b'{"mounts":{},"version":1,"extra":1}', "extra"),
        (b'{"mounts":[],"version":1}', "mounts"),
    ],
)
def test_corrupt_files_are_refused_naming_the_file(tmp_path: Path, content: bytes, words: str) -> None:
    path = tmp_path / names.CSI_STATE_FILE
    path.write_bytes(content)
    with pytest.raises(StateFileError) as caught:
        load(path)
    assert str(path) in str(caught.value)
    assert words in str(caught.value)


def _edit(change: str, to: str) -> bytes:
    data = to_json(sample()).decode()
    assert change in data
    return data.replace(change, to, 1).encode()


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (_edit('"pid":4242', '"pid":"4242"'), "pid"),
        (_edit('"readonly":true', '"readonly":1'), "readonly"),
        (_edit('"phase":"Ready"', '"phase":"Sleeping"'), "phase"),
        (_edit('"mode":"embedded"', '"mode":"docker"'), "mode"),
        (_edit(f'"key":"{KEY}"', '"key":"other"'), "records key other"),
    ],
)
def test_inconsistent_or_mistyped_states_are_refused(data: bytes, words: str) -> None:
    with pytest.raises(CorruptState, match=words):
        from_json(data)


def test_a_volume_on_two_keys_is_refused() -> None:
    state = sample()
    entry = state.mounts[KEY]
    twin = entry.model_copy(update={"key": "other"})
    broken = state.model_copy(update={"mounts": {KEY: entry, "other": twin}})
    with pytest.raises(CorruptState, match="staged on both"):
        from_json(to_json(broken))


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(StateFileError, match="directory"):
        load(tmp_path)


def test_to_fusemount() -> None:
    entry = sample().mounts[KEY]
    obj = to_fusemount("node-1", entry)
    model = FuseMount.model_validate(obj)
    assert obj["apiVersion"] == names.API_VERSION
    assert obj["kind"] == "FuseMount"
    assert obj["metadata"] == {
        "name": names.fuse_mount_name("node-1", KEY),
        "labels": names.fuse_mount_labels("node-1", KEY),
    }
    assert model.spec.mount_key == KEY
    assert model.spec.cluster_id == names.cluster_id(KEY_PARAMS[0].master_addrs)
    assert model.spec.fuse_args[:4] == [
        "--conf",
        names.fuse_config_path(entry.mnt_path),
        "--master-addrs",
        KEY_PARAMS[0].master_addrs,
    ]
    assert obj["spec"]["clusterID"] == model.spec.cluster_id
    assert obj["status"] == {
        "phase": "Ready",
        "refCount": 2,
        "volumes": [
            {"volumeID": "vol-a", "stagingPath": "/s/a", "targets": []},
            {
                "volumeID": "vol-b",
                "stagingPath": "/s/b",
                "targets": [{"path": "/t/1"}, {"path": "/t/2", "podUID": "uid-2"}],
            },
        ],
        "pid": 4242,
        "lastTransitionTime": "2025-01-02T03:04:05Z",
    }


@settings(max_examples=100, deadline=None)
@given(states())
def test_every_mount_mirrors_to_a_valid_fusemount(state: node.NodeState) -> None:
    for key, entry in state.mounts.items():
        obj = to_fusemount("kwok-node-0", entry)
        model = FuseMount.model_validate(obj)
        assert model.status is not None
        assert model.status.ref_count == state.refcount(key)
        assert sum(len(v.targets) for v in model.status.volumes) == sum(
            len(v.targets) for v in entry.volumes.values()
        )
        assert obj == to_fusemount("kwok-node-0", from_json(to_json(state)).mounts[key])
