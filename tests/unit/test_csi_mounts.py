"""The mount table parser, and real bind mounts (read-only included) on this machine (root)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from csi.fuse import mounts

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
