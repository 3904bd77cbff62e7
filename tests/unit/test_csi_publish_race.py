"""NodePublish binds in a thread while other keys' calls go on (csi/rpc/node_service.py): what they
changed meanwhile is kept. A target is recorded before its bind (and written beside it): another
key's volume asking for it meanwhile is refused, a target another volume holds is refused before
anything is bound, and a bind that fails forgets the target again. The host work is replaced by a
stand-in; no mounts are made."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import grpc
import pytest

from csi.fuse import mounts
from csi.model.errors import StateConflict
from csi.node import state as node
from csi.node import statefile
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


def test_a_target_is_held_from_before_its_bind_so_another_keys_volume_is_refused_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = service(tmp_path)
    refused: list[str] = []

    def bind_while_another_key_asks_for_the_target(*args: Any) -> bool:
        try:
            node.publish(svc.state, "v3", TARGET, readonly=False)
        except StateConflict as conflict:
            refused.append(str(conflict))
        return True

    monkeypatch.setattr(svc, "_publish_on_host", bind_while_another_key_asks_for_the_target)
    asyncio.run(svc.NodePublishVolume(publish_request("v0"), Context()))  # type: ignore[arg-type]
    assert len(refused) == 1, refused
    assert "already publishes volume v0" in refused[0], refused
    assert svc.state.volume_of(TARGET) == "v0"
    assert statefile.load(svc.state_path).volume_of(TARGET) == "v0"


def test_a_target_another_keys_volume_holds_is_refused_before_anything_is_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = service(tmp_path)
    svc.state = node.publish(svc.state, "v3", TARGET, readonly=False)
    bound: list[tuple[Any, ...]] = []

    def bind(*args: Any) -> bool:
        bound.append(args)
        return True

    monkeypatch.setattr(svc, "_publish_on_host", bind)
    context = Context()
    with pytest.raises(Aborted, match="already publishes volume v3"):
        asyncio.run(svc.NodePublishVolume(publish_request("v0"), context))  # type: ignore[arg-type]
    assert context.code == grpc.StatusCode.ALREADY_EXISTS
    assert bound == []
    assert svc.state.volume_of(TARGET) == "v3"


def test_a_bind_that_fails_forgets_the_target_it_recorded_on_disk_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = service(tmp_path)

    def bind_fails(*args: Any) -> bool:
        raise mounts.MountError(f"mount --bind /src {TARGET}: Permission denied")

    monkeypatch.setattr(svc, "_publish_on_host", bind_fails)
    with pytest.raises(Aborted, match="Permission denied"):
        asyncio.run(svc.NodePublishVolume(publish_request("v0"), Context()))  # type: ignore[arg-type]
    assert svc.state.volume_of(TARGET) is None
    assert statefile.load(svc.state_path).volume_of(TARGET) is None
