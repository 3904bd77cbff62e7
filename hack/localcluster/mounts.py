"""What FUSE processes and mounts are left under a folder of the state dir once the processes that
made them are stopped: the CSI node services' (kwok nodes), the CSI controller's, a real node's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from localcluster.state import reap


def release_node_mounts(root: Path) -> None:
    """The CSI node services' FUSE processes outlive them by design (a restarted node service adopts
    them): once those are stopped for good, stop the FUSE processes serving under ``root`` and
    unmount everything left there, deepest first, and ``root`` if it is a mount, then remove it."""
    if not root.exists():
        return
    prefix = str(root.resolve()) + "/"
    fuse = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if prefix.encode() in (entry / "cmdline").read_bytes():
                    fuse.append(int(entry.name))
    for pid in fuse:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while fuse and time.monotonic() < deadline:
        for pid in fuse:
            reap(pid)
        fuse = [pid for pid in fuse if Path(f"/proc/{pid}").exists()]
        time.sleep(0.05)
    for pid in fuse:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with open("/proc/self/mountinfo") as table:
        points = [line.split()[4] for line in table]
    # ``root`` itself last: a real node's folder is a shared mount of its own (realnodes._share_root).
    inside = [p for p in points if p.startswith(prefix) or p == prefix[:-1]]
    for point in sorted(inside, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)
    shutil.rmtree(root, ignore_errors=True)
