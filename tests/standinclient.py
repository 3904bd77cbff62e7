"""A runtime's client for tests of the CSI node's client mode: the curvine-fuse stand-in mounted at a
dataset's target path, started, killed -9 and stopped as a client pod's FUSE would be."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from csi.fuse import mounts
from csi.fuse.clientfuse import Identity, client_mount, identity


class StandinClient:
    def __init__(self, fluid_path: Path, data: Path) -> None:
        self.fluid_path, self.data = fluid_path, data
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        if mounts.is_broken(self.fluid_path):  # a dead FUSE's mount: off first, as Curvine's entrypoint
            mounts.unmount(self.fluid_path, lazy=True)  # (patched, images/curvine/) does
        self.fluid_path.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "csi.standin.fusestandin", "--master-addrs", "client:1",
                "--mnt-path", str(self.fluid_path)]  # fmt: skip
        env = {**os.environ, "CURVINE_STANDIN_DATA": str(self.data)}
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "ready"

    def kill_9(self, *, dead_mount_stays: bool = False) -> None:
        """As a crash or an OOM kill: the mount stays broken until the next client takes it off (as
        its start does); unless ``dead_mount_stays``, it is taken off at once, as a client's quick
        restart would."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()
        if not dead_mount_stays:
            mounts.unmount(self.fluid_path, lazy=True)

    def mounted(self) -> Identity | None:
        mount = client_mount(str(self.fluid_path))
        return None if mount is None else identity(mount)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(10)
        for m in reversed(mounts.mounted_at(self.fluid_path)):
            mounts.unmount(m.mount_point, lazy=True)
