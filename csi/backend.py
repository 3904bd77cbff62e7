"""The filesystem behind the controller service: where CreateVolume makes a volume's directory and
DeleteVolume removes it.

The controller only needs three operations on a cluster's namespace, so it depends on this protocol,
not on a client library: the repository's development stand-in (``LocalBackend``) serves each
cluster from a local directory, and a real Curvine client can implement the same three calls.

Calls are synchronous; the gRPC service runs them in a worker thread so a slow filesystem never stalls
the event loop (and with it Probe and every other RPC).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Protocol

# A cluster id becomes a directory name in LocalBackend; anything but the 8 hex digits the driver
# derives (SPEC §5) is refused so an id can never name "..", "/" or a hidden file.
_CLUSTER_ID = re.compile(r"^[0-9a-f]{8}$")


class BackendPathError(ValueError):
    """A cluster id or path the backend refuses (not absolute, escapes its root, names the root)."""


class Backend(Protocol):
    def exists(self, cluster_id: str, path: str) -> bool:
        """Whether ``path`` (absolute, in the cluster's namespace) is an existing directory."""
        ...

    def mkdirs(self, cluster_id: str, path: str) -> None:
        """Create ``path`` and any missing parents; succeed if it already is a directory."""
        ...

    def remove(self, cluster_id: str, path: str) -> None:
        """Remove ``path`` and everything under it; succeed if it does not exist."""
        ...


def check_path(path: str) -> str:
    """``path`` if it is absolute and normalized with no ``..``, else BackendPathError. Normalizing
    silently would hide a caller bug: ``/a/../b`` reaching a backend means validation was skipped."""
    if not path.startswith("/"):
        raise BackendPathError(f"path {path!r} is not absolute")
    if path != "/" and any(part in ("", ".", "..") for part in path.split("/")[1:]):
        raise BackendPathError(f"path {path!r} is not normalized or contains '..'")
    return path


class LocalBackend:
    """Serves cluster ``C``'s path ``P`` from ``{root}/C{P}``: the layout the FUSE stand-in serves, so
    a directory the controller creates here is what a stand-in FUSE mount of that cluster shows."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()

    def _cluster_dir(self, cluster_id: str) -> Path:
        if not _CLUSTER_ID.match(cluster_id):
            raise BackendPathError(f"cluster id {cluster_id!r} is not 8 lowercase hex digits")
        return self.root / cluster_id

    def _local(self, cluster_id: str, path: str) -> Path:
        base = self._cluster_dir(cluster_id)
        local = base / check_path(path).lstrip("/")
        # A symlink inside the data (a user can make one through FUSE) must not lead a remove or
        # mkdirs outside the cluster's directory: check where the parent really is.
        parent = local.parent.resolve() if local != base else base
        if parent != base.resolve() and base.resolve() not in parent.parents:
            raise BackendPathError(f"path {path!r} leaves cluster {cluster_id}'s directory")
        return local

    def exists(self, cluster_id: str, path: str) -> bool:
        return self._local(cluster_id, path).is_dir()

    def mkdirs(self, cluster_id: str, path: str) -> None:
        # exist_ok still raises FileExistsError when a non-directory is in the way: that is wanted.
        self._local(cluster_id, path).mkdir(parents=True, exist_ok=True)

    def remove(self, cluster_id: str, path: str) -> None:
        if check_path(path) == "/":
            raise BackendPathError("refusing to remove a cluster's root directory")
        local = self._local(cluster_id, path)
        if local.is_symlink() or local.is_file():
            local.unlink(missing_ok=True)  # the link itself, never what it points to
        elif local.is_dir():
            shutil.rmtree(local)
