"""The passthrough filesystem behind the ``curvine-fuse`` stand-in (see ``csi.standin.fusestandin``).

Every operation maps a FUSE path onto one backing directory. The class follows mfusepy's
``Operations`` protocol by duck typing instead of subclassing it: mfusepy is untyped and loads
libfuse when imported, and this way the filesystem stays importable (and testable) without either.
Errors are raised as ``OSError`` with the backing call's errno; mfusepy turns them into ``-errno``.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from typing import Any

# (uid, gid, pid) of the process making the current FUSE request.
ContextFn = Callable[[], tuple[int, int, int]]

# libfuse 3 encodes "set to now" / "leave alone" in utimens as tv_sec=0 and a tv_nsec sentinel; with
# use_ns, mfusepy folds that into tv_sec * 1e9 + tv_nsec, so the sentinel arrives as a bare number.
_UTIME_NOW = (1 << 30) - 1
_UTIME_OMIT = (1 << 30) - 2

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
    to the calling user so that a non-root pod can go on using what it created."""

    # Times in nanoseconds both ways (mfusepy's float seconds lose precision and are deprecated).
    use_ns = True

    def __init__(
        self, root: str, context: ContextFn | None = None, on_ready: Callable[[], None] | None = None
    ) -> None:
        self.root = os.path.realpath(root)
        self._context = context
        self._on_ready = on_ready
        self._chown_new = context is not None and os.geteuid() == 0

    def init(self, path: str) -> None:
        # libfuse calls init while answering the kernel's FUSE_INIT, after mount(2) returned: the mount
        # is in the mount table, and requests made from now on wait for this answer, then succeed.
        if self._on_ready is not None:
            self._on_ready()

    def _full(self, path: str) -> str:
        # The kernel hands over absolute, normalised paths ("/a/b"); no ".." can reach this point.
        return self.root + path if path != "/" else self.root

    def _own(self, full: str) -> None:
        if self._chown_new and self._context is not None:
            uid, gid, _pid = self._context()
            os.lchown(full, uid, gid)

    # --- metadata ---------------------------------------------------------------------------------

    def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
        st = os.fstat(fh) if fh is not None else os.lstat(self._full(path))
        attrs: dict[str, Any] = {key: getattr(st, key) for key in _STAT_KEYS}
        attrs["st_rdev"] = st.st_rdev
        attrs["st_blksize"] = st.st_blksize
        attrs["st_atime"] = st.st_atime_ns
        attrs["st_mtime"] = st.st_mtime_ns
        attrs["st_ctime"] = st.st_ctime_ns
        return attrs

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *os.listdir(self._full(path))]

    def readlink(self, path: str) -> str:
        return os.readlink(self._full(path))

    def statfs(self, path: str) -> dict[str, int]:
        sv = os.statvfs(self._full(path))
        return {key: int(getattr(sv, key)) for key in _STATVFS_KEYS}

    def chmod(self, path: str, mode: int) -> int:
        os.chmod(self._full(path), stat.S_IMODE(mode))
        return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        # mfusepy maps "leave unchanged" to -1, which is what os.chown takes too.
        os.chown(self._full(path), uid, gid, follow_symlinks=False)
        return 0

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
        full = self._full(path)
        if times is None:
            os.utime(full, None, follow_symlinks=False)
            return 0
        now = time.time_ns()
        current = os.lstat(full)
        atime = _resolve_time(times[0], now, current.st_atime_ns)
        mtime = _resolve_time(times[1], now, current.st_mtime_ns)
        os.utime(full, ns=(atime, mtime), follow_symlinks=False)
        return 0

    # --- namespace --------------------------------------------------------------------------------

    def mkdir(self, path: str, mode: int) -> int:
        full = self._full(path)
        os.mkdir(full, mode)
        self._own(full)
        return 0

    def rmdir(self, path: str) -> int:
        os.rmdir(self._full(path))
        return 0

    def unlink(self, path: str) -> int:
        os.unlink(self._full(path))
        return 0

    def rename(self, old: str, new: str) -> int:
        # mfusepy drops rename(2) flags (RENAME_NOREPLACE/EXCHANGE); plain replace is good enough here.
        os.rename(self._full(old), self._full(new))
        return 0

    def symlink(self, target: str, source: str) -> int:
        # mfusepy's order: ``target`` is the new link's path, ``source`` what it points at.
        full = self._full(target)
        os.symlink(source, full)
        self._own(full)
        return 0

    def link(self, target: str, source: str) -> int:
        os.link(self._full(source), self._full(target))
        return 0

    # --- files ------------------------------------------------------------------------------------

    def create(self, path: str, mode: int, flags: int) -> int:
        full = self._full(path)
        fd = os.open(full, flags | os.O_CREAT, stat.S_IMODE(mode))
        try:
            self._own(full)
        except OSError:
            os.close(fd)
            raise
        return fd

    def open(self, path: str, flags: int) -> int:
        return os.open(self._full(path), flags)

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        return os.pread(fh, size, offset)

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        return os.pwrite(fh, data, offset)

    def truncate(self, path: str, length: int, fh: int | None = None) -> int:
        if fh is not None:
            os.ftruncate(fh, length)
        else:
            os.truncate(self._full(path), length)
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
