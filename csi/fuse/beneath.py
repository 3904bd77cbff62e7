"""Opening a volume's directory beneath its FUSE mount without following symbolic links.

The cache's contents are the tenants': anyone who can write to a volume (or who runs the cache) can
put a symlink where a volume's directory should be. mount(2) follows symlinks, so binding
``mnt-path + sub-path`` by name could bind whatever the link names on the host (kubelet's pods
directory with every pod's tokens, the driver's state, ``/dev``) into a pod. Instead the directory
is opened as an ``O_PATH`` descriptor, resolved inside the FUSE mount only, and the bind is made
from that descriptor (``/proc/self/fd/N`` names exactly the opened directory; mount(2) does not
resolve it again by name).

Resolution refuses a symlink in any component (not only the last), ``..``, magic links and any
crossing into another mount (``RESOLVE_NO_XDEV``: the FUSE mount's root is the starting point, so
everything beneath it must be the FUSE filesystem itself). ``openat2(2)`` does all of this in the
kernel (Linux 5.6+); where it is missing (ENOSYS) an ``O_PATH`` walk does the same one component at
a time: ``O_NOFOLLOW`` on each, a symlink refused, the mount id compared with the root's.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

# include/uapi/linux/openat2.h; the syscall number is the same on every architecture.
SYS_OPENAT2 = 437
RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
_RESOLVE = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV
_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class UnsafePath(Exception):
    """``relative`` cannot be opened safely beneath ``root``; ``reason`` says why in words."""

    def __init__(self, root: str, relative: str, err: int) -> None:
        self.root, self.relative, self.errno = root, relative, err
        self.path = os.path.join(root, relative) if relative else root
        self.reason = _REASONS.get(err) or os.strerror(err)
        super().__init__(f"{self.path} {self.reason}")


_REASONS = {
    errno.ELOOP: "is a symbolic link or has one on its way",
    errno.EXDEV: "leaves the FUSE mount (another mount, or outside it)",
    errno.ENOENT: "does not exist",
    errno.ENOTDIR: "is not a directory",
}


def _openat2(dirfd: int, relative: str) -> int:
    how = _OpenHow(flags=_DIR_FLAGS, mode=0, resolve=_RESOLVE)
    fd = _libc.syscall(SYS_OPENAT2, dirfd, os.fsencode(relative), ctypes.byref(how), ctypes.sizeof(how))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return int(fd)


def _mount_id(fd: int) -> int:
    for line in Path(f"/proc/self/fdinfo/{fd}").read_text().splitlines():
        key, _, value = line.partition(":")
        if key == "mnt_id":
            return int(value)
    raise OSError(errno.ENOSYS, "no mnt_id in fdinfo")


def _walk(dirfd: int, relative: str) -> int:
    """openat2's checks, one component at a time (kernels before 5.6)."""
    mount = _mount_id(dirfd)
    fd = os.dup(dirfd)
    try:
        for name in relative.split("/"):
            if name in ("", "."):
                continue
            # O_NOFOLLOW with O_PATH opens a symlink itself instead of failing: look at what it is.
            child = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = child
            mode = os.fstat(fd).st_mode
            if stat.S_ISLNK(mode):
                raise OSError(errno.ELOOP, "a symbolic link")
            if not stat.S_ISDIR(mode):
                raise OSError(errno.ENOTDIR, "not a directory")
            if _mount_id(fd) != mount:
                raise OSError(errno.EXDEV, "another mount")
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_beneath(root: str, relative: str) -> int:
    """An ``O_PATH`` descriptor of directory ``relative`` (slash-separated, leading slash allowed)
    beneath directory ``root``, or UnsafePath. The caller closes it."""
    relative = relative.strip("/")
    if ".." in relative.split("/"):
        # Never needed (cache paths are normalised without it), so refused even where it would stay
        # beneath: both resolutions then answer alike.
        raise UnsafePath(root, relative, errno.EXDEV)
    try:
        dirfd = os.open(root, _DIR_FLAGS)
    except OSError as err:
        raise UnsafePath(root, "", err.errno or errno.EIO) from None
    try:
        if not relative:
            return os.dup(dirfd)
        try:
            return _openat2(dirfd, relative)
        except OSError as err:
            if err.errno != errno.ENOSYS:
                raise
        return _walk(dirfd, relative)
    except OSError as err:
        raise UnsafePath(root, relative, err.errno or errno.EIO) from None
    finally:
        os.close(dirfd)


@contextlib.contextmanager
def opened_beneath(root: str, relative: str) -> Iterator[str]:
    """``open_beneath`` as a path mount(2) can take: ``/proc/self/fd/N``, valid inside the block."""
    fd = open_beneath(root, relative)
    try:
        yield fd_path(fd)
    finally:
        os.close(fd)


def fd_path(fd: int) -> str:
    return f"/proc/self/fd/{fd}"
