"""Resolving a volume's directory beneath a mount without following symlinks (csi/fuse/beneath.py), with
openat2 and with the component walk kept for kernels without it, on a real tree (a tmpfs standing
for the FUSE mount, a bind mount inside it standing for another filesystem)."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as strat

from csi.fuse import beneath, mounts

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the tree's mounts need root")


def no_openat2(dirfd: int, relative: str) -> int:
    raise OSError(errno.ENOSYS, "openat2 is not implemented")


@pytest.fixture(params=["openat2", "walk"])
def resolver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "walk":
        monkeypatch.setattr(beneath, "_openat2", no_openat2)
    return str(request.param)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """root (a tmpfs): a/b/c directories, a file, symlinks to inside and outside, and a mount."""
    base = tmp_path_factory.mktemp("beneath")
    root, outside, other = base / "root", base / "outside", base / "other"
    for d in (root, outside, other):
        d.mkdir()
    assert mounts._libc.mount(b"tmpfs", os.fsencode(root), b"tmpfs", 0, None) == 0
    try:
        (root / "a/b/c").mkdir(parents=True)
        (root / "a/b/c/here").write_text("volume")
        (root / "file").write_text("not a directory")
        (outside / "token").write_text("secret")
        (root / "out").symlink_to(outside)  # absolute, leaves the mount
        (root / "a/in").symlink_to("b")  # relative, stays inside: still a symlink
        (root / "a/abs").symlink_to(root / "a/b")  # absolute, into the mount itself
        (root / "mnt").mkdir()
        mounts.bind(other, root / "mnt")
        (root / "mnt/sub").mkdir()
        yield root
    finally:
        for m in reversed(mounts.mount_table()):
            if m.mount_point.startswith(str(base)):
                mounts.unmount(m.mount_point, lazy=True)


def same_file(fd: int, path: Path) -> bool:
    got, want = os.fstat(fd), os.stat(path)
    return (got.st_dev, got.st_ino) == (want.st_dev, want.st_ino)


@pytest.mark.usefixtures("resolver")
@pytest.mark.parametrize("relative", ["", "/", "a", "/a/b/c", "a/b/c/", "a/./b"])
def test_directories_beneath_the_root_open(tree: Path, relative: str) -> None:
    fd = beneath.open_beneath(str(tree), relative)
    try:
        assert same_file(fd, tree / relative.strip("/"))
    finally:
        os.close(fd)


@pytest.mark.usefixtures("resolver")
@pytest.mark.parametrize(
    ("relative", "err"),
    [
        ("out", errno.ELOOP),  # the volume's directory itself a link out of the cache
        ("out/token", errno.ELOOP),
        ("a/in", errno.ELOOP),  # a link that stays inside is refused all the same
        ("a/in/c", errno.ELOOP),  # a link in a middle component
        ("a/abs/c", errno.ELOOP),
        ("mnt", errno.EXDEV),  # another filesystem mounted inside
        ("mnt/sub", errno.EXDEV),
        ("a/../..", errno.EXDEV),
        ("file", errno.ENOTDIR),
        ("nope", errno.ENOENT),
        ("a/nope/c", errno.ENOENT),
    ],
)
def test_links_mounts_and_non_directories_are_refused(tree: Path, relative: str, err: int) -> None:
    with pytest.raises(beneath.UnsafePath) as caught:
        beneath.open_beneath(str(tree), relative)
    assert caught.value.errno == err
    assert caught.value.path == str(tree / relative)
    assert caught.value.path in str(caught.value)


@pytest.mark.usefixtures("resolver")
def test_a_bind_from_the_descriptor_is_the_opened_directory_even_if_the_name_changes(
    tree: Path, tmp_path: Path
) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (tree / "swap").mkdir()
    (tree / "swap/here").write_text("opened")
    with beneath.opened_beneath(str(tree), "swap") as source:
        # Between the check and the bind a tenant swaps the directory for a link: too late.
        (tree / "swap").rename(tree / "swapped")
        (tree / "swap").symlink_to(tree.parent / "outside")
        mounts.bind(source, target)
    try:
        assert (target / "here").read_text() == "opened"
        assert not (target / "token").exists()
    finally:
        mounts.unmount(target)
        (tree / "swap").unlink()
        (tree / "swapped/here").unlink()
        (tree / "swapped").rmdir()


COMPONENTS = ["a", "b", "c", "in", "abs", "out", "mnt", "sub", "file", "nope", ".", "..", "here"]


@settings(max_examples=300, deadline=None)
@given(parts=strat.lists(strat.sampled_from(COMPONENTS), max_size=5))
def test_the_walk_and_openat2_agree_and_never_leave_the_root(tree: Path, parts: list[str]) -> None:
    relative = "/".join(parts)
    answers = []
    for resolve in (beneath._openat2, None):
        original = beneath._openat2
        if resolve is None:
            beneath._openat2 = no_openat2
        try:
            fd = beneath.open_beneath(str(tree), relative)
        except beneath.UnsafePath as err:
            answers.append(("refused", err.errno))
        else:
            try:
                # Beneath the root, on the root's own filesystem, reached through directories only.
                real = os.readlink(beneath.fd_path(fd))
                assert real == str(tree) or real.startswith(f"{tree}/"), real
                assert os.fstat(fd).st_dev == os.stat(tree).st_dev
                answers.append(("opened", os.fstat(fd).st_ino))
            finally:
                os.close(fd)
        finally:
            beneath._openat2 = original
    assert answers[0] == answers[1], (relative, answers)
