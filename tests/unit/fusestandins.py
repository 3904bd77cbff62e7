"""Real stand-in mounts for tests: ``Standins`` starts ``curvine-fuse`` stand-ins (root and /dev/fuse
needed) and guarantees that none outlives the test and no mount is left behind."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from csi.standin import fusestandin
from kubectl_fluid.api import names

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 5.0
STOP_TIMEOUT = 5.0


@dataclass
class Standin:
    proc: subprocess.Popen[str]
    mnt: Path
    backing: Path

    def wait_ready(self) -> None:
        """Wait for the ``ready`` line; the mount must then be in the mount table."""
        sel = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            if not sel.select(START_TIMEOUT):
                pytest.fail(f"no ready line within {START_TIMEOUT}s")
            line = self.proc.stdout.readline()
        finally:
            sel.close()
        if line != "ready\n":
            self.proc.wait(STOP_TIMEOUT)
            pytest.fail(f"expected 'ready', got {line!r}; stderr: {self.stderr()}")
        assert str(self.mnt) in fusestandin.mount_points()

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(STOP_TIMEOUT)

    def stderr(self) -> str:
        assert self.proc.stderr is not None
        return self.proc.stderr.read() if self.proc.poll() is not None else "(still running)"


class Standins:
    """Starts stand-ins and guarantees, whatever the test did, that none outlives it and no mount
    is left behind (a leaked FUSE mount would break every later run under /tmp)."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.data = tmp_path / "data"
        self.started: list[Standin] = []
        self.mount_dirs: list[Path] = []
        self.remove_after: list[Path] = []

    def world_reachable_dir(self) -> Path:
        """A mount point other users can reach (pytest's tmp dirs are private to root)."""
        path = Path(tempfile.mkdtemp(prefix="fusestandin-", dir="/tmp"))
        path.chmod(0o755)
        self.remove_after.append(path)
        return path

    def command(self, master_addrs: str, fs_path: str, mnt: Path, extra: Sequence[str] = ()) -> list[str]:
        return [
            sys.executable,
            "-m",
            "csi.standin.fusestandin",
            "--master-addrs",
            master_addrs,
            "--fs-path",
            fs_path,
            "--mnt-path",
            str(mnt),
            *extra,
        ]

    def env(self) -> dict[str, str]:
        return {**os.environ, fusestandin.DATA_ROOT_ENV: str(self.data)}

    def start(
        self,
        master_addrs: str = "10.0.0.1:8995",
        fs_path: str = "/",
        mnt: Path | None = None,
        extra: Sequence[str] = (),
        wait: bool = True,
    ) -> Standin:
        mnt = mnt or self.tmp_path / f"mnt{len(self.mount_dirs)}"
        mnt.mkdir(exist_ok=True)
        self.mount_dirs.append(mnt)
        proc = subprocess.Popen(
            self.command(master_addrs, fs_path, mnt, extra),
            cwd=REPO,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        backing = self.data / names.cluster_id(master_addrs) / fs_path.lstrip("/")
        standin = Standin(proc, mnt, backing)
        self.started.append(standin)
        if wait:
            standin.wait_ready()
        return standin

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run the stand-in to completion (for invocations that must fail at once)."""
        return subprocess.run(
            [sys.executable, "-m", "csi.standin.fusestandin", *args],
            cwd=REPO,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=STOP_TIMEOUT,
            check=False,
        )

    def cleanup(self) -> None:
        for standin in self.started:
            if standin.proc.poll() is None:
                standin.proc.terminate()
                try:
                    standin.proc.wait(STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    standin.proc.kill()
                    standin.proc.wait()
            for pipe in (standin.proc.stdout, standin.proc.stderr):
                if pipe is not None:
                    pipe.close()
        # Mounts stack, so a path can be listed more than once; a bounded loop still never hangs.
        leaked = []
        for mnt in self.mount_dirs:
            for _ in range(5):
                if str(mnt) not in fusestandin.mount_points():
                    break
                subprocess.run(["umount", "-l", str(mnt)], check=False)
            else:
                leaked.append(mnt)
        for path in self.remove_after:
            path.rmdir()
        assert not leaked, f"could not unmount {leaked}"


@contextmanager
def running(tmp_path: Path) -> Iterator[Standins]:
    manager = Standins(tmp_path)
    try:
        yield manager
    finally:
        manager.cleanup()
