"""The mount table parser, and real bind mounts (read-only included) on this machine (root)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from csi.fuse import mounts

REPO = Path(__file__).resolve().parents[2]
MS_SHARED = 1 << 20

SAMPLE = (
    "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n"
    "37 36 0:45 / /var/lib/a\\040b\\134c rw,nosuid shared:7 - fuse.curvine-fuse curvine rw,user_id=0\n"
)


def test_parse_mountinfo_with_optional_fields_and_escapes() -> None:
    first, second = mounts.parse_mountinfo(SAMPLE)
    assert (first.mount_id, first.parent_id, first.root, first.mount_point) == (
        36,
        35,
        "/mnt1",
        "/mnt/parent",
    )
    assert first.options == ("rw", "noatime")
    assert (first.fs_type, first.source) == ("ext3", "/dev/root")
    assert second.mount_point == "/var/lib/a b\\c"
    assert second.fs_type == "fuse.curvine-fuse"


def test_the_live_table_has_the_root() -> None:
    assert any(m.mount_point == "/" for m in mounts.mount_table())


@pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need root (CI and the dev machine run as root)")
def test_bind_readonly_and_unmount(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    dst.mkdir()
    (src / "f").write_text("hello")
    mounts.bind(src, dst, readonly=True)
    try:
        assert (dst / "f").read_text() == "hello"
        assert mounts.mounted_at(dst)
        with pytest.raises(OSError, match="Read-only"):
            (dst / "g").write_text("no")
    finally:
        mounts.unmount(dst)
    assert not mounts.mounted_at(dst)
    assert not mounts.is_broken(dst)


@pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need root (CI and the dev machine run as root)")
def test_a_read_only_bind_keeps_the_sources_nosuid_and_nodev(tmp_path: Path) -> None:
    # The source stands for a FUSE mount (which the kernel mounts nosuid,nodev): a tmpfs with them.
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    dst.mkdir()
    flags = mounts.MS_NOSUID | mounts.MS_NODEV
    assert mounts._libc.mount(b"tmpfs", os.fsencode(src), b"tmpfs", flags, None) == 0
    try:
        mounts.bind(src, dst, readonly=True)
        try:
            (options,) = [m.options for m in mounts.mounted_at(dst)]
            assert {"ro", "nosuid", "nodev"} <= set(options), options
        finally:
            mounts.unmount(dst)
    finally:
        mounts.unmount(src)


@pytest.fixture
def shared_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory on a shared mount of its own, as kubelet's is (rshared): a mount made under it in
    another mount namespace (the node service's container) has a peer copy here (kubelet's, runc's)."""
    shared = tmp_path / "kubelet"
    shared.mkdir()
    assert mounts._libc.mount(b"tmpfs", os.fsencode(shared), b"tmpfs", 0, None) == 0
    assert mounts._libc.mount(None, os.fsencode(shared), None, MS_SHARED, None) == 0
    try:
        yield shared
    finally:
        subprocess.run(["umount", "-R", "-l", str(shared)], check=False)


def bind_in_another_namespace(bind: str, source: Path, target: Path) -> None:
    """``bind`` (a call of csi.fuse.mounts on ``source`` and ``target``) made in a mount namespace of
    its own whose mounts are peers of this one's, as the node service's container's are of the host's."""
    script = f"import sys; from csi.fuse import mounts; mounts.{bind}"
    unshare = ["unshare", "--mount", "--propagation", "unchanged"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([*unshare, sys.executable, "-c", script, str(source), str(target)], check=True, env=env)


@pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need root (CI and the dev machine run as root)")
@pytest.mark.parametrize(
    "bind",
    [
        "bind(sys.argv[1], sys.argv[2], readonly=True)",  # mount_setattr(2), where the kernel has it (5.12)
        "_bind_by_remount(sys.argv[1], sys.argv[2])",  # older kernels
    ],
    ids=["mount_setattr", "remount"],
)
def test_a_read_only_bind_is_read_only_in_the_other_mount_namespaces_too(
    tmp_path: Path, shared_dir: Path, bind: str
) -> None:
    # A per-mount flag set by remounting stays in the namespace that remounted: kubelet's copy of a
    # target the node service's container bound read-only was read-write, and so the pod's.
    src, dst = tmp_path / "src", shared_dir / "target"
    src.mkdir()
    dst.mkdir()
    (src / "f").write_text("the dataset")
    bind_in_another_namespace(bind, src, dst)
    (options,) = [m.options for m in mounts.mounted_at(dst)]
    assert "ro" in options, options
    with pytest.raises(OSError, match="Read-only file system"):
        (dst / "f").write_text("overwritten")
    assert (src / "f").read_text() == "the dataset"
    left = [m.mount_point for m in mounts.mount_table() if m.mount_point.startswith(f"{tmp_path}/")]
    assert sorted(left) == [str(shared_dir), str(dst)]  # nothing else made on the way


@pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need root (CI and the dev machine run as root)")
def test_table_changes_wake_at_a_mount_and_at_an_unmount_not_before(tmp_path: Path) -> None:
    """What a FUSE's start is awaited with: a change of the table since the file was opened (or
    last waited on) wakes the wait, even one made before the wait began."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    dst.mkdir()
    with mounts.TableChanges() as changes:
        mounts.bind(src, dst)  # before the wait: still seen
        try:
            assert changes.wait(5)
        finally:
            mounts.unmount(dst)
        assert changes.wait(5)
