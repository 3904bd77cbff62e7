"""The controller service's backend in the real Curvine (SPEC §5): a volume's directory is made and
removed in the cluster itself, through a FUSE mount of the cluster's root (``fs-path /``) that the
controller service owns, one per cluster, started at its first use and supervised like the node's
(csi/fuse/fusemanager.py restarts one that dies). Curvine's client CLI (``cv``) would do the same without
a mount, but only curvine-server and curvine-fuse are built; a FUSE mount needs no other binary.

Mount points are ``{mount_root}/{cluster-id}/fuse-mount``, each with its configuration file beside
it (csi/fuse/fuseconfig.py, the same node settings the node service uses). The controller service stops
them when it stops; one left by a controller killed -9 is detached when the next one mounts there.
Operations go through csi/backends/backend.py's ``Tree``, so a symlink a tenant made in the cluster never
leads a remove outside it.

A mount is replaced, and the cluster mounted afresh, where it would keep a call waiting: curvine-fuse
keeps its connection to a master whose pod has gone and waits out its ``rpc-timeout-ms`` (120 s by
default) on it before it connects again (measured after the sample Curvine cluster was deleted and
applied again: CreateVolume took 81 and 123 s through the old mount, where a new one answers at once).
- Before a call, when the masters' names resolve elsewhere than when the mount started
  (csi/backends/masterips.py: a master's pod was replaced).
- When a call gets no answer within ``deadline`` (below csi-provisioner's own 10 s ``--timeout``, so
  the provisioner hears why) or an answer that the cluster is away: the call fails UNAVAILABLE at
  once, the FUSE is stopped behind it (which ends the stuck operation with an error), and the
  provisioner's retry mounts the cluster afresh.
"""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from csi.backends import masterips
from csi.backends.backend import BackendUnavailable, Cluster, Tree, check_cluster_id
from csi.fuse.fuseconfig import fuse_config, write_fuse_config
from csi.fuse.fusemanager import FuseError, FuseManager
from csi.fuse.fuserunner import FuseHandle
from csi.keyedlocks import KeyedLocks
from csi.model.errors import FuseUnavailable
from csi.model.fusecmd import fuse_args
from csi.model.params import FuseParams
from kubectl_fluid.api import names

log = logging.getLogger("csi.controller")

# Errors that say the cluster is away (its masters down, the FUSE gone), not that the path is wrong.
_UNREACHABLE = (errno.EIO, errno.ENOTCONN, errno.ETIMEDOUT, errno.ECONNREFUSED, errno.EHOSTUNREACH)
# How long an operation may wait on a cluster's mount before the mount is replaced: below
# csi-provisioner's default --timeout (10 s), after which it stops listening and retries.
DEFAULT_DEADLINE = 8.0


class CurvineBackend:
    def __init__(
        self,
        fuse_command: list[str],
        mount_root: str,
        settings: Mapping[str, Any] | None = None,
        *,
        fuse: FuseManager | None = None,
        deadline: float = DEFAULT_DEADLINE,
        resolve: masterips.Resolver = masterips.resolve,
    ) -> None:
        self.fuse_command = fuse_command
        self.deadline = deadline
        self.resolve = resolve
        # Where each mounted cluster's masters were when its mount started.
        self._resolved: dict[str, masterips.Resolved] = {}
        self.mount_root = Path(mount_root)
        self.settings: Mapping[str, Any] = settings or {}
        self.fuse = fuse if fuse is not None else FuseManager(log_dir=str(self.mount_root / "fuse-logs"))
        self._locks = KeyedLocks()
        # Replacements of mounts that stopped answering, running behind the calls that found them.
        self._replacing: set[asyncio.Task[None]] = set()

    def mount_path(self, cluster_id: str) -> Path:
        return self.mount_root / check_cluster_id(cluster_id) / "fuse-mount"

    async def _tree(self, cluster: Cluster) -> tuple[Tree, FuseHandle | None]:
        """The cluster's mount as a ``Tree``, and which FUSE serves it (to replace that one only)."""
        if cluster.master_addrs is None:
            raise BackendUnavailable(
                f"the masters of cluster {cluster.cluster_id} are not known: the volume's PV (its "
                f"volumeAttributes {names.PARAM_MASTER_ADDRS}) is gone and this controller did not "
                "create the volume; remove its directory in Curvine by hand"
            )
        mnt = self.mount_path(cluster.cluster_id)
        cluster_id = cluster.cluster_id
        async with self._locks.hold(cluster_id):
            now = await self.resolve(cluster.master_addrs)
            before = self._resolved.get(cluster_id, frozenset())
            if self.fuse.running(cluster_id) and masterips.moved(before, now):
                where = f"{', '.join(sorted(before))}, now {', '.join(sorted(now))}"
                log.info("the masters of cluster %s moved (%s): mounting it afresh", cluster_id, where)
                await self.fuse.stop(cluster_id)
            if not self.fuse.running(cluster_id):
                await self._mount(cluster_id, cluster.master_addrs, mnt)
                self._resolved[cluster_id] = now
            return Tree(mnt), self.fuse.handle(cluster_id)

    async def _mount(self, cluster_id: str, master_addrs: str, mnt: Path) -> None:
        params = FuseParams(master_addrs=master_addrs, fs_path=names.DEFAULT_FS_PATH)
        text = fuse_config(params, self.settings)
        await asyncio.to_thread(write_fuse_config, names.fuse_config_path(str(mnt)), text)
        argv = [*self.fuse_command, *fuse_args(params, str(mnt))]
        try:
            await self.fuse.start(cluster_id, argv, str(mnt))
        except (FuseError, FuseUnavailable) as err:
            raise BackendUnavailable(f"cannot mount cluster {cluster_id} ({master_addrs}): {err}") from None
        log.info("mounted cluster %s (%s) at %s", cluster_id, master_addrs, mnt)

    async def _run(self, cluster: Cluster, what: str, call: Any, path: str) -> Any:
        tree, serving = await self._tree(cluster)
        where = f"{what} {path} in cluster {cluster.cluster_id} ({cluster.master_addrs})"
        work = asyncio.ensure_future(asyncio.to_thread(getattr(tree, call), path))
        done, _ = await asyncio.wait([work], timeout=self.deadline)
        if not done:
            # The operation goes on in its thread until the FUSE stops; what it ends with is moot.
            work.add_done_callback(lambda w: w.cancelled() or w.exception())
            self._replace(cluster.cluster_id, serving, f"no answer in {self.deadline:.0f} s")
            raise BackendUnavailable(
                f"{where}: no answer in {self.deadline:.0f} s; its FUSE mount is being replaced and "
                "the next try mounts the cluster afresh. Is Curvine up?"
            )
        try:
            return work.result()
        except OSError as err:
            if err.errno in _UNREACHABLE:
                self._replace(cluster.cluster_id, serving, err.strerror or str(err))
                raise BackendUnavailable(f"{where}: {err.strerror}; is Curvine up?") from None
            raise

    def _replace(self, cluster_id: str, serving: FuseHandle | None, why: str) -> None:
        """Stop the FUSE ``serving`` the cluster, unless another has replaced it already; the next
        ``_tree`` waits for that (the cluster's lock) and mounts afresh."""

        async def replace() -> None:
            async with self._locks.hold(cluster_id):
                if serving is None or self.fuse.handle(cluster_id) != serving:
                    return
                log.warning("replacing the FUSE mount of cluster %s: %s", cluster_id, why)
                await self.fuse.stop(cluster_id)

        task = asyncio.create_task(replace())
        self._replacing.add(task)
        task.add_done_callback(self._replacing.discard)

    async def exists(self, cluster: Cluster, path: str) -> bool:
        found: bool = await self._run(cluster, "looking up", "exists", path)
        return found

    async def mkdirs(self, cluster: Cluster, path: str) -> None:
        await self._run(cluster, "creating", "mkdirs", path)

    async def remove(self, cluster: Cluster, path: str) -> None:
        await self._run(cluster, "removing", "remove", path)

    async def close(self) -> None:
        """Unmount every cluster: the mounts are this process's own."""
        await asyncio.gather(*self._replacing, return_exceptions=True)
        for cluster_id in list(self.fuse.processes):
            await self.fuse.stop(cluster_id)
            mnt = self.mount_path(cluster_id)
            Path(names.fuse_config_path(str(mnt))).unlink(missing_ok=True)
            for directory in (mnt, mnt.parent):
                try:
                    directory.rmdir()
                except OSError:
                    break
