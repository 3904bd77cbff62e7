"""The filesystem behind the controller service: where CreateVolume makes a volume's directory and
DeleteVolume removes it.

The controller needs three operations on a cluster's namespace, so it depends on this protocol:
``CurvineBackend`` (csi/backends/curvinebackend.py) does them in the real Curvine cluster, through a FUSE
mount of the cluster's root that the controller service owns (Curvine's own CLI, ``cv``, is not
among the binaries built); ``LocalBackend``, for tests that need no Curvine and for the development
stand-in, serves each cluster from a local directory, the tree the FUSE stand-in serves.

A cluster is named by its cluster-id and, where known, its masters: DeleteVolume gets only the
volume handle, which carries the id; the controller looks the masters up (csi/rpc/controller_service.py)
and a backend that needs them and is not told says so.

Calls are async; file operations run in a worker thread so a slow filesystem never stalls the event
loop (and with it Probe and every other RPC).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

# A cluster id becomes a directory name; anything but the 8 hex digits the driver derives (SPEC §5)
# is refused so an id can never name "..", "/" or a hidden file.
_CLUSTER_ID = re.compile(r"^[0-9a-f]{8}$")


class BackendPathError(ValueError):
    """A cluster id or path the backend refuses (not absolute, escapes its root, names the root)."""


class BackendUnavailable(Exception):
    """The cluster cannot be reached now (its masters unknown, its FUSE not mounting, I/O errors);
    the message says which cluster and why. The provisioner retries."""


@dataclass(frozen=True)
class Cluster:
    cluster_id: str
    # Canonical master-addrs; None when the controller could not learn them (LocalBackend needs none).
    master_addrs: str | None = None


class Backend(Protocol):
    async def exists(self, cluster: Cluster, path: str) -> bool:
        """Whether ``path`` (absolute, in the cluster's namespace) is an existing directory."""
        ...

    async def mkdirs(self, cluster: Cluster, path: str) -> None:
        """Create ``path`` and any missing parents; succeed if it already is a directory."""
        ...

    async def remove(self, cluster: Cluster, path: str) -> None:
        """Remove ``path`` and everything under it; succeed if it does not exist."""
        ...

    async def close(self) -> None:
        """Release what the backend holds (mounts); called once when the service stops."""
        ...


def check_path(path: str) -> str:
    """``path`` if it is absolute and normalized with no ``..``, else BackendPathError. Normalizing
    silently would hide a caller bug: ``/a/../b`` reaching a backend means validation was skipped."""
    if not path.startswith("/"):
        raise BackendPathError(f"path {path!r} is not absolute")
    if path != "/" and any(part in ("", ".", "..") for part in path.split("/")[1:]):
        raise BackendPathError(f"path {path!r} is not normalized or contains '..'")
    return path


def check_cluster_id(cluster_id: str) -> str:
    if not _CLUSTER_ID.match(cluster_id):
        raise BackendPathError(f"cluster id {cluster_id!r} is not 8 lowercase hex digits")
    return cluster_id


class Tree:
    """A cluster's namespace as the directory ``base`` (a local tree, or a FUSE mount of the cluster's
    root). Synchronous: callers run it in a thread."""

    def __init__(self, base: Path) -> None:
        self.base = base

    def _local(self, path: str) -> Path:
        base = self.base
        local = base / check_path(path).lstrip("/")
        # A symlink inside the data (a user can make one through FUSE) must not lead a remove or
        # mkdirs outside the cluster's directory: check where the parent really is.
        parent = local.parent.resolve() if local != base else base
        if parent != base.resolve() and base.resolve() not in parent.parents:
            raise BackendPathError(f"path {path!r} leaves the cluster's directory")
        return local

    def exists(self, path: str) -> bool:
        return self._local(path).is_dir()

    def mkdirs(self, path: str) -> None:
        # exist_ok still raises FileExistsError when a non-directory is in the way: that is wanted.
        self._local(path).mkdir(parents=True, exist_ok=True)

    def remove(self, path: str) -> None:
        if check_path(path) == "/":
            raise BackendPathError("refusing to remove a cluster's root directory")
        local = self._local(path)
        if local.is_symlink() or local.is_file():
            local.unlink(missing_ok=True)  # the link itself, never what it points to
        elif local.is_dir():
            shutil.rmtree(local)


class LocalBackend:
    """Serves cluster ``C``'s path ``P`` from ``{root}/C{P}``: the layout the FUSE stand-in serves, so
    a directory the controller creates here is what a stand-in FUSE mount of that cluster shows."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()

    def _tree(self, cluster: Cluster) -> Tree:
        return Tree(self.root / check_cluster_id(cluster.cluster_id))

    async def exists(self, cluster: Cluster, path: str) -> bool:
        return await asyncio.to_thread(self._tree(cluster).exists, path)

    async def mkdirs(self, cluster: Cluster, path: str) -> None:
        await asyncio.to_thread(self._tree(cluster).mkdirs, path)

    async def remove(self, cluster: Cluster, path: str) -> None:
        await asyncio.to_thread(self._tree(cluster).remove, path)

    async def close(self) -> None:
        return None
