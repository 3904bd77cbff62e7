"""The kernel's mount table and the mount operations the node service needs (bind, read-only bind,
unmount), made as system calls (mount(2), umount2(2), and open_tree/mount_setattr/move_mount for a
read-only bind): no process, no shell."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import select
from dataclasses import dataclass
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")


@dataclass(frozen=True)
class MountInfo:
    mount_id: int
    parent_id: int
    root: str
    mount_point: str
    options: tuple[str, ...]
    fs_type: str
    source: str
    # major:minor of the mounted filesystem: a mount id is reused once its mount is gone, but a
    # superblock's device number stays taken while any bind of it lives.
    device: str = ""


def _unescape(field: str) -> str:
    # The kernel writes space, tab, newline and backslash in paths as 3-digit octal escapes.
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 3 < len(field) and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text: str) -> list[MountInfo]:
    mounts = []
    for line in text.splitlines():
        if not line:
            continue
        left, _, right = line.partition(" - ")
        fields, tail = left.split(" "), right.split(" ")
        mounts.append(
            MountInfo(
                mount_id=int(fields[0]),
                parent_id=int(fields[1]),
                root=_unescape(fields[3]),
                mount_point=_unescape(fields[4]),
                options=tuple(fields[5].split(",")),
                fs_type=tail[0],
                source=_unescape(tail[1]) if len(tail) > 1 else "",
                device=fields[2],
            )
        )
    return mounts


def mount_table() -> list[MountInfo]:
    return parse_mountinfo(MOUNTINFO.read_text())


def mounted_at(path: str | os.PathLike[str], table: list[MountInfo] | None = None) -> list[MountInfo]:
    """Every mount whose mount point is ``path`` (bind mounts can stack), innermost last. ``path``
    itself is never looked up: a lookup of a FUSE mount (or a bind of one) waits on its server, which
    may not answer. The directories above it are resolved, as the kernel lists mount points; a last
    component that is a symbolic link is not followed."""
    text = os.fspath(path)
    parent, name = os.path.split(os.path.abspath(text))
    target = os.path.join(os.path.realpath(parent), name)
    return [m for m in (table if table is not None else mount_table()) if m.mount_point in (text, target)]


class TableChanges:
    """The mount table's changes as the kernel signals them, to wait for a mount without polling
    on a timer: /proc/self/mountinfo polls POLLPRI once this namespace's table has changed since
    the file was opened or last polled (fs/proc_namespace.c: mounts_poll). Open it before what
    makes the mount starts, so a change between a look at the table and the wait is not missed.
    Any mount in the namespace wakes it: look at the table again after each."""

    def __init__(self) -> None:
        self._fd = os.open(MOUNTINFO, os.O_RDONLY | os.O_CLOEXEC)
        self._poll = select.poll()
        self._poll.register(self._fd, select.POLLPRI)

    def wait(self, timeout: float) -> bool:
        """Block until the table changes (True) or ``timeout`` seconds pass (False)."""
        return any(events & select.POLLPRI for _, events in self._poll.poll(timeout * 1000))

    def close(self) -> None:
        os.close(self._fd)

    def __enter__(self) -> TableChanges:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


# The two below look ``path`` up, which waits on a FUSE server that does not answer: call them in a
# thread of the mount key's own (csi/keyedthreads.py), never on the event loop.


def is_broken(path: str | os.PathLike[str]) -> bool:
    """A FUSE mount whose server died answers ENOTCONN (or EIO) to everything."""
    try:
        os.stat(path)
    except OSError as e:
        return e.errno in (errno.ENOTCONN, errno.EIO)
    return False


def root_gone(path: str | os.PathLike[str]) -> bool:
    """A mount whose own root answers ENOENT: a FUSE alive and mounted whose directory in the cache
    is gone (a Curvine master restarted without it). Not broken (no remount brings it back), not
    whole."""
    try:
        os.stat(path)
    except OSError as e:
        return e.errno == errno.ENOENT and bool(mounted_at(path))
    return False


class MountError(Exception):
    pass


# The syscalls themselves rather than util-linux's mount(8): a process per bind cost most of a
# warm NodePublish (see make bench), and these calls need none of mount(8)'s option parsing.
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.syscall.restype = ctypes.c_long
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_REMOUNT = 32
MS_BIND = 4096
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
# statvfs's ST_* flags have the values of mount(2)'s MS_* ones.
KEPT_FLAGS = os.ST_NOSUID | os.ST_NODEV | os.ST_NOEXEC | os.ST_NOATIME | os.ST_NODIRATIME | os.ST_RELATIME
# The mount API of Linux 5.12 (include/uapi/linux/mount.h); the numbers are the same on every
# architecture.
SYS_OPEN_TREE, SYS_MOVE_MOUNT, SYS_MOUNT_SETATTR = 428, 429, 442
OPEN_TREE_CLONE = 1
AT_FDCWD = -100
AT_EMPTY_PATH = 0x1000
MOVE_MOUNT_F_EMPTY_PATH = 0x4
MOUNT_ATTR_RDONLY = 0x1


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise MountError(f"{what}: {os.strerror(err)}")


def bind(source: str | os.PathLike[str], target: str | os.PathLike[str], readonly: bool = False) -> None:
    """Bind ``source`` at ``target``. Read-only, it is read-only in every mount namespace that gets a
    copy of it too (kubelet's, and through it the pod's): the mount is made read-only before it is
    attached. A remount's read-only flag would stay in the namespace that remounted: bound from the
    node service's container, kubelet's copy of the target was read-write."""
    if readonly:
        _bind_read_only(source, target)
        return
    src, tgt = os.fsencode(source), os.fsencode(target)
    _check(_libc.mount(src, tgt, None, MS_BIND, None), f"mount --bind {source} {target}")


def _bind_read_only(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """A clone of the mount at ``source``, detached (open_tree), made read-only (mount_setattr, which
    keeps its other flags: nosuid, nodev...), then attached at ``target`` (move_mount): its copies in
    other namespaces are clones of it, read-only from the start."""
    what = f"mount --bind -o ro {source} {target}"
    tree = _libc.syscall(SYS_OPEN_TREE, AT_FDCWD, os.fsencode(source), OPEN_TREE_CLONE | os.O_CLOEXEC)
    if tree < 0:
        if ctypes.get_errno() == errno.ENOSYS:
            _bind_by_remount(source, target)  # a kernel before 5.12
            return
        _check(-1, what)
    try:
        attr = _MountAttr(attr_set=MOUNT_ATTR_RDONLY)
        _check(
            _libc.syscall(
                SYS_MOUNT_SETATTR, tree, b"", AT_EMPTY_PATH, ctypes.byref(attr), ctypes.sizeof(attr)
            ),
            what,
        )
        tgt = os.fsencode(target)
        _check(_libc.syscall(SYS_MOVE_MOUNT, tree, b"", AT_FDCWD, tgt, MOVE_MOUNT_F_EMPTY_PATH), what)
    finally:
        os.close(tree)  # a tree never attached goes with its descriptor


def _bind_by_remount(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """The same without the new mount API: bound first at a scratch point beside ``source`` and
    remounted read-only there (keeping the flags the bind got from its source, nosuid, nodev...:
    a bind remount sets exactly the flags it is given, and in a user namespace, where they are
    locked, it is refused without them), then bound from there: a bind copies the read-only flag of
    the mount it is made from, to ``target`` and to each copy of it."""
    scratch = f"{os.fspath(source).rstrip('/')}.ro-bind"
    os.makedirs(scratch, exist_ok=True)
    try:
        _check(
            _libc.mount(os.fsencode(source), scratch.encode(), None, MS_BIND, None),
            f"mount --bind {source} {scratch}",
        )
        try:
            kept = os.statvfs(scratch).f_flag & KEPT_FLAGS
            flags = MS_REMOUNT | MS_BIND | MS_RDONLY | kept
            _check(
                _libc.mount(None, scratch.encode(), None, flags, None), f"mount -o remount,bind,ro {scratch}"
            )
            _check(
                _libc.mount(scratch.encode(), os.fsencode(target), None, MS_BIND, None),
                f"mount --bind {scratch} {target}",
            )
        finally:
            unmount(scratch, lazy=True)
    finally:
        with contextlib.suppress(OSError):
            os.rmdir(scratch)


def make_private(target: str | os.PathLike[str]) -> None:
    """The mount at ``target`` leaves its peer group and sends and receives no mount events."""
    _check(_libc.mount(None, os.fsencode(target), None, MS_PRIVATE, None), f"mount --make-private {target}")


def unmount(target: str | os.PathLike[str], lazy: bool = False) -> None:
    """Unmount ``target``; ``lazy`` detaches a broken (ENOTCONN) or busy mount from the tree."""
    flags = MNT_DETACH if lazy else 0
    _check(_libc.umount2(os.fsencode(target), flags), f"umount {'-l ' if lazy else ''}{target}")
