"""A FUSE that stops answering holds up only its own mount key (issue 27, item 2).

One key's FUSE is a real kernel FUSE mount whose server holds every request while the test says so
(tests/unit/hanging_fuse.py: what curvine-fuse does while its master hangs). The node service is the
real one with real mounts, served over gRPC on an event loop in a thread of its own, beside its
health server and a monitor of how late that loop wakes from a 50 ms sleep. While the FUSE hangs
(several deadlines long), every other key's calls complete, /healthz answers, the loop never stalls,
and the hung key's call ends with the deadline's error naming the mount; the same for the recovery,
the health check, the re-binding after a FUSE restart and a standalone FUSE pod's adoption and
watcher. Each test releases the hang, lets what outlived its call finish, and leaves no mount and no
FUSE process behind."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest

from csi.fuse import mounts
from csi.fuse.fusepods import FusePodManager
from csi.fuse.fuserunner import FuseHandle
from csi.model.mountkey import mount_key
from csi.model.volumes import parse_volume_context
from csi.node import state as st
from csi.proto import csi_pb2, csi_pb2_grpc
from csi.rpc.identity import IdentityServicer
from csi.rpc.node_service import NodeService
from csi.rpc.server import CsiServer
from kubectl_fluid.api import names
from kubectl_fluid.health import HealthServer
from tests.unit import hanging_fuse
from tests.unit.hanging_fuse import hanging

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/dev/fuse").exists(), reason="real FUSE mounts need root and /dev/fuse"
)

REPO = Path(__file__).resolve().parents[2]
DEADLINE = 2.0
# How long each test keeps the FUSE hung, at least: several deadlines.
HANG = 10.0
# "Did the loop block at all", not a benchmark: a stall behind a hung FUSE lasts the whole hang.
MAX_LAG = 1.0
PATIENCE = 30.0
HUNG, WELL, FRESH = "hung-master:8995", "well-master:8995", "fresh-master:8995"
MOUNT = csi_pb2.VolumeCapability(
    mount=csi_pb2.VolumeCapability.MountVolume(),
    access_mode=csi_pb2.VolumeCapability.AccessMode(
        mode=csi_pb2.VolumeCapability.AccessMode.MULTI_NODE_MULTI_WRITER
    ),
)
T = TypeVar("T")


class Loop:
    """An event loop in a thread, and the worst lateness of a 50 ms sleep on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.worst = 0.0
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self._watch = asyncio.run_coroutine_threadsafe(self._lag(), self.loop)

    async def _lag(self) -> None:
        while True:
            before = self.loop.time()
            await asyncio.sleep(0.05)
            self.worst = max(self.worst, self.loop.time() - before - 0.05)

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = PATIENCE) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self._watch.cancel()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)


class Node:
    """A node service with its FUSEs, its gRPC server and its health server, under ``root``."""

    def __init__(self, root: Path, loop: Loop) -> None:
        self.root, self.loop = root, loop
        self.sock = root / "csi.sock"
        self.channel = grpc.insecure_channel(f"unix://{self.sock}")
        self.stub = csi_pb2_grpc.NodeStub(self.channel)
        self.service, self.server, self.health = loop.call(self._start())

    async def _start(self) -> tuple[NodeService, CsiServer, HealthServer]:
        service = NodeService(
            "n1",
            str(self.root / "state"),
            str(self.root / "plugins"),
            hanging_fuse.COMMAND,
            deadline=DEADLINE,
        )
        server = CsiServer(str(self.sock), identity=IdentityServicer(), node=service)
        await server.start()
        health = HealthServer("127.0.0.1", 0, ready=lambda: True)
        await health.start()
        return service, server, health

    def restart(self) -> None:
        """The node service goes (its FUSEs stay, as after a kill) and a new one starts, not yet
        recovered."""

        async def stop() -> None:
            await self.server.stop(0)
            await self.service.fuse.close()
            await self.health.close()

        self.loop.call(stop())
        self.service, self.server, self.health = self.loop.call(self._start())

    def close(self) -> None:
        async def stop() -> None:
            await self.server.stop(0)
            await self.service.fuse.close()
            await self.health.close()

        self.channel.close()
        self.loop.call(stop())

    # ------------------------------------------------------------------ kubelet's calls

    def context(self, name: str, masters: str) -> dict[str, str]:
        """A static volume of its own directory in the cache."""
        return {names.PARAM_MASTER_ADDRS: masters, names.PARAM_CURVINE_PATH: f"/{name}"}

    def stage(self, name: str, masters: str) -> None:
        (self.root / "data" / names.cluster_id(masters) / name).mkdir(parents=True, exist_ok=True)
        self.stub.NodeStageVolume(
            csi_pb2.NodeStageVolumeRequest(
                volume_id=name,
                staging_target_path=str(self.root / "stage" / name),
                volume_capability=MOUNT,
                volume_context=self.context(name, masters),
            ),
            timeout=PATIENCE,
        )

    def publish(self, name: str, target: str) -> None:
        self.stub.NodePublishVolume(
            csi_pb2.NodePublishVolumeRequest(
                volume_id=name,
                staging_target_path=str(self.root / "stage" / name),
                target_path=target,
                volume_capability=MOUNT,
            ),
            timeout=PATIENCE,
        )

    def unpublish(self, name: str, target: str) -> None:
        self.stub.NodeUnpublishVolume(
            csi_pb2.NodeUnpublishVolumeRequest(volume_id=name, target_path=target), timeout=PATIENCE
        )

    def unstage(self, name: str) -> None:
        self.stub.NodeUnstageVolume(
            csi_pb2.NodeUnstageVolumeRequest(
                volume_id=name, staging_target_path=str(self.root / "stage" / name)
            ),
            timeout=PATIENCE,
        )

    def target(self, name: str, pod: str = "pod") -> str:
        return str(self.root / "pods" / pod / name)

    def published(self, name: str, masters: str) -> str:
        """A volume staged and published in one pod, a file written through it; its target."""
        self.stage(name, masters)
        target = self.target(name)
        self.publish(name, target)
        Path(target, "data").write_text(name)
        return target

    def round_trip(self, name: str, masters: str) -> None:
        """A pod's whole life on a volume: stage, publish, write and read, unpublish, unstage."""
        target = self.published(name, masters)
        assert Path(target, "data").read_text() == name
        self.unpublish(name, target)
        self.unstage(name)
        assert not mounts.mounted_at(target)

    # ------------------------------------------------------------------ what the node holds

    def key(self, masters: str) -> str:
        return mount_key(parse_volume_context(self.context("probe", masters)).params)

    def entry(self, masters: str) -> st.MountEntry | None:
        async def read() -> st.MountEntry | None:
            return self.service.state.mounts.get(self.key(masters))

        return self.loop.call(read())

    def phase(self, masters: str) -> tuple[str, str]:
        entry = self.entry(masters)
        assert entry is not None, f"no mount key for {masters}"
        return entry.phase, entry.reason or ""

    def healthz(self) -> int:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.health.port}/healthz", timeout=5) as answer:
            return int(answer.status)

    def leftovers(self) -> list[str]:
        return [m.mount_point for m in mounts.mount_table() if m.mount_point.startswith(f"{self.root}/")]


def fuse_pids(root: Path) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if b"hanging_fuse" in cmdline and str(root).encode() in cmdline:
                pids.append(int(proc.name))
    return pids


def failure(call: Callable[[], None]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value


def eventually(check: Callable[[], bool], what: str, timeout: float = PATIENCE) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.1)


def reads(target: str) -> str | None:
    try:
        return Path(target, "data").read_text()
    except OSError:
        return None


def hold_until(started: float) -> None:
    """Keep the FUSE hung ``HANG`` seconds in all: long enough for any stall to show."""
    time.sleep(max(0.0, started + HANG - time.monotonic()))


@pytest.fixture
def root(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short directory (a unix socket's path must fit 107 bytes) with the FUSEs' gates and data;
    afterwards every hang released, no FUSE process and no mount left beneath it."""
    path = Path(tempfile.mkdtemp(prefix="hung-"))
    gates = path / "gates"
    gates.mkdir()
    monkeypatch.setenv(hanging_fuse.GATES_ENV, str(gates))
    monkeypatch.setenv("CURVINE_STANDIN_DATA", str(path / "data"))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    try:
        yield path
    finally:
        for gate in gates.iterdir():
            gate.unlink()
        for pid in fuse_pids(path):
            os.kill(pid, signal.SIGKILL)
        for m in reversed(mounts.mount_table()):
            if m.mount_point.startswith(f"{path}/"):
                mounts.unmount(m.mount_point, lazy=True)
        leaked = [m.mount_point for m in mounts.mount_table() if m.mount_point.startswith(f"{path}/")]
        shutil.rmtree(path, ignore_errors=True)
        assert leaked == []


@pytest.fixture
def node(root: Path) -> Iterator[Node]:
    loop = Loop()
    n = Node(root, loop)
    try:
        yield n
    finally:
        try:
            n.close()
        finally:
            loop.close()


def tidy(node: Node, *volumes: tuple[str, str]) -> None:
    """Unpublish and unstage ``(name, target)``: nothing of the node's is left mounted or running."""
    for name, target in volumes:
        node.unpublish(name, target)
        node.unstage(name)
    assert node.leftovers() == []
    eventually(lambda: fuse_pids(node.root) == [], "every FUSE stopped")


def test_a_hung_fuse_holds_up_only_its_own_key(node: Node) -> None:
    first = node.published("h1", HUNG)
    kept = node.published("w1", WELL)
    second = node.target("h1", pod="pod2")
    key, mnt = node.key(HUNG), names.fuse_mount_path(node.key(HUNG), str(node.root / "plugins"))
    with hanging(node.root / "gates", HUNG):
        started = time.monotonic()
        # NodeUnpublish reads the mount table, never the mount: done though the FUSE hangs.
        node.unpublish("h1", first)
        assert not mounts.mounted_at(first)

        # A lookup through the hung FUSE: the call answers at the deadline, naming the mount.
        late = failure(lambda: node.publish("h1", second))
        assert late.code() == grpc.StatusCode.DEADLINE_EXCEEDED, late.details()
        for said in (key, mnt, HUNG, "has not answered"):
            assert said in (late.details() or ""), late.details()
        # The key's next call is not tried: it would wait behind the first.
        behind = failure(lambda: node.unstage("h1"))
        assert behind.code() == grpc.StatusCode.ABORTED, behind.details()
        assert key in (behind.details() or "")

        # Every other key's calls go on: a running FUSE's, and one whose FUSE starts now.
        node.round_trip("w2", WELL)
        node.round_trip("f1", FRESH)
        assert reads(kept) == "w1"
        assert node.healthz() == 200
        phase, reason = node.phase(HUNG)
        assert phase == "Broken"
        assert "has not answered" in reason
        assert mnt in reason
        hold_until(started)
    assert node.loop.worst < MAX_LAG, f"the event loop stalled {node.loop.worst:.2f} s"

    # Answered at last: the publish that outlived its call ends by itself and is recorded.
    eventually(lambda: reads(second) == "h1", "the late publish bound")
    node.publish("h1", second)  # kubelet's retry finds it done
    tidy(node, ("h1", second), ("w1", kept))


def test_recovery_with_a_hung_key_recovers_the_others(node: Node) -> None:
    hung = node.published("h1", HUNG)
    kept = node.published("w1", WELL)
    node.restart()
    with hanging(node.root / "gates", HUNG):
        started = time.monotonic()
        node.loop.call(node.service.recover())
        assert node.phase(WELL) == ("Ready", "")
        phase, reason = node.phase(HUNG)
        assert phase == "Broken"
        assert "has not answered" in reason
        assert reads(kept) == "w1"
        node.round_trip("w2", WELL)
        hold_until(started)
    assert node.loop.worst < MAX_LAG, f"the event loop stalled {node.loop.worst:.2f} s"
    eventually(lambda: node.phase(HUNG) == ("Ready", ""), "the hung key recovered once it answered")
    tidy(node, ("h1", hung), ("w1", kept))


def test_the_health_check_marks_a_hung_key_broken_and_checks_the_others(node: Node) -> None:
    hung = node.published("h1", HUNG)
    kept = node.published("w1", WELL)
    with hanging(node.root / "gates", HUNG):
        started = time.monotonic()
        node.loop.call(node.service.check_health())
        phase, reason = node.phase(HUNG)
        assert phase == "Broken"
        assert "has not answered" in reason
        assert node.phase(WELL) == ("Ready", "")
        # The other keys are still checked, round after round, while that one hangs.
        backing = node.root / "data" / names.cluster_id(WELL)
        aside = backing.with_name(backing.name + ".aside")
        backing.rename(aside)
        node.loop.call(node.service.check_health())
        assert node.phase(WELL)[0] == "Broken"
        aside.rename(backing)
        node.loop.call(node.service.check_health())
        assert node.phase(WELL) == ("Ready", "")
        assert node.healthz() == 200
        hold_until(started)
    assert node.loop.worst < MAX_LAG, f"the event loop stalled {node.loop.worst:.2f} s"

    def ready_again() -> bool:
        node.loop.call(node.service.check_health())
        return node.phase(HUNG) == ("Ready", "")

    eventually(ready_again, "the hung key Ready again once it answered")
    tidy(node, ("h1", hung), ("w1", kept))


def test_the_rebind_after_a_fuse_restart_waits_on_the_new_fuse_off_the_loop(node: Node) -> None:
    hung = node.published("h1", HUNG)
    kept = node.published("w1", WELL)
    before = node.entry(HUNG)
    assert before is not None
    assert before.pid is not None
    with hanging(node.root / "gates", HUNG):
        started = time.monotonic()
        os.kill(before.pid, signal.SIGKILL)  # its supervisor starts another, which hangs too

        def restarted_and_broken() -> bool:
            entry = node.entry(HUNG)
            assert entry is not None
            return (
                entry.pid != before.pid
                and entry.phase == "Broken"
                and "has not answered" in (entry.reason or "")
            )

        eventually(restarted_and_broken, "the FUSE restarted, its re-binding given up at the deadline")
        node.round_trip("w2", WELL)
        assert node.healthz() == 200
        hold_until(started)
    assert node.loop.worst < MAX_LAG, f"the event loop stalled {node.loop.worst:.2f} s"
    eventually(lambda: node.phase(HUNG) == ("Ready", "") and reads(hung) == "h1", "re-bound once it answered")
    tidy(node, ("h1", hung), ("w1", kept))


def test_a_fuse_pods_mount_that_does_not_answer_is_adopted_and_watched_off_the_loop(root: Path) -> None:
    mnt = root / "key" / "fuse-mount"
    argv = [*hanging_fuse.COMMAND, "--master-addrs", HUNG, "--fs-path", "/", "--mnt-path", str(mnt)]
    fuse = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert fuse.stdout is not None
    assert fuse.stdout.readline().strip() == b"ready"

    async def no_api() -> Any:
        raise AssertionError("a mount that answers late is alive: no pod is replaced")

    loop = Loop()
    try:
        manager = FusePodManager("n1", no_api, "unused:latest", poll=0.1, deadline=DEADLINE)
        with hanging(root / "gates", HUNG):
            started = time.monotonic()
            adopted = loop.call(manager.takeover("k", argv, str(mnt), FuseHandle(pod_name="fuse-k")))
            assert adopted, "a FUSE that does not answer lives: adopted, not replaced"
            hold_until(started)  # its watcher's stat hangs meanwhile
        assert loop.worst < MAX_LAG, f"the event loop stalled {loop.worst:.2f} s"
        time.sleep(1.0)  # ten polls of the watcher, answered now
        assert manager.running("k")
        assert manager.starts == 0
        loop.call(manager.close())
    finally:
        loop.close()
        fuse.terminate()
        fuse.wait(10)
    assert not mounts.mounted_at(mnt)
