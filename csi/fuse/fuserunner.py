"""What the node service needs from whatever runs its FUSE processes: embedded (a supervised child,
csi/fuse/fusemanager.py) or standalone (a pod per mount key, csi/fuse/fusepods.py). Both restart a FUSE that
died and then call ``on_restart(key)``, so the node service re-binds what pointed into the old mount.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from csi.model.fusepodparams import PodSettings


@dataclass(frozen=True)
class FuseHandle:
    """How to find a running FUSE again after a restart: its pid and the start time of that process
    (embedded; the pid alone may have been reused) or its pod (standalone)."""

    pid: int | None = None
    pod_name: str | None = None
    start_time: int | None = None


class FuseRunner(Protocol):
    on_restart: Callable[[str], None] | None

    def running(self, key: str) -> bool: ...

    def handle(self, key: str) -> FuseHandle | None: ...

    async def launch(
        self,
        key: str,
        argv: list[str],
        mnt_path: str,
        settings: PodSettings = (),
        spawned: Callable[[FuseHandle], None] | None = None,
    ) -> FuseHandle:
        """Start FUSE for ``key`` and return once the kernel shows its mount at ``mnt_path``. ``settings``:
        the StorageClass's resources and priority of a FUSE in a pod of its own (a FUSE in this
        process's container shares its cgroup: there they change nothing). ``spawned``: told the
        FUSE's handle as soon as its process exists, before its mount (embedded: a FUSE pod's name
        is known ahead), so the caller can record it while the FUSE mounts."""
        ...

    async def takeover(
        self, key: str, argv: list[str], mnt_path: str, handle: FuseHandle, settings: PodSettings = ()
    ) -> bool:
        """Watch a FUSE an earlier node service started; False if it is gone or not serving (one
        that does not answer within a second is serving: its server lives). ``settings`` as for
        ``launch``: what a replacement of it is made with."""
        ...

    async def stop(self, key: str) -> None: ...

    async def close(self) -> None:
        """Stop watching without stopping FUSE: mounts outlive the node service."""
        ...
