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
"""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from csi.backends.backend import BackendUnavailable, Cluster, Tree, check_cluster_id
from csi.fuse.fuseconfig import fuse_config, write_fuse_config
from csi.fuse.fusemanager import FuseError, FuseManager
from csi.keyedlocks import KeyedLocks
from csi.model.errors import FuseUnavailable
from csi.model.fusecmd import fuse_args
from csi.model.params import FuseParams
from kubectl_fluid.api import names

log = logging.getLogger("csi.controller")

# Errors that say the cluster is away (its masters down, the FUSE gone), not that the path is wrong.
_UNREACHABLE = (errno.EIO, errno.ENOTCONN, errno.ETIMEDOUT, errno.ECONNREFUSED, errno.EHOSTUNREACH)


class CurvineBackend:
    def __init__(
        self,
        fuse_command: list[str],
        mount_root: str,
        settings: Mapping[str, Any] | None = None,
        fuse: FuseManager | None = None,
    ) -> None:
        self.fuse_command = fuse_command
        self.mount_root = Path(mount_root)
        self.settings: Mapping[str, Any] = settings or {}
        self.fuse = fuse if fuse is not None else FuseManager(log_dir=str(self.mount_root / "fuse-logs"))
        self._locks = KeyedLocks()

    def mount_path(self, cluster_id: str) -> Path:
        return self.mount_root / check_cluster_id(cluster_id) / "fuse-mount"

    async def _tree(self, cluster: Cluster) -> Tree:
        if cluster.master_addrs is None:
            raise BackendUnavailable(
                f"the masters of cluster {cluster.cluster_id} are not known: the volume's PV (its "
                f"volumeAttributes {names.PARAM_MASTER_ADDRS}) is gone and this controller did not "
                "create the volume; remove its directory in Curvine by hand"
            )
        mnt = self.mount_path(cluster.cluster_id)
        async with self._locks.hold(cluster.cluster_id):
            if not self.fuse.running(cluster.cluster_id):
                await self._mount(cluster.cluster_id, cluster.master_addrs, mnt)
        return Tree(mnt)

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
        tree = await self._tree(cluster)
        try:
            return await asyncio.to_thread(getattr(tree, call), path)
        except OSError as err:
            if err.errno in _UNREACHABLE:
                raise BackendUnavailable(
                    f"{what} {path} in cluster {cluster.cluster_id} ({cluster.master_addrs}): "
                    f"{err.strerror}; is Curvine up?"
                ) from None
            raise

    async def exists(self, cluster: Cluster, path: str) -> bool:
        found: bool = await self._run(cluster, "looking up", "exists", path)
        return found

    async def mkdirs(self, cluster: Cluster, path: str) -> None:
        await self._run(cluster, "creating", "mkdirs", path)

    async def remove(self, cluster: Cluster, path: str) -> None:
        await self._run(cluster, "removing", "remove", path)

    async def close(self) -> None:
        """Unmount every cluster: the mounts are this process's own."""
        for cluster_id in list(self.fuse.processes):
            await self.fuse.stop(cluster_id)
            mnt = self.mount_path(cluster_id)
            Path(names.fuse_config_path(str(mnt))).unlink(missing_ok=True)
            for directory in (mnt, mnt.parent):
                try:
                    directory.rmdir()
                except OSError:
                    break
