"""The embedded FUSE manager with the real stand-in: one process per key, a crash remounts and
reports, adoption after a node-service restart, and stop leaves no process and no mount."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from csi.fuse import mounts
from csi.fuse.fusemanager import FuseManager, is_fuse_mount, pid_alive
from csi.fuse.processes import process_start_time, signal_process

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/dev/fuse").exists(), reason="real FUSE mounts need root and /dev/fuse"
)


def argv(mnt: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "csi.standin.fusestandin",
        "--master-addrs",
        "m:8995",
        "--fs-path",
        "/",
        "--mnt-path",
        str(mnt),
    ]


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "data"
    monkeypatch.setenv("CURVINE_STANDIN_DATA", str(root))
    yield root
    for m in mounts.mount_table():
        if m.mount_point.startswith(str(tmp_path)):
            mounts.unmount(m.mount_point, lazy=True)


def test_start_crash_remount_and_stop(tmp_path: Path, data: Path) -> None:
    restarted: list[str] = []
    mnt = tmp_path / "k1" / "fuse-mount"

    async def main() -> None:
        fm = FuseManager(on_restart=restarted.append)
        pid = await fm.start("k1", argv(mnt), str(mnt))
        assert await fm.start("k1", argv(mnt), str(mnt)) == pid  # one process per key
        (mnt / "hello").write_text("world")
        os.kill(pid, signal.SIGKILL)
        while not restarted:
            await asyncio.sleep(0.05)
        assert restarted == ["k1"]
        assert fm.starts == 2
        assert (mnt / "hello").read_text() == "world"  # remounted, same backing data
        new_pid = fm.processes["k1"].pid
        await fm.stop("k1")
        assert not pid_alive(new_pid)
        assert not mounts.mounted_at(mnt)

    asyncio.run(main())


def test_a_failing_rebind_does_not_end_the_supervision(tmp_path: Path, data: Path) -> None:
    calls: list[str] = []
    mnt = tmp_path / "k4" / "fuse-mount"

    def rebind_fails(key: str) -> None:
        calls.append(key)
        raise mounts.MountError("mount --bind: No such file or directory")

    async def main() -> None:
        fm = FuseManager(on_restart=rebind_fails, poll=0.05)
        for crash in (1, 2):  # the second crash is still noticed and remounted
            os.kill(fm.processes["k4"].pid if crash == 2 else await fm.start("k4", argv(mnt), str(mnt)), 9)
            while len(calls) < crash:
                await asyncio.sleep(0.05)
        assert fm.starts == 3
        assert is_fuse_mount(str(mnt))
        pid = fm.processes["k4"].pid
        await fm.stop("k4")
        assert not pid_alive(pid)
        assert not mounts.mounted_at(mnt)

    asyncio.run(main())


def test_adopt_after_the_node_service_restarts(tmp_path: Path, data: Path) -> None:
    mnt = tmp_path / "k2" / "fuse-mount"

    async def first() -> int:
        fm = FuseManager()
        pid = await fm.start("k2", argv(mnt), str(mnt))
        await fm.close()  # the node service goes; its FUSE stays
        return pid

    pid = asyncio.run(first())
    assert pid_alive(pid)
    assert is_fuse_mount(str(mnt))

    async def second() -> None:
        fm = FuseManager()
        assert await fm.adopt("k2", argv(mnt), str(mnt), pid)
        assert fm.starts == 0
        await fm.stop("k2")
        assert not pid_alive(pid)

    asyncio.run(second())
    assert not mounts.mounted_at(mnt)


def test_a_dead_mount_is_not_adopted(tmp_path: Path, data: Path) -> None:
    mnt = tmp_path / "k3" / "fuse-mount"

    async def main() -> None:
        fm = FuseManager()
        pid = await fm.start("k3", argv(mnt), str(mnt))
        await fm.close()
        os.kill(pid, signal.SIGKILL)
        while pid_alive(pid):
            await asyncio.sleep(0.02)
        assert not await FuseManager().adopt("k3", argv(mnt), str(mnt), pid)
        # A fresh start clears the broken mount first.
        fresh = FuseManager()
        await fresh.start("k3", argv(mnt), str(mnt))
        assert not mounts.is_broken(mnt)
        await fresh.stop("k3")

    asyncio.run(main())


def started(pid: int) -> int:
    at = process_start_time(pid)
    assert at is not None, f"no process {pid}"
    return at


def test_a_recorded_pid_that_is_not_the_keys_fuse_is_neither_adopted_nor_signalled(
    tmp_path: Path, data: Path
) -> None:
    mnt = tmp_path / "k5" / "fuse-mount"
    # After a node restart the recorded pid can belong to anything: here an unrelated live process.
    sleeper = subprocess.Popen(["sleep", "300"])

    async def main() -> None:
        first = FuseManager()
        pid = await first.start("k5", argv(mnt), str(mnt))
        await first.close()
        fm = FuseManager()
        assert not await fm.adopt("k5", argv(mnt), str(mnt), sleeper.pid)
        await fm.stop("k5")
        assert sleeper.poll() is None, "an unrelated process was signalled"
        # The FUSE's own pid, but a start time that is not its process's: the pid was reused.
        assert not await fm.adopt("k5", argv(mnt), str(mnt), pid, start_time=started(pid) + 1)
        assert await fm.adopt("k5", argv(mnt), str(mnt), pid, start_time=started(pid))
        await fm.stop("k5")
        assert not pid_alive(pid)

    try:
        asyncio.run(main())
    finally:
        sleeper.kill()
        sleeper.wait()
    assert not mounts.mounted_at(mnt)


def test_a_process_is_signalled_only_while_it_is_the_one_recorded() -> None:
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        at = started(sleeper.pid)
        assert not signal_process(sleeper.pid, at + 1, signal.SIGKILL)
        assert sleeper.poll() is None
        assert signal_process(sleeper.pid, at, signal.SIGKILL)
        assert sleeper.wait(5) == -signal.SIGKILL
        assert not signal_process(sleeper.pid, at, signal.SIGKILL)  # gone: nothing to signal
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()


def test_start_times_are_the_kernels_field_22() -> None:
    stat = Path("/proc/self/stat").read_text()
    assert process_start_time(os.getpid()) == int(stat.rsplit(")", 1)[1].split()[19])
    assert process_start_time(2**22 + 1) is None  # above pid_max: no such process
