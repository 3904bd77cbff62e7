"""The node service's state writes (csi/rpc/node_service.py, group commit): a call answers only once the
state it leaves is on disk, concurrent calls share one write, and a failed write fails the calls
waiting on it without being forgotten by the next one."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from csi.node import state as node
from csi.node import statefile
from csi.rpc.node_service import NodeService
from tests.unit.csi_samples import KEY_PARAMS, ROOT, key_of

KEY = key_of(0)
SAVE = statefile.save_atomic


def service(tmp_path: Path) -> NodeService:
    return NodeService("n1", str(tmp_path / "state"), str(tmp_path / "plugins"), ["curvine-fuse-standin"])


def staged(state: node.NodeState, volume: str) -> node.NodeState:
    new, _ = node.stage(
        state, KEY, KEY_PARAMS[0], volume, f"/s/{volume}", mnt_path=f"{ROOT}/{KEY}", mode="embedded"
    )
    return new


class CountingSave:
    """statefile.save_atomic, slowed so that callers pile up behind a write in progress."""

    def __init__(self, fail_first: bool = False) -> None:
        self.writes: list[int] = []
        self.fail_first = fail_first
        self.lock = threading.Lock()

    def __call__(self, path: str, state: node.NodeState) -> None:
        threading.Event().wait(0.05)
        with self.lock:
            if self.fail_first and not self.writes:
                self.writes.append(-1)
                raise OSError(28, "No space left on device")
            self.writes.append(len(state.mounts[KEY].volumes) if KEY in state.mounts else 0)
        SAVE(path, state)


def test_concurrent_calls_share_writes_and_each_sees_its_change_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = service(tmp_path)
    save = CountingSave()
    monkeypatch.setattr(statefile, "save_atomic", save)

    async def call(i: int) -> int:
        svc._save(staged(svc.state, f"v{i}"))
        await svc._durable()
        return len(statefile.load(svc.state_path).mounts[KEY].volumes)

    async def run() -> list[int]:
        return await asyncio.gather(*(call(i) for i in range(20)))

    on_disk = asyncio.run(run())
    # Each call returned with at least its own change written (the volumes only grow here).
    assert all(n >= i + 1 for i, n in enumerate(on_disk)), on_disk
    assert on_disk[-1] == 20
    # 20 callers, each change made while a write was in progress: far fewer writes than calls.
    assert len(save.writes) <= 3, save.writes


def test_a_failed_write_fails_its_callers_and_the_next_call_writes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc = service(tmp_path)
    save = CountingSave(fail_first=True)
    monkeypatch.setattr(statefile, "save_atomic", save)

    async def first() -> None:
        svc._save(staged(svc.state, "v1"))
        await svc._durable()

    with pytest.raises(OSError, match="No space left"):
        asyncio.run(first())
    assert not svc.state_path.exists()

    async def retry() -> None:
        await svc._durable()  # kubelet's retry finds the change made: it still has to land

    asyncio.run(retry())
    assert statefile.load(svc.state_path).key_of_volume("v1") == KEY


def test_nothing_changed_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    svc = service(tmp_path)
    save = CountingSave()
    monkeypatch.setattr(statefile, "save_atomic", save)
    svc._save(svc.state)
    asyncio.run(svc._durable())
    assert save.writes == []
