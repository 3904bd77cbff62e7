"""FUSE paths resolved beneath the stand-in's served directory without following a symbolic link.

The served tree belongs to tenants, and so do its symlinks: a pod can make one naming any node path,
and a second mount of the same tree (another pod, another stand-in) can swap a directory or file
for one behind this mount's back, while libfuse goes on naming the old node by its path. The daemon
runs as root on the node, so a link it followed would reach another tenant's directory, or anything
else on the node. Hence every path is split into its parent directory, opened with no symlink in
any component, and its last name, which the operation then handles with ``*at()`` calls that do
not follow it either.

The served directory itself is resolved by name on every call, as everything under it: renamed
away, the mount's root answers ENOENT, as curvine-fuse's does for an fs-path gone from its cluster
(the node service reports such a mount Broken, and Ready again once it is back); swapped for a
symlink (a mount of a parent fs-path can do that), it answers ELOOP.

``openat2(2)`` with ``RESOLVE_NO_SYMLINKS`` (Linux 5.6+) opens the parent in one call. Where it is
missing (ENOSYS: an older kernel, or a seccomp profile older than the call) an ``O_PATH`` walk does the
same one component at a time. Either way a symlink on the way is ELOOP. No ``..`` can climb out:
paths that are not normalised (the kernel never sends one) are refused with EINVAL.

(The driver's ``csi.fuse.beneath`` solves a neighbouring problem, but the stand-in takes nothing from
the driver; see tests/unit/test_import_contract.py.)
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from types import TracebackType

# include/uapi/linux/openat2.h; the syscall number is the same on every architecture.
SYS_OPENAT2 = 437
RESOLVE_NO_SYMLINKS = 0x04  # implies RESOLVE_NO_MAGICLINKS
AT_FDCWD = -100
_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
# Built once rather than per call (ctypes' conversions are a good part of a call's cost); the kernel
# only reads them, so threads can share them.
_SYSCALL = ctypes.c_long(SYS_OPENAT2)
_HOW = _OpenHow(flags=_DIR_FLAGS, mode=0, resolve=RESOLVE_NO_SYMLINKS)
_HOW_SIZE = ctypes.c_size_t(ctypes.sizeof(_HOW))
_HOW_REF = ctypes.byref(_HOW)


def _openat2(directory: str) -> int:
    fd = _libc.syscall(_SYSCALL, AT_FDCWD, os.fsencode(directory), _HOW_REF, _HOW_SIZE)
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), directory)
    return int(fd)


def _walk(directory: str) -> int:
    """openat2's resolution, one component at a time from ``/``."""
    fd = os.open("/", _DIR_FLAGS)
    try:
        for name in directory.split("/")[1:]:
            if not name:  # "/" itself
                continue
            # O_NOFOLLOW with O_PATH opens a symlink itself instead of failing: look at what it is.
            child = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = child
            mode = os.fstat(fd).st_mode
            if stat.S_ISLNK(mode):
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), directory)
            if not stat.S_ISDIR(mode):
                raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), directory)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_directory(directory: str) -> int:
    try:
        return _openat2(directory)
    except OSError as exc:
        if exc.errno != errno.ENOSYS:
            raise
    return _walk(directory)


class Root:
    """The served directory, by its canonical name (no symlink in it, as ``os.path.realpath`` gives)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def parent(self, path: str) -> Parent:
        return Parent(self.path, path)


class Parent:
    """``with root.parent("/a/b/c") as at:`` ``at.fd`` is directory a/b beneath the root (an ``O_PATH``
    descriptor, closed on leaving), ``at.name`` is "c". The root itself is ``(root, ".")``."""

    __slots__ = ("fd", "name")

    def __init__(self, root: str, path: str) -> None:
        if path == "/":
            self.fd, self.name = _open_directory(root), "."
            return
        # "//", "/./" or "/../" anywhere (a name of "", "." or ".."), or a relative path.
        slashed = path + "/"
        if not path.startswith("/") or "//" in slashed or "/./" in slashed or "/../" in slashed:
            raise OSError(errno.EINVAL, "not a normalised path", path)
        head, _, self.name = path.rpartition("/")
        self.fd = _open_directory(root + head if root != "/" else head or "/")

    def __enter__(self) -> Parent:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        os.close(self.fd)
