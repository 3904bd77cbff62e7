"""The passthrough filesystem behind the ``curvine-fuse`` stand-in (see ``csi.standin.fusestandin``).

Every operation maps a FUSE path onto one backing directory. The class follows mfusepy's
``Operations`` protocol by duck typing instead of subclassing it: mfusepy is untyped and loads
libfuse when imported, and this way the filesystem stays importable (and testable) without either.
Errors are raised as ``OSError`` with the backing call's errno; mfusepy turns them into ``-errno``.

No operation follows a symbolic link on the node. The tree is the tenants', symlinks included, and
the daemon is root on the node: a link followed there, made in a pod's volume or swapped in for a
directory or file through another mount of the same tree, would hand the pod another tenant's files
or anything else of the node's (issue 27: a pod read and rewrote another tenant's file that way).
The kernel resolves a pod's symlinks in the pod's own mount namespace before a request gets here;
the daemon has no reason to resolve one, so it never does. Each path's parent is opened beneath
the root with no symlink on the way (``csi.standin.nofollow``), and the last name is acted on
itself with ``*at()`` calls: ``O_NOFOLLOW`` opens, ``linkat`` without ``AT_SYMLINK_FOLLOW``,
``lchown`` and ``utimensat`` of the link. What Linux cannot do to a symlink itself answers as Linux
does: chmod is EOPNOTSUPP, an open or a truncate ELOOP, a listing ENOTDIR.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable
from typing import Any

from csi.standin.nofollow import Parent, Root

# (uid, gid, pid) of the process making the current FUSE request.
ContextFn = Callable[[], tuple[int, int, int]]

# libfuse 3 encodes "set to now" / "leave alone" in utimens as tv_sec=0 and a tv_nsec sentinel; with
# use_ns, mfusepy folds that into tv_sec * 1e9 + tv_nsec, so the sentinel arrives as a bare number.
_UTIME_NOW = (1 << 30) - 1
_UTIME_OMIT = (1 << 30) - 2

# Descriptors the daemon opens for itself: never a symlink's target, never inherited.
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC

_STAT_KEYS = ("st_mode", "st_ino", "st_dev", "st_nlink", "st_uid", "st_gid", "st_size", "st_blocks")
_STATVFS_KEYS = (
    "f_bsize",
    "f_frsize",
    "f_blocks",
    "f_bfree",
    "f_bavail",
    "f_files",
    "f_ffree",
    "f_favail",
    "f_flag",
    "f_namemax",
)


class Passthrough:
    """Serves ``root`` as it is. The daemon runs as root and the mount uses ``default_permissions``,
    so the kernel checks access against the backing files' owners and modes; new entries are handed
    to the calling user so that a non-root pod can go on using what it created. Every path is
    resolved beneath ``root`` by ``csi.standin.nofollow``: the parent without a symlink on the way,
    the last name acted on itself (a symlink there is the link, never what it names)."""

    # Times in nanoseconds both ways (mfusepy's float seconds lose precision and are deprecated).
    use_ns = True

    def __init__(
        self, root: str, context: ContextFn | None = None, on_ready: Callable[[], None] | None = None
    ) -> None:
        self.root = os.path.realpath(root)
        self._tree = Root(self.root)
        self._context = context
        self._on_ready = on_ready
        self._chown_new = context is not None and os.geteuid() == 0

    def init(self, path: str) -> None:
        # libfuse calls init while answering the kernel's FUSE_INIT, after mount(2) returned: the mount
        # is in the mount table, and requests made from now on wait for this answer, then succeed.
        if self._on_ready is not None:
            self._on_ready()

    def _owner(self) -> tuple[int, int] | None:
        """Who a new entry is handed to: the caller, when the daemon can give entries away."""
        if self._chown_new and self._context is not None:
            uid, gid, _pid = self._context()
            return uid, gid
        return None

    def _own(self, at: Parent) -> None:
        owner = self._owner()
        if owner is not None:
            os.chown(at.name, *owner, dir_fd=at.fd, follow_symlinks=False)

    # --- metadata ---------------------------------------------------------------------------------

    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        if fh is not None:
            st = os.fstat(fh)
        else:
            with self._tree.parent(path) as at:
                st = os.stat(at.name, dir_fd=at.fd, follow_symlinks=False)
        attrs: dict[str, Any] = {key: getattr(st, key) for key in _STAT_KEYS}
        attrs["st_rdev"] = st.st_rdev
        attrs["st_blksize"] = st.st_blksize
        attrs["st_atime"] = st.st_atime_ns
        attrs["st_mtime"] = st.st_mtime_ns
        attrs["st_ctime"] = st.st_ctime_ns
        return attrs

    def readdir(self, path: str, fh: int) -> list[str]:
        with self._tree.parent(path) as at:
            fd = os.open(at.name, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=at.fd)
        try:
            return [".", "..", *os.listdir(fd)]
        finally:
            os.close(fd)

    def readlink(self, path: str) -> str:
        with self._tree.parent(path) as at:
            return os.readlink(at.name, dir_fd=at.fd)

    def statfs(self, path: str) -> dict[str, int]:
        # Of the filesystem holding the entry itself: a symlink's own, not that of what it names.
        with self._tree.parent(path) as at:
            fd = os.open(at.name, os.O_PATH | _NOFOLLOW, dir_fd=at.fd)
        try:
            sv = os.statvfs(fd)
        finally:
            os.close(fd)
        return {key: int(getattr(sv, key)) for key in _STATVFS_KEYS}

    def chmod(self, path: str, mode: int) -> int:
        with self._tree.parent(path) as at:
            fd = os.open(at.name, os.O_PATH | _NOFOLLOW, dir_fd=at.fd)
        try:
            # Linux has no mode for a symlink; fchmodat(AT_SYMLINK_NOFOLLOW) answers this errno.
            if stat.S_ISLNK(os.fstat(fd).st_mode):
                raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP), path)
            # chmod(2) has no descriptor form for O_PATH; /proc's link names exactly the opened
            # entry and is not resolved again by name.
            os.chmod(f"/proc/self/fd/{fd}", stat.S_IMODE(mode))
        finally:
            os.close(fd)
        return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        # mfusepy maps "leave unchanged" to -1, which is what os.chown takes too.
        with self._tree.parent(path) as at:
            os.chown(at.name, uid, gid, dir_fd=at.fd, follow_symlinks=False)
        return 0

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
        with self._tree.parent(path) as at:
            if times is None:
                os.utime(at.name, None, dir_fd=at.fd, follow_symlinks=False)
                return 0
            now = time.time_ns()
            current = os.stat(at.name, dir_fd=at.fd, follow_symlinks=False)
            atime = _resolve_time(times[0], now, current.st_atime_ns)
            mtime = _resolve_time(times[1], now, current.st_mtime_ns)
            os.utime(at.name, ns=(atime, mtime), dir_fd=at.fd, follow_symlinks=False)
        return 0

    # --- namespace --------------------------------------------------------------------------------

    def mkdir(self, path: str, mode: int) -> int:
        with self._tree.parent(path) as at:
            os.mkdir(at.name, mode, dir_fd=at.fd)
            self._own(at)
        return 0

    def rmdir(self, path: str) -> int:
        with self._tree.parent(path) as at:
            os.rmdir(at.name, dir_fd=at.fd)
        return 0

    def unlink(self, path: str) -> int:
        with self._tree.parent(path) as at:
            os.unlink(at.name, dir_fd=at.fd)
        return 0

    def rename(self, old: str, new: str) -> int:
        # mfusepy drops rename(2) flags (RENAME_NOREPLACE/EXCHANGE); plain replace is good enough here.
        with self._tree.parent(old) as src, self._tree.parent(new) as dst:
            os.rename(src.name, dst.name, src_dir_fd=src.fd, dst_dir_fd=dst.fd)
        return 0

    def symlink(self, target: str, source: str) -> int:
        # mfusepy's order: ``target`` is the new link's path, ``source`` what it points at.
        with self._tree.parent(target) as at:
            os.symlink(source, at.name, dir_fd=at.fd)
            self._own(at)
        return 0

    def link(self, target: str, source: str) -> int:
        # ``ln -P``: the new name is for ``source`` itself, a symlink included. From Python 3.14 on,
        # os.link follows one by default (linkat with AT_SYMLINK_FOLLOW; before, Linux's link(2)
        # did not), so say so.
        with self._tree.parent(source) as src, self._tree.parent(target) as dst:
            os.link(src.name, dst.name, src_dir_fd=src.fd, dst_dir_fd=dst.fd, follow_symlinks=False)
        return 0

    # --- files ------------------------------------------------------------------------------------

    def create(self, path: str, mode: int, flags: int) -> int:
        with self._tree.parent(path) as at:
            fd = os.open(at.name, flags | os.O_CREAT | _NOFOLLOW, stat.S_IMODE(mode), dir_fd=at.fd)
        try:
            owner = self._owner()
            if owner is not None:
                os.fchown(fd, *owner)
        except OSError:
            os.close(fd)
            raise
        return fd

    def open(self, path: str, flags: int) -> int:
        with self._tree.parent(path) as at:
            return os.open(at.name, flags | _NOFOLLOW, dir_fd=at.fd)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        return os.pread(fh, size, offset)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        return os.pwrite(fh, data, offset)

    def truncate(self, path: str, length: int, fh: int | None = None) -> int:
        if fh is not None:
            os.ftruncate(fh, length)
            return 0
        # truncate(2) has no form that leaves a last symlink alone; a descriptor opened without
        # following does (O_NONBLOCK: a FIFO answers at once instead of waiting for a reader).
        with self._tree.parent(path) as at:
            fd = os.open(at.name, os.O_WRONLY | os.O_NONBLOCK | _NOFOLLOW, dir_fd=at.fd)
        try:
            os.ftruncate(fd, length)
        finally:
            os.close(fd)
        return 0

    def flush(self, path: str, fh: int) -> int:
        # flush runs on every close(2) of a descriptor sharing this handle; closing a duplicate gives
        # the backing filesystem the same close-time signal (and error report) without losing ``fh``.
        os.close(os.dup(fh))
        return 0

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        if datasync:
            os.fdatasync(fh)
        else:
            os.fsync(fh)
        return 0

    def release(self, path: str, fh: int) -> int:
        os.close(fh)
        return 0


def _resolve_time(value: int, now: int, current: int) -> int:
    if value == _UTIME_NOW:
        return now
    if value == _UTIME_OMIT:
        return current
    return value
