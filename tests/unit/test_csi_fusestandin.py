"""The ``curvine-fuse`` stand-in: a real FUSE mount per test (root and /dev/fuse needed), its flags,
its process contract (``ready`` line, SIGTERM → clean unmount, ``kill -9`` → stale mount that a lazy
unmount clears) and the passthrough operations pods rely on."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from csi.standin import fusestandin
from kubectl_fluid.api import curvinefuse as cf
from kubectl_fluid.api import names
from tests.unit.fusestandins import STOP_TIMEOUT, Standins, running

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/dev/fuse"), reason="real FUSE mounts need root and /dev/fuse"
)

NOBODY = 65534


@pytest.fixture
def standins(tmp_path: Path) -> Iterator[Standins]:
    with running(tmp_path) as manager:
        yield manager


# --- through the mount ----------------------------------------------------------------------------


def test_writes_through_the_mount_land_in_the_backing_dir_and_back(standins: Standins) -> None:
    s = standins.start(master_addrs="10.0.0.1:8995,10.0.0.2:8995")
    assert s.backing == standins.data / names.cluster_id("10.0.0.1:8995,10.0.0.2:8995")

    (s.mnt / "through-mount.txt").write_text("from the pod\n")
    assert (s.backing / "through-mount.txt").read_text() == "from the pod\n"

    (s.backing / "through-backing.txt").write_bytes(b"\x00cache\xff" * 1000)
    assert (s.mnt / "through-backing.txt").read_bytes() == b"\x00cache\xff" * 1000
    # Zero cache timeouts by default: a change made behind the mount's back shows at once.
    (s.backing / "through-backing.txt").write_text("changed")
    assert (s.mnt / "through-backing.txt").read_text() == "changed"

    with open(s.mnt / "through-mount.txt", "a") as f:
        f.write("appended\n")
        f.flush()
        os.fsync(f.fileno())
    assert (s.backing / "through-mount.txt").read_text() == "from the pod\nappended\n"
    assert sorted(os.listdir(s.mnt)) == ["through-backing.txt", "through-mount.txt"]

    line = next(ln for ln in Path("/proc/self/mountinfo").read_text().splitlines() if f" {s.mnt} " in ln)
    assert (
        f" - {fusestandin.FS_TYPE} curvine-standin-{names.cluster_id('10.0.0.1:8995,10.0.0.2:8995')} " in line
    )
    assert "allow_other" in line
    assert "default_permissions" in line


def test_namespace_and_attribute_operations(standins: Standins) -> None:
    s = standins.start()
    m = s.mnt
    (m / "d" / "e").mkdir(parents=True)
    (m / "d" / "e" / "f").write_text("0123456789")
    os.rename(m / "d" / "e" / "f", m / "d" / "g")
    assert (s.backing / "d" / "g").read_text() == "0123456789"
    assert not (s.backing / "d" / "e" / "f").exists()

    os.truncate(m / "d" / "g", 4)
    assert (s.backing / "d" / "g").read_text() == "0123"
    os.chmod(m / "d" / "g", 0o640)
    assert (s.backing / "d" / "g").stat().st_mode & 0o777 == 0o640
    os.utime(m / "d" / "g", ns=(1_000_000_000_123, 2_000_000_000_456))
    st = os.stat(m / "d" / "g")
    assert (st.st_atime_ns, st.st_mtime_ns) == (1_000_000_000_123, 2_000_000_000_456)
    before = time.time_ns()
    os.utime(m / "d" / "g")  # "now", sent by the kernel as a sentinel rather than a time
    assert os.stat(s.backing / "d" / "g").st_mtime_ns >= before - 1_000_000_000

    os.symlink("g", m / "d" / "link")
    assert os.readlink(s.backing / "d" / "link") == "g"
    assert (m / "d" / "link").read_text() == "0123"

    os.rmdir(m / "d" / "e")
    os.unlink(m / "d" / "link")
    os.unlink(m / "d" / "g")
    assert os.listdir(s.backing / "d") == []
    with pytest.raises(FileNotFoundError):
        os.rmdir(m / "missing")

    vfs = os.statvfs(m)
    assert vfs.f_blocks == os.statvfs(s.backing).f_blocks


def test_non_root_users_get_kernel_permission_checks_and_own_what_they_create(
    standins: Standins,
) -> None:
    s = standins.start(mnt=standins.world_reachable_dir())
    (s.mnt / "shared").mkdir(mode=0o1777)
    os.chmod(s.mnt / "shared", 0o1777)
    (s.mnt / "secret").write_text("root only")
    os.chmod(s.mnt / "secret", 0o600)
    # /bin/sh, not this venv's python: that may live where nobody can execute it (under /root).
    script = (
        'cd "$1" || exit 9\n'
        "echo x > shared/mine\n"
        "mkdir shared/dir\n"
        'for p in secret new-at-root; do (: >> "$p") 2>/dev/null || echo "denied $p"; done\n'
    )
    out = subprocess.run(
        ["/bin/sh", "-c", script, "sh", str(s.mnt)],
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        capture_output=True,
        text=True,
        timeout=STOP_TIMEOUT,
        check=True,
    )
    assert out.stdout.split("\n") == ["denied secret", "denied new-at-root", ""]
    for made in ("mine", "dir"):
        st = (s.backing / "shared" / made).stat()
        assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY)


def test_each_cluster_id_and_fs_path_serves_its_own_directory(standins: Standins) -> None:
    a = standins.start(master_addrs="a.example:8995")
    b = standins.start(master_addrs="b.example:8995")
    assert a.backing != b.backing
    (a.mnt / "only-in-a").write_text("a")
    assert not (b.mnt / "only-in-a").exists()
    assert os.listdir(b.backing) == []

    # Same cluster, fs-path /sub/dir: the sub-tree of what the "/" mount sees.
    (a.mnt / "sub" / "dir").mkdir(parents=True)
    (a.mnt / "sub" / "dir" / "f").write_text("shared")
    sub = standins.start(master_addrs="a.example:8995", fs_path="/sub/dir")
    assert sub.backing == a.backing / "sub" / "dir"
    assert (sub.mnt / "f").read_text() == "shared"


def test_a_missing_fs_path_directory_is_created(standins: Standins) -> None:
    s = standins.start(fs_path="/not/yet")
    assert s.backing.is_dir()
    assert os.listdir(s.mnt) == []


# --- the process contract -------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_unmounts_and_exits_zero(standins: Standins, sig: signal.Signals) -> None:
    s = standins.start()
    # A file still open (as in a pod that has not let go yet) does not keep the mount alive: libfuse
    # detaches it, and the late close(2) is told the daemon is gone.
    fd = os.open(s.mnt / "open-while-stopping", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"x")
    try:
        assert s.stop(sig) == 0, s.stderr()
        assert str(s.mnt) not in fusestandin.mount_points()
    finally:
        try:
            os.close(fd)
            close_errno = 0
        except OSError as exc:
            close_errno = exc.errno or 0
    assert close_errno == errno.ENOTCONN
    assert os.listdir(s.mnt) == []  # the bare mount point directory again
    assert (s.backing / "open-while-stopping").read_text() == "x"


@pytest.mark.parametrize("unmount", ["fusermount", "umount"])
def test_kill_9_leaves_a_stale_mount_that_an_unmount_clears(standins: Standins, unmount: str) -> None:
    s = standins.start()
    assert s.stop(signal.SIGKILL) == -signal.SIGKILL
    # The kernel keeps the mount with nobody serving it: every access fails with ENOTCONN.
    assert str(s.mnt) in fusestandin.mount_points()
    with pytest.raises(OSError, match="Transport endpoint is not connected") as exc:
        os.stat(s.mnt)
    assert exc.value.errno == errno.ENOTCONN

    # A new stand-in refuses the stale mount point instead of clearing it behind its owner's back.
    again = standins.run("--master-addrs", "10.0.0.1:8995", "--fs-path", "/", "--mnt-path", str(s.mnt))
    assert again.returncode == fusestandin.EXIT_FAILED
    assert "stale FUSE mount" in again.stderr
    assert str(s.mnt) in fusestandin.mount_points()

    # What the node service does before remounting.
    if unmount == "fusermount":
        binary = shutil.which("fusermount3") or shutil.which("fusermount")
        assert binary, "fusermount3 missing (Debian package fuse3)"
        subprocess.run([binary, "-u", str(s.mnt)], check=True)
    else:
        subprocess.run(["umount", "-l", str(s.mnt)], check=True)
    assert str(s.mnt) not in fusestandin.mount_points()
    assert os.path.isdir(s.mnt)
    restarted = standins.start(mnt=s.mnt)
    assert (restarted.mnt / "after-restart").write_text("ok") == 2


def test_a_mount_point_in_use_is_refused(standins: Standins) -> None:
    s = standins.start()
    second = standins.run("--master-addrs", "10.0.0.9:8995", "--fs-path", "/", "--mnt-path", str(s.mnt))
    assert second.returncode == fusestandin.EXIT_FAILED
    assert "already mounted" in second.stderr
    assert fusestandin.mount_points().count(str(s.mnt)) == 1
    assert s.proc.poll() is None


def test_every_flag_of_the_real_cli_is_accepted(standins: Standins, tmp_path: Path) -> None:
    """Whatever argv the driver builds for the real curvine-fuse, the stand-in takes too."""
    conf = tmp_path / "curvine-fuse.toml"
    conf.write_text('[client]\nmaster_addrs = [{ hostname = "10.0.0.1", port = 8995 }]\n')
    extra = ["--conf", str(conf)]
    switches = (*cf.FUSE_SWITCH_PARAMS, *cf.FUSE_CLIENT_SWITCH_PARAMS)
    for key in cf.FUSE_TUNING_PARAMS:
        if key in cf.FUSE_PRESENCE_PARAMS:
            extra.append(f"--{key}")
        else:
            extra += [f"--{key}", "true" if key in switches else "1"]
    s = standins.start(extra=extra)
    (s.backing / "f").write_text("tuned")
    # direct-io is on: reads bypass the page cache; --readonly is there too, as curvine-fuse's.
    assert (s.mnt / "f").read_text() == "tuned"
    with pytest.raises(OSError, match="Read-only file system"):
        (s.mnt / "g").write_text("refused")


def test_readonly_mounts_the_whole_filesystem_read_only(standins: Standins) -> None:
    """As curvine-fuse --readonly (MS_RDONLY on its mount): what the CSI node stages for a reader-only
    access mode, so that no bind of it, however remounted, writes."""
    s = standins.start(extra=["--readonly"])
    (s.backing / "f").write_text("the dataset")
    assert (s.mnt / "f").read_text() == "the dataset"
    with pytest.raises(OSError, match="Read-only file system"):
        (s.mnt / "f").write_text("overwritten")
    assert (s.backing / "f").read_text() == "the dataset"


def test_an_unknown_flag_exits_2_without_mounting(standins: Standins, tmp_path: Path) -> None:
    mnt = tmp_path / "never"
    mnt.mkdir()
    out = standins.run(
        "--master-addrs", "h:1", "--fs-path", "/", "--mnt-path", str(mnt), "--auto-cache", "true"
    )
    assert out.returncode == fusestandin.EXIT_USAGE
    assert "unrecognized arguments: --auto-cache true" in out.stderr
    assert out.stdout == ""
    assert str(mnt) not in fusestandin.mount_points()


# --- command line, without FUSE -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fs-path", "/", "--mnt-path", "/m"], "--master-addrs"),
        (["--master-addrs", "h:1", "--fs-path", "/"], "--mnt-path"),
        (["--master-addrs", "h", "--fs-path", "/", "--mnt-path", "/m"], "is not host:port"),
        (["--master-addrs", "h:1,:2", "--fs-path", "/", "--mnt-path", "/m"], "is not host:port"),
        (["--master-addrs", "h:1", "--fs-path", "rel", "--mnt-path", "/m"], "is not absolute"),
        (["--master-addrs", "h:1", "--fs-path", "/a/../b", "--mnt-path", "/m"], "contains '..'"),
        (["--master-addrs", "h:1", "--fs-path", "/", "--mnt-path", "/m", "--attr-timeout-ms", "-1"], ">= 0"),
        (["--master-addrs", "h:1", "--fs-path", "/", "--mnt-path", "/m", "--attr-timeout-ms", "0.5"], ">= 0"),
        # The design document's flags: the real binary refuses them, so does the stand-in.
        (
            ["--master-addrs", "h:1", "--fs-path", "/", "--mnt-path", "/m", "--attr-timeout", "1"],
            "unrecognized",
        ),
        (
            ["--master-addrs", "h:1", "--fs-path", "/", "--mnt-path", "/m", "--node-cache-size", "1"],
            "unrecognized",
        ),
        (["--master-addrs", "h:1", "--fs-path", "/", "--mnt-path", "/m", "--clone-fd", "1"], "true or"),
        (["--master-addrs", "h:1", "--fs-path", "/", "--mnt-path", "/m", "--direct-io", "maybe"], "true or"),
        # No prefix matching: the real binary has none either.
        (["--master-addrs", "h:1", "--fs-path", "/", "--mnt-path", "/m", "--entry", "1"], "unrecognized"),
    ],
)
def test_bad_command_lines_are_usage_errors(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        fusestandin.parse_args(args)
    assert exc.value.code == fusestandin.EXIT_USAGE
    assert message in capsys.readouterr().err


def test_masters_come_from_the_configuration_file_without_master_addrs(tmp_path: Path) -> None:
    conf = tmp_path / "c.toml"
    conf.write_text(
        '[client]\nmaster_addrs = [{ hostname = "fd00::1", port = 8995 }, { hostname = "m2", port = 1 }]\n'
    )
    opts = fusestandin.parse_args(["--conf", str(conf), "--mnt-path", "/m", "--debug"])
    assert opts.master_addrs == "[fd00::1]:8995,m2:1"
    assert opts.fs_path == "/"
    assert opts.tuning == {"debug": "true"}


def test_a_missing_configuration_file_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        fusestandin.parse_args(
            ["--conf", str(tmp_path / "none.toml"), "--master-addrs", "h:1", "--mnt-path", "/m"]
        )
    assert exc.value.code == fusestandin.EXIT_FAILED
    assert "none.toml" in capsys.readouterr().err


def test_validate_config_checks_the_command_line_and_mounts_nothing(
    standins: Standins, tmp_path: Path
) -> None:
    mnt = tmp_path / "v"
    ok = standins.run("validate-config", "--master-addrs", "h:1", "--mnt-path", str(mnt), "--io-threads", "2")
    assert ok.returncode == fusestandin.EXIT_OK, ok.stderr
    bad = standins.run(
        "validate-config", "--master-addrs", "h:1", "--mnt-path", str(mnt), "--entry-timeout", "1"
    )
    assert bad.returncode == fusestandin.EXIT_USAGE
    assert str(mnt) not in fusestandin.mount_points()
    assert not mnt.exists()


def test_parse_args_normalises_paths_and_keeps_tuning_values(tmp_path: Path) -> None:
    opts = fusestandin.parse_args(
        ["--master-addrs", "m:1", "--fs-path", "//a/./b/", "--mnt-path", "rel", "--io-threads", "32"]
    )
    assert opts.fs_path == "/a/b"
    assert opts.mnt_path == os.path.abspath("rel")
    assert opts.tuning == {"io-threads": "32"}
    assert fusestandin.backing_dir(opts, str(tmp_path)) == f"{tmp_path}/{names.cluster_id('m:1')}/a/b"
    root_opts = fusestandin.Options("m:1", "/", "/mnt")
    assert fusestandin.backing_dir(root_opts, str(tmp_path)) == f"{tmp_path}/{names.cluster_id('m:1')}"


def test_mount_points_decode_the_kernels_escapes(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(
        "22 1 0:21 / / rw - ext4 /dev/sda rw\n"
        "40 22 0:39 / /var/lib/with\\040space\\011tab rw - fuse.x src rw\n"
    )
    assert fusestandin.mount_points(str(info)) == ["/", "/var/lib/with space\ttab"]
