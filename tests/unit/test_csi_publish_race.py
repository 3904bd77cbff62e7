"""NodePublish binds in a thread while other keys' calls go on (csi/rpc/node_service.py): what they
changed meanwhile is kept, and a target another key's volume took meanwhile is refused with our bind
taken off it. The host work is replaced by a stand-in; no mounts are made."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import grpc
import pytest

from csi.fuse import mounts
from csi.node import state as node
from csi.proto import csi_pb2
from csi.rpc.node_service import NodeService
from tests.unit.csi_samples import KEY_PARAMS, ROOT, key_of

MOUNT = csi_pb2.VolumeCapability(mount=csi_pb2.VolumeCapability.MountVolume())
TARGET = "/pods/p1/mount"


class Aborted(Exception):
    pass


class Context:
    """What the rpc decorator needs of a servicer context: abort, which raises."""

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        self.code, self.details = code, details
        raise Aborted(details)


def service(tmp_path: Path) -> NodeService:
    svc = NodeService("n1", str(tmp_path / "state"), str(tmp_path / "plugins"), ["curvine-fuse-standin"])
    # v0 on key A, v3 on key B (tests/unit/csi_samples.py).
    for volume, params in (("v0", KEY_PARAMS[0]), ("v3", KEY_PARAMS[1])):
        key = key_of(int(volume[1:]))
        svc.state, _ = node.stage(
            svc.state, key, params, volume, f"/s/{volume}", mnt_path=f"{ROOT}/{key}", mode="embedded"
        )
    return svc


def publish_request(volume: str) -> csi_pb2.NodePublishVolumeRequest:
    return csi_pb2.NodePublishVolumeRequest(
        volume_id=volume, staging_target_path=f"/s/{volume}", target_path=TARGET, volume_capability=MOUNT
    )


def test_a_change_of_another_key_made_while_binding_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = service(tmp_path)

    def bind_while_another_key_changes(*args: Any) -> bool:
        svc.state = node.publish(svc.state, "v3", "/pods/p2/mount", readonly=False)
        return True

    monkeypatch.setattr(svc, "_publish_on_host", bind_while_another_key_changes)
    asyncio.run(svc.NodePublishVolume(publish_request("v0"), Context()))  # type: ignore[arg-type]
    assert svc.state.volume_of(TARGET) == "v0"
    assert svc.state.volume_of("/pods/p2/mount") == "v3"


def test_a_target_taken_meanwhile_by_another_keys_volume_is_refused_and_our_bind_taken_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = service(tmp_path)
    unmounted: list[str] = []
    monkeypatch.setattr(mounts, "unmount", lambda path, lazy=False: unmounted.append(str(path)))

    def bind_while_another_key_takes_the_target(*args: Any) -> bool:
        svc.state = node.publish(svc.state, "v3", TARGET, readonly=False)
        return True

    monkeypatch.setattr(svc, "_publish_on_host", bind_while_another_key_takes_the_target)
    context = Context()
    with pytest.raises(Aborted, match="already publishes volume v3"):
        asyncio.run(svc.NodePublishVolume(publish_request("v0"), context))  # type: ignore[arg-type]
    assert context.code == grpc.StatusCode.ALREADY_EXISTS
    assert unmounted == [TARGET]
    assert svc.state.volume_of(TARGET) == "v3"
