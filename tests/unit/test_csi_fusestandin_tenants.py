"""Two tenants on one node, through the stand-in's real FUSE mounts (root and /dev/fuse needed): team-a's
pod, uid 1001 as team-b's pods are too (only their volumes keep them apart), must reach nothing of
team-b's directory on the node, however it arranges symlinks in its own volume.

Team-a's volume is mounted twice (a second pod or volume of the same directory, served by another
stand-in process): a swap made through one mount, a directory or a file replaced by a symlink to
team-b's directory, is not seen by the other's libfuse, which goes on naming the old node by its
path. Long cache timeouts (curvine-fuse's own default is one second; the stand-in's zero only turns
the same swap into a race) keep the kernel from looking again, so each attack is deterministic.

The data root is private to root, as the node's paths are to a pod: a symlink naming team-b's file
resolved by the pod itself (here, by the test process on the node as uid 1001) reaches nothing."""

from __future__ import annotations

import errno
import os
import pickle
import select
import signal
import stat
import subprocess
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.unit.fusestandins import running

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/dev/fuse"), reason="real FUSE mounts need root and /dev/fuse"
)

TENANT = 1001
PRIVATE = b"team-b private data"
LONG_CACHE = ["--entry-timeout-ms", "3600000", "--attr-timeout-ms", "3600000"]
CHILD_TIMEOUT = 30.0


@dataclass(frozen=True)
class Node:
    mount: Path  # team-a's volume (fs-path /team-a), as team-a's pod sees it
    again: Path  # the same directory, mounted by another stand-in
    theirs: Path  # team-b's directory on the node


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    with running(tmp_path_factory.mktemp("tenants")) as standins:
        a = standins.start(fs_path="/team-a", mnt=standins.world_reachable_dir(), extra=LONG_CACHE)
        again = standins.start(fs_path="/team-a", mnt=standins.world_reachable_dir(), extra=LONG_CACHE)
        theirs = a.backing.parent / "team-b"
        theirs.mkdir()
        for path in (a.backing, theirs):
            os.chown(path, TENANT, TENANT)
        yield Node(a.mnt, again.mnt, theirs)


@dataclass(frozen=True)
class Case:
    here: Path  # team-a's directory for this test, in its pod's mount
    again: Path  # the same, through the other mount
    theirs: Path  # team-b's directory for this test, on the node


@pytest.fixture
def case(node: Node, request: pytest.FixtureRequest) -> Case:
    """Team-a's ``d/`` and ``f``; team-b's ``private`` file, ``dir/`` and ``lnk`` -> private."""
    name = request.node.name.replace("/", "_")
    theirs = node.theirs / name
    theirs.mkdir()
    (theirs / "private").write_bytes(PRIVATE)
    (theirs / "dir").mkdir()
    (theirs / "lnk").symlink_to("private")
    for path in (theirs, theirs / "private", theirs / "dir", theirs / "lnk"):
        os.chown(path, TENANT, TENANT, follow_symlinks=False)
    here = node.mount / name

    def make() -> None:
        here.mkdir()
        (here / "d").mkdir()
        (here / "f").write_text("team-a's own")

    as_tenant(make)
    return Case(here, node.again / name, theirs)


def as_tenant(fn: Callable[[], object]) -> object:
    """What ``fn`` returns, or the OSError it raises, run in a child forked as uid and gid 1001 with no
    other groups: a process in team-a's pod."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(TENANT)
            os.setuid(TENANT)
            try:
                outcome: object = ("returned", fn())
            except OSError as exc:
                outcome = ("raised", OSError(exc.errno, exc.strerror))
            except BaseException:
                outcome = ("crashed", traceback.format_exc())
            with os.fdopen(write_end, "wb") as out:
                pickle.dump(outcome, out)
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        if not select.select([read_end], [], [], CHILD_TIMEOUT)[0]:
            os.kill(pid, signal.SIGKILL)
            pytest.fail(f"the tenant's process did not finish within {CHILD_TIMEOUT}s")
        with os.fdopen(read_end, "rb") as got:
            data = got.read()
    finally:
        os.waitpid(pid, 0)
    kind, value = pickle.loads(data)
    if kind == "crashed":
        pytest.fail(f"the tenant's process failed:\n{value}")
    return value


def snapshot(directory: Path) -> dict[str, tuple[object, ...]]:
    """Team-b's entries with all a tenant could change (atime aside) and their contents."""
    seen: dict[str, tuple[object, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(directory):
        for name in [".", *dirnames, *filenames]:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            content = Path(path).read_bytes() if stat.S_ISREG(st.st_mode) else None
            seen[os.path.relpath(path, directory)] = (
                st.st_mode,
                st.st_uid,
                st.st_nlink,
                st.st_size,
                st.st_mtime_ns,
                st.st_ctime_ns,
                sorted(dirnames) if name == "." else None,
                content,
            )
    return seen


def read(path: str | Path, dir_fd: int | None = None, flags: int = os.O_RDONLY) -> bytes:
    fd = os.open(path, flags, dir_fd=dir_fd)
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)


def append(path: str | Path) -> int:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        return os.write(fd, b" | tampered by team-a")
    finally:
        os.close(fd)


def attempt(action: Callable[[], object]) -> object:
    try:
        return action()
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, exc.errno)


def swap(case: Case, name: str, target: Path) -> None:
    """Through team-a's other mount: ``name`` moved aside and a symlink to ``target`` in its place."""
    os.rename(case.again / name, case.again / f"{name}-was")
    os.symlink(target, case.again / name)


def refused(outcome: object, err: int, case: Case, before: dict[str, tuple[object, ...]]) -> None:
    """The attack got an error, not team-b's data; team-b's directory is as it was (even an attack
    that errs may have changed it first); the error is ``err``, the one Linux gives."""
    assert isinstance(outcome, OSError), f"uid {TENANT} in team-a's pod got {outcome!r} from team-b"
    assert snapshot(case.theirs) == before, f"team-b's directory changed, though team-a got {outcome!r}"
    assert outcome.errno == err, outcome


# --- the report: a symlink in one's own volume, hard-linked -------------------------------


@pytest.mark.parametrize("absolute", [True, False], ids=["absolute", "relative"])
def test_a_hard_link_of_a_symlink_to_another_tenants_file_is_a_symlink(case: Case, absolute: bool) -> None:
    target = str(case.theirs / "private") if absolute else f"../../team-b/{case.theirs.name}/private"
    before = snapshot(case.theirs)

    def attack() -> object:
        os.symlink(target, case.here / "link")
        os.link(case.here / "link", case.here / "h", follow_symlinks=False)  # ln -P link h
        assert os.readlink(case.here / "h") == target
        return attempt(lambda: read(case.here / "h")), attempt(lambda: append(case.here / "h"))

    # h is the symlink: resolved by the pod itself, it names a node path the pod cannot reach
    # (the data root is private) or, relative, a path beside the mount that does not exist.
    unreachable = "EACCES" if absolute else "ENOENT"
    assert as_tenant(attack) == (unreachable, unreachable)
    assert snapshot(case.theirs) == before


# --- a directory of team-a's swapped for a symlink to team-b's while team-a holds it open ----------


def steal(move: Callable[..., None], dfd: int, here: Path) -> bytes:
    """Team-b's file brought into team-a's directory by ``move`` (link or rename), and read there."""
    move("private", here / "stolen", src_dir_fd=dfd)
    return read(here / "stolen")


# Each attack starts from ``d``, team-a's directory held open (O_PATH) before the swap, and works
# beneath it, where team-b's entries now seem to be: ``dfd`` is that descriptor, ``here`` team-a's dir.
BENEATH_A_SWAPPED_DIRECTORY: dict[str, Callable[[int, Path], object]] = {
    "stat": lambda dfd, here: os.stat("private", dir_fd=dfd).st_size,
    "read": lambda dfd, here: read("private", dir_fd=dfd),
    "write": lambda dfd, here: os.write(os.open("private", os.O_WRONLY | os.O_APPEND, dir_fd=dfd), b"x"),
    "truncate": lambda dfd, here: os.truncate(f"/proc/self/fd/{dfd}/private", 0),
    "readlink": lambda dfd, here: os.readlink("lnk", dir_fd=dfd),
    "chmod": lambda dfd, here: os.chmod("private", 0o666, dir_fd=dfd),
    "chown": lambda dfd, here: os.chown("private", TENANT, TENANT, dir_fd=dfd),
    "utime": lambda dfd, here: os.utime("private", ns=(1, 1), dir_fd=dfd),
    "unlink": lambda dfd, here: os.unlink("private", dir_fd=dfd),
    "rmdir": lambda dfd, here: os.rmdir("dir", dir_fd=dfd),
    "mkdir": lambda dfd, here: os.mkdir("new", dir_fd=dfd),
    "create": lambda dfd, here: os.open("new", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=dfd),
    "symlink": lambda dfd, here: os.symlink("anything", "new", dir_fd=dfd),
    "link-out": lambda dfd, here: steal(os.link, dfd, here),
    "link-in": lambda dfd, here: os.link(here / "f", "new", dst_dir_fd=dfd),
    "rename-out": lambda dfd, here: steal(os.rename, dfd, here),
    "rename-in": lambda dfd, here: os.rename(here / "f", "new", dst_dir_fd=dfd),
}


@pytest.mark.parametrize("op", BENEATH_A_SWAPPED_DIRECTORY)
def test_nothing_beneath_a_directory_swapped_for_a_symlink_reaches_the_other_tenant(
    case: Case, op: str
) -> None:
    before = snapshot(case.theirs)

    def attack() -> object:
        dfd = os.open(case.here / "d", os.O_PATH | os.O_DIRECTORY)
        swap(case, "d", case.theirs)
        return BENEATH_A_SWAPPED_DIRECTORY[op](dfd, case.here)

    refused(as_tenant(attack), errno.ELOOP, case, before)


def test_listing_a_directory_swapped_for_a_symlink_lists_nothing_of_the_other_tenant(case: Case) -> None:
    before = snapshot(case.theirs)

    def attack() -> object:
        fd = os.open(case.here / "d", os.O_RDONLY | os.O_DIRECTORY)
        swap(case, "d", case.theirs)
        return os.listdir(fd)

    refused(as_tenant(attack), errno.ENOTDIR, case, before)


def test_statfs_of_a_directory_swapped_for_a_symlink_is_team_as_filesystems(case: Case, node: Node) -> None:
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(case.theirs)], check=True)
    try:

        def attack() -> object:
            dfd = os.open(case.here / "d", os.O_PATH | os.O_DIRECTORY)
            swap(case, "d", case.theirs)
            return os.statvfs(dfd).f_blocks

        assert as_tenant(attack) == os.statvfs(node.mount).f_blocks != os.statvfs(case.theirs).f_blocks
    finally:
        subprocess.run(["umount", "-l", str(case.theirs)], check=True)


# --- a file of team-a's swapped for a symlink to team-b's while team-a holds it open --------------

ON_A_SWAPPED_FILE: dict[str, tuple[int, Callable[[int], object], int]] = {
    # Linux changes no symlink's mode (fchmodat(AT_SYMLINK_NOFOLLOW) answers EOPNOTSUPP).
    "fchmod": (os.O_RDONLY, lambda fd: os.fchmod(fd, 0o666), errno.EOPNOTSUPP),
    "ftruncate": (os.O_WRONLY, lambda fd: os.ftruncate(fd, 0), errno.ELOOP),
    # Opening the held file again through /proc reaches the daemon as an open of its old path.
    "reopen": (os.O_PATH, lambda fd: read(f"/proc/self/fd/{fd}", flags=os.O_RDWR), errno.ELOOP),
}


@pytest.mark.parametrize("op", ON_A_SWAPPED_FILE)
def test_nothing_done_to_a_file_swapped_for_a_symlink_reaches_the_other_tenant(case: Case, op: str) -> None:
    flags, action, err = ON_A_SWAPPED_FILE[op]
    before = snapshot(case.theirs)

    def attack() -> object:
        fd = os.open(case.here / "f", flags)
        swap(case, "f", case.theirs / "private")
        return action(fd)

    refused(as_tenant(attack), err, case, before)
