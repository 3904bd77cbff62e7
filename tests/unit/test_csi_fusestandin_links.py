"""The stand-in's filesystem follows no symbolic link on the node (csi/standin/fusestandin_fs.py), each
operation called directly on a real tree: a directory outside the served root stands for another
tenant's backing directory, reached through a symlink in a parent component (absolute, or relative
with ``..``) or as the last component. Whatever the operation, nothing outside changes, nothing of it
is answered, and a symlink that must be acted on (lstat, readlink, unlink, lchown, rename, link) is
the link itself. With openat2 and with the component walk kept for kernels without it."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from csi.standin import nofollow
from csi.standin.fusestandin_fs import Passthrough

Snapshot = dict[str, tuple[object, ...]]


def no_openat2(directory: str) -> int:
    raise OSError(errno.ENOSYS, "openat2 is not implemented")


@pytest.fixture(params=["openat2", "walk"])
def resolver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "walk":
        monkeypatch.setattr(nofollow, "_openat2", no_openat2)
    return str(request.param)


@dataclass
class Tree:
    base: Path
    root: Path  # served
    outside: Path  # another tenant's directory on the node
    fs: Passthrough

    def snapshot(self) -> Snapshot:
        """Every entry under base with what an operation could change (atime aside: reads change it)."""
        seen: Snapshot = {}
        for dirpath, dirnames, filenames in os.walk(self.base):
            for name in [*dirnames, *filenames]:
                path = os.path.join(dirpath, name)
                st = os.lstat(path)
                if stat.S_ISLNK(st.st_mode):
                    content: object = os.readlink(path)
                elif stat.S_ISREG(st.st_mode):
                    content = Path(path).read_bytes()
                else:
                    content = None
                seen[os.path.relpath(path, self.base)] = (
                    st.st_mode,
                    st.st_uid,
                    st.st_gid,
                    st.st_nlink,
                    st.st_ino,
                    st.st_mtime_ns,
                    st.st_ctime_ns,
                    content,
                )
        return seen


@pytest.fixture
def tree(tmp_path: Path, resolver: str) -> Tree:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "a").mkdir(parents=True)
    (root / "a" / "f").write_text("mine")
    outside.mkdir()
    (outside / "secret").write_text("theirs")
    (outside / "dir").mkdir()
    (outside / "lnk").symlink_to("secret")
    (root / "out").symlink_to(outside)  # an absolute node path
    (root / "a" / "rel").symlink_to("../../outside")  # relative, climbing out of the root on the node
    (root / "a" / "tosecret").symlink_to(outside / "secret")
    (root / "a" / "todir").symlink_to(outside / "dir")
    (root / "a" / "dangling").symlink_to(outside / "new")
    return Tree(tmp_path, root, outside, Passthrough(str(root)))


def raises_errno(err: int) -> pytest.RaisesExc[OSError]:
    return pytest.raises(OSError, match=rf"^\[Errno {err}\] ")


def closed(fd: int) -> None:
    os.close(fd)


# Each operation with a parent component that leads out of the root (``{v}``); the arguments are
# mfusepy's (link and symlink take the new entry first).
THROUGH_A_PARENT: dict[str, Callable[[Passthrough, str], object]] = {
    "getattr": lambda fs, v: fs.getattr(f"{v}/secret"),
    "readdir": lambda fs, v: fs.readdir(f"{v}/dir", 0),
    "readlink": lambda fs, v: fs.readlink(f"{v}/lnk"),
    "statfs": lambda fs, v: fs.statfs(f"{v}/dir"),
    "chmod": lambda fs, v: fs.chmod(f"{v}/secret", 0o100777),
    "chown": lambda fs, v: fs.chown(f"{v}/secret", 1234, 1234),
    "utimens": lambda fs, v: fs.utimens(f"{v}/secret", (1, 2)),
    "utimens-now": lambda fs, v: fs.utimens(f"{v}/secret"),
    "mkdir": lambda fs, v: fs.mkdir(f"{v}/new", 0o40755),
    "rmdir": lambda fs, v: fs.rmdir(f"{v}/dir"),
    "unlink": lambda fs, v: fs.unlink(f"{v}/secret"),
    "rename-out-of": lambda fs, v: fs.rename(f"{v}/secret", "/a/stolen"),
    "rename-into": lambda fs, v: fs.rename("/a/f", f"{v}/pushed"),
    "symlink": lambda fs, v: fs.symlink(f"{v}/new", "anything"),
    "link-out-of": lambda fs, v: fs.link("/a/stolen", f"{v}/secret"),
    "link-into": lambda fs, v: fs.link(f"{v}/pushed", "/a/f"),
    "create": lambda fs, v: closed(fs.create(f"{v}/new", 0o100644, os.O_WRONLY)),
    "open": lambda fs, v: closed(fs.open(f"{v}/secret", os.O_RDWR)),
    "truncate": lambda fs, v: fs.truncate(f"{v}/secret", 0),
}


@pytest.mark.parametrize("via", ["/out", "/a/rel"])
@pytest.mark.parametrize("op", THROUGH_A_PARENT)
def test_no_operation_follows_a_symlink_in_a_parent(tree: Tree, op: str, via: str) -> None:
    before = tree.snapshot()
    with raises_errno(errno.ELOOP):
        THROUGH_A_PARENT[op](tree.fs, via)
    assert tree.snapshot() == before


def test_a_hard_link_of_a_symlink_is_a_link_of_the_symlink(tree: Tree) -> None:
    """``ln -P``: the new entry is the symlink itself, not the file it names on the node."""
    tree.fs.link("/a/h", "/a/tosecret")
    assert os.readlink(tree.root / "a" / "h") == str(tree.outside / "secret")
    assert os.lstat(tree.root / "a" / "h").st_ino == os.lstat(tree.root / "a" / "tosecret").st_ino
    assert os.stat(tree.outside / "secret").st_nlink == 1


@pytest.mark.parametrize(
    ("op", "err"),
    [
        # Linux changes no symlink's mode: fchmodat(AT_SYMLINK_NOFOLLOW) answers EOPNOTSUPP.
        (lambda fs: fs.chmod("/a/tosecret", 0o100777), errno.EOPNOTSUPP),
        (lambda fs: fs.truncate("/a/tosecret", 0), errno.ELOOP),
        (lambda fs: closed(fs.open("/a/tosecret", os.O_RDWR)), errno.ELOOP),
        (lambda fs: closed(fs.create("/a/tosecret", 0o100644, os.O_WRONLY | os.O_TRUNC)), errno.ELOOP),
        (lambda fs: closed(fs.create("/a/dangling", 0o100644, os.O_WRONLY)), errno.ELOOP),
        (lambda fs: fs.readdir("/a/todir", 0), errno.ENOTDIR),
        (lambda fs: fs.mkdir("/a/dangling", 0o40755), errno.EEXIST),
        (lambda fs: fs.symlink("/a/dangling", "anything"), errno.EEXIST),
    ],
    ids=["chmod", "truncate", "open", "create-over", "create-dangling", "readdir", "mkdir", "symlink"],
)
def test_an_operation_that_would_follow_the_last_symlink_is_refused(
    tree: Tree, op: Callable[[Passthrough], object], err: int
) -> None:
    before = tree.snapshot()
    with raises_errno(err):
        op(tree.fs)
    assert tree.snapshot() == before
    assert not (tree.outside / "new").exists()


def test_metadata_of_a_symlink_is_the_links_own(tree: Tree) -> None:
    secret = tree.outside / "secret"
    owner, times = os.stat(secret).st_uid, os.stat(secret).st_mtime_ns
    assert stat.S_ISLNK(tree.fs.getattr("/a/tosecret")["st_mode"])
    assert tree.fs.readlink("/a/tosecret") == str(secret)
    tree.fs.chown("/a/tosecret", 1234, 1234)
    tree.fs.utimens("/a/tosecret", (5_000_000_000, 6_000_000_000))
    link = os.lstat(tree.root / "a" / "tosecret")
    assert (link.st_uid, link.st_gid, link.st_mtime_ns) == (1234, 1234, 6_000_000_000)
    assert (os.stat(secret).st_uid, os.stat(secret).st_mtime_ns) == (owner, times)

    tree.fs.rename("/a/tosecret", "/a/moved")
    assert os.readlink(tree.root / "a" / "moved") == str(secret)
    tree.fs.unlink("/a/moved")
    assert not os.path.lexists(tree.root / "a" / "moved")
    assert secret.read_text() == "theirs"


@pytest.fixture
def elsewhere(tmp_path: Path) -> Iterator[Path]:
    """A directory on a filesystem of its own (a 1 MiB tmpfs), so that its statfs is told apart."""
    path = tmp_path / "elsewhere"
    path.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_statfs_of_a_symlink_is_its_own_filesystems(tree: Tree, elsewhere: Path) -> None:
    (tree.root / "a" / "toelsewhere").symlink_to(elsewhere)
    assert tree.fs.statfs("/a/toelsewhere")["f_blocks"] == os.statvfs(tree.root).f_blocks
    assert os.statvfs(tree.root).f_blocks != os.statvfs(elsewhere).f_blocks


def test_the_root_itself(tree: Tree) -> None:
    assert tree.fs.getattr("/")["st_ino"] == os.stat(tree.root).st_ino
    assert sorted(tree.fs.readdir("/", 0)) == [".", "..", "a", "out"]
    assert tree.fs.statfs("/")["f_blocks"] == os.statvfs(tree.root).f_blocks
    tree.fs.chmod("/", 0o40750)
    tree.fs.utimens("/", (7_000_000_000, 8_000_000_000))
    st = os.stat(tree.root)
    assert (stat.S_IMODE(st.st_mode), st.st_mtime_ns) == (0o750, 8_000_000_000)


def test_the_root_is_served_by_its_name_and_a_symlink_in_its_place_is_refused(tree: Tree) -> None:
    """As curvine-fuse serves an fs-path: gone, its root answers ENOENT, and back, it serves again.
    A mount of a parent fs-path could put a symlink in its place: nothing is served through it."""
    aside = tree.root.with_name("root.aside")
    tree.root.rename(aside)
    with raises_errno(errno.ENOENT):
        tree.fs.getattr("/")
    tree.root.symlink_to(tree.outside)
    with raises_errno(errno.ELOOP):
        tree.fs.getattr("/secret")
    with raises_errno(errno.ELOOP):
        tree.fs.readdir("/", 0)
    tree.root.unlink()
    aside.rename(tree.root)
    assert tree.fs.getattr("/a/f")["st_size"] == len("mine")


@pytest.mark.parametrize("name", [".", ".."])
def test_a_dot_name_is_refused(tree: Tree, name: str) -> None:
    """The kernel never sends one; were it to, ``..`` must not climb out of the root."""
    for path in (f"/{name}", f"/{name}/a", f"/a/{name}/f", f"/a/{name}"):
        with raises_errno(errno.EINVAL):
            tree.fs.getattr(path)
