"""Client mode (SPEC §7): the FUSE of a Dataset's PV is its runtime's client pod, never a process of
the node service's. What the node service does around it, per (dataset, node) mount key:

- ``attach``: label this Node ``fluid.io/f-{ns}-{name}: "true"`` (the client DaemonSet's
  nodeSelector, as upstream's NodeStageVolume does), then wait, at most ``wait`` seconds, until the
  kernel shows a FUSE mount at the runtime's target path (``fluid_path``) that does not answer
  ENOTCONN. A client whose FUSE died (killed, OOM-killed) leaves its mount there, dead, until its
  container's restart mounts anew: that is waited for too, not bound beneath (every call under it
  would fail with errno 107). The path is looked up once the table shows a mount, for at most
  ``ALIVE_WITHIN`` (one that has not answered by then lives and waits on its cache). A timeout is
  FuseUnavailable (FAILED_PRECONDITION) that says what the client pod on this node is doing: not
  scheduled, crashing, running without a mount, or its mount dead.
- ``adopt``: after a restart of the node service, watch a client mount that is there.
- a watcher: a client pod restarted or replaced mounts a new FUSE at the same path (another mount and device),
  and every bind into the old one is dead; ``on_restart(key)`` tells the node service, which binds
  its volumes again, as after a restart of a FUSE of its own.
- ``detach`` (the last unstage of the dataset here): remove the label when the runtime's
  ``spec.client.cleanPolicy`` is ``OnDemand`` or the runtime is gone (csi/model/clientvolume.py:
  ``clears_label``). Never an unmount: the mount is the client's.

Without an API client (``api`` None: csi-sanity, local runs) the label is left to the caller and the
client pod is not read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Protocol

from csi.fuse import mounts
from csi.fuse.fusemanager import ALIVE_WITHIN, _notify
from csi.model.clientvolume import (
    ClientVolume,
    clean_policy_of,
    clears_label,
    client_pod_state,
    not_mounted_message,
)
from csi.model.errors import FuseUnavailable

log = logging.getLogger("csi.clientfuse")

DEFAULT_CLIENT_WAIT = 60.0


class ClientApi(Protocol):
    async def set_label(self, namespace: str, name: str, present: bool) -> None: ...

    async def runtime(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    async def client_pod(self, namespace: str, runtime: str) -> dict[str, Any] | None: ...


# A mount as the watcher tells one from its successor: its id and its filesystem's device. A mount
# id is reused as soon as its mount is gone; the device of a client's FUSE that died stays taken while
# the node service's binds into it live, so a new client's FUSE always shows another one.
Identity = tuple[int, str]


def identity(mount: mounts.MountInfo) -> Identity:
    return mount.mount_id, mount.device


def client_mount(mnt_path: str, table: list[mounts.MountInfo] | None = None) -> mounts.MountInfo | None:
    """The FUSE mount at ``mnt_path`` (the topmost, should mounts stack), from the mount table."""
    fuses = [m for m in mounts.mounted_at(mnt_path, table) if m.fs_type.startswith("fuse")]
    return fuses[-1] if fuses else None


async def _dead(path: str) -> bool:
    """Whether the FUSE mount at ``path`` answers ENOTCONN (its process died); one that has not
    answered within ``ALIVE_WITHIN`` lives (its stat goes on in its thread, the loop does not wait)."""
    try:
        return await asyncio.wait_for(asyncio.to_thread(mounts.is_broken, path), ALIVE_WITHIN)
    except TimeoutError:
        return False


class ClientFuse:
    def __init__(
        self,
        api: ClientApi | None,
        *,
        wait: float = DEFAULT_CLIENT_WAIT,
        poll: float = 0.25,
        interval: float = 1.0,
        on_restart: Callable[[str], None] | None = None,
    ) -> None:
        self.api, self.wait, self.poll, self.interval = api, wait, poll, interval
        self.on_restart = on_restart
        # key -> (mount point, what was last seen mounted there; None while nothing is)
        self._watched: dict[str, tuple[str, Identity | None]] = {}
        self._watcher: asyncio.Task[None] | None = None

    def running(self, key: str) -> bool:
        watched = self._watched.get(key)
        return watched is not None and client_mount(watched[0]) is not None

    async def attach(self, key: str, volume: ClientVolume) -> str | None:
        """Label the node, wait for the client's mount; the client pod's name (None unknown)."""
        if self.api is not None:
            await self.api.set_label(volume.namespace, volume.name, True)
        loop = asyncio.get_running_loop()
        start = loop.time()
        deadline = start + self.wait
        while True:
            mount = client_mount(volume.fluid_path)
            dead = mount is not None and await _dead(volume.fluid_path)
            if mount is not None and not dead:
                break
            if loop.time() >= deadline:
                state = await self._pod_state(volume)
                raise FuseUnavailable(not_mounted_message(volume, self.wait, state, dead=dead))
            await asyncio.sleep(self.poll)
        waited = round(loop.time() - start, 4)
        log.info("client mounted", extra={"mount_key": key, "path": volume.fluid_path, "waited": waited})
        self._watch(key, volume.fluid_path, identity(mount))
        return await self.pod_name(volume)

    def adopt(self, key: str, mnt_path: str) -> bool:
        """Watch the client mount at ``mnt_path`` if there is one (after a restart)."""
        mount = client_mount(mnt_path)
        if mount is None:
            return False
        self._watch(key, mnt_path, identity(mount))
        return True

    async def detach(self, key: str, namespace: str, name: str, *, unlabel: bool = True) -> bool:
        """Stop watching; remove the label as the cleanPolicy says (unless ``unlabel`` is False: a
        stage that failed). Whether it was removed."""
        self._watched.pop(key, None)
        if self.api is None or not unlabel:
            return False
        runtime = await self.api.runtime(namespace, name)
        if not clears_label(clean_policy_of(runtime), runtime is not None):
            return False
        await self.api.set_label(namespace, name, False)
        return True

    async def pod_name(self, volume: ClientVolume) -> str | None:
        if self.api is None:
            return None
        try:
            pod = await self.api.client_pod(volume.namespace, volume.name)
        except Exception as err:  # a name for the FuseMount only: never fails a call
            log.warning("reading the client pod of %s/%s: %s", volume.namespace, volume.name, err)
            return None
        return None if pod is None else pod.get("metadata", {}).get("name")

    async def _pod_state(self, volume: ClientVolume) -> str:
        if self.api is None:
            return "no API server to ask about the client pod"
        try:
            pod = await self.api.client_pod(volume.namespace, volume.name)
        except Exception as err:
            return f"the client pod could not be read ({err})"
        return client_pod_state(pod, volume)

    def _watch(self, key: str, mnt_path: str, seen: Identity) -> None:
        self._watched[key] = (mnt_path, seen)
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while self._watched:
            await asyncio.sleep(self.interval)
            try:
                self.check(mounts.mount_table())
            except Exception:
                log.exception("watching the client mounts failed")

    def check(self, table: list[mounts.MountInfo]) -> list[str]:
        """One look at the mount table: the keys whose client mounted a new FUSE since the last look
        (told to ``on_restart``). A mount gone is remembered as gone until one comes."""
        replaced = []
        for key, (mnt_path, seen) in list(self._watched.items()):
            mount = client_mount(mnt_path, table)
            now = None if mount is None else identity(mount)
            if now == seen:
                continue
            self._watched[key] = (mnt_path, now)
            if now is not None:
                log.info("the client's FUSE at %s is a new mount: binding its volumes again", mnt_path)
                replaced.append(key)
                _notify(self.on_restart, key)
        return replaced

    async def close(self) -> None:
        """Stop watching; the client mounts are the clients'."""
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
