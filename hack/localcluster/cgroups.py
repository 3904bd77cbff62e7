"""Each real node's cgroup root (realnodes.py), in every hierarchy of this host: kubelet refuses a
``cgroupRoot`` that does not exist, and a root of its own per node keeps two kubelets from removing
each other's pod cgroups as orphans.

Removing a root needs it empty. ``runc delete --force`` kills a container's first process, and the
kernel the rest of its PID namespace once that process is gone; a thread of it stuck in the kernel
keeps it from going. A FUSE request does that: the CSI controller's thread waiting on a curvine-fuse
of its own pod, whose cache is gone, waits for an answer only that curvine-fuse could give, and the
kernel never kills curvine-fuse while its namespace's first process lingers. ``remove_root`` first
kills every process left in the root (curvine-fuse among them: its death fails the waiting request),
so that nothing of a node outlives ``stop``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from localcluster.state import log


def mounts() -> list[Path]:
    """Every cgroup hierarchy of this host (v1 controllers, or the v2 unified one)."""
    with open("/proc/self/mounts") as table:
        return [Path(line.split()[1]) for line in table if line.split()[2] in ("cgroup", "cgroup2")]


def make_root(root: str) -> None:
    for mount in mounts():
        with contextlib.suppress(OSError):
            (mount / root.strip("/")).mkdir(exist_ok=True)


def members(root: str) -> set[int]:
    """The processes in ``root`` or beneath it, in any hierarchy."""
    found: set[int] = set()
    for mount in mounts():
        top = mount / root.strip("/")
        for procs in top.rglob("cgroup.procs") if top.is_dir() else ():
            with contextlib.suppress(OSError, ValueError):
                found.update(int(pid) for pid in procs.read_text().split())
    return found


def kill_members(root: str, wait: float = 10.0) -> set[int]:
    """SIGKILL to every process left in ``root`` until none is, or ``wait`` s pass; those left."""
    deadline = time.monotonic() + wait
    left = members(root)
    if left:
        log(f"killing {len(left)} process(es) left in cgroup {root}: {sorted(left)}")
    while left and time.monotonic() < deadline:
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
        left = members(root)
    return left


def remove_root(root: str) -> None:
    left = kill_members(root)
    if left:
        log(f"cgroup {root} still holds {sorted(left)}: it is left behind")
    for mount in mounts():
        top = mount / root.strip("/")
        if not top.is_dir():
            continue
        for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                d.rmdir()
        with contextlib.suppress(OSError):
            top.rmdir()
