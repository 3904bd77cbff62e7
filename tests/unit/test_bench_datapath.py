"""The data-path bench's pure parts (tests/bench/datapathio.py): the program both sides run answers with
what it did, its answer is read back, and the node's mount of the app's volume is found by its
superblock, or the bench refuses to compare two different filesystems."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench import bench_datapath
from tests.bench.datapathio import PROGRAM, Timed, cgroup_procs, median_rate, parse, same_fuse


def program(*args: object) -> Timed:
    run = subprocess.run(
        [sys.executable, "-c", PROGRAM, *map(str, args)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
    return parse(run.stdout)


def test_the_program_writes_reads_and_walks_what_it_says(tmp_path: Path) -> None:
    data = tmp_path / "f.bin"
    assert program("write", data, 2).amount == 2 << 20
    assert data.stat().st_size == 2 << 20
    assert program("write", data, 1).amount == 1 << 20  # written again, not appended
    assert program("read", data).amount == 1 << 20
    assert program("rand", data, 50, 7).amount == 50
    assert program("tree", tmp_path / "t", 250).amount == 250
    assert len(list((tmp_path / "t").rglob("f*"))) == 250
    assert program("stat", tmp_path / "t", 250).amount == 250
    assert program("find", tmp_path / "t").amount == 1 + 3 + 250  # the top, three folders, the files


def test_an_answer_is_its_last_json_line_and_a_missing_one_says_what_came() -> None:
    out = 'Defaulted container "app"\n{"op": "read", "seconds": 2.0, "amount": 1000}\n'
    got = parse(out)
    assert got == Timed("read", 2.0, 1000.0)
    assert got.rate == 500.0
    with pytest.raises(ValueError, match="Traceback"):
        parse("Traceback (most recent call last): ...")
    assert Timed("x", 0.0, 5.0).rate == 0.0


def test_the_median_rate_of_runs() -> None:
    runs = [Timed("w", s, 100.0) for s in (1.0, 2.0, 4.0)]
    assert median_rate(runs) == 50.0


FUSE = "0:55"
# The app container's view: its volume at /data0, a bind of the FUSE's /sub.
APP = f"""\
900 800 0:60 / / rw,relatime - overlay overlay rw
901 900 {FUSE} /sub /data0 rw,relatime master:7 - fuse.curvine-fuse curvine rw,user_id=0,allow_other
902 900 0:61 / /data1 rw - tmpfs tmpfs rw
"""
# The node's: the FUSE itself, its staging bind (an older mount id), kubelet's publish bind, another FUSE.
NODE = f"""\
20 1 8:1 / / rw - ext4 /dev/vda rw
70 20 {FUSE} / /var/lib/fluid-csi/mnt/k1/fuse-mount rw,relatime shared:7 - fuse.curvine-fuse curvine rw
65 20 {FUSE} /sub /var/lib/kubelet/plugins/csi/x/globalmount rw shared:7 - fuse.curvine-fuse cv rw
80 20 {FUSE} /sub /var/lib/kubelet/pods/uid/volumes/csi/pv/mount rw shared:7 - fuse.curvine-fuse cv rw
85 20 0:56 / /runtime-mnt/other rw - fuse.curvine-fuse curvine rw
"""


def test_the_node_side_is_the_first_mount_of_the_apps_superblock_outside_the_publish_binds() -> None:
    found = same_fuse(APP, NODE, "/data0", "/var/lib/kubelet/pods")
    assert found.app.mount_point == "/data0"
    assert found.node.mount_id == 70
    assert found.node_path == "/var/lib/fluid-csi/mnt/k1/fuse-mount/sub"


def test_a_volume_that_is_not_the_nodes_fuse_is_refused() -> None:
    with pytest.raises(ValueError, match="not a FUSE"):
        same_fuse(APP, NODE, "/data1", "/var/lib/kubelet/pods")
    with pytest.raises(ValueError, match="nothing is mounted"):
        same_fuse(APP, NODE, "/data9", "/var/lib/kubelet/pods")
    other = NODE.replace(f"{FUSE} ", "0:99 ")  # an extra FUSE between: the node has no mount of the app's
    with pytest.raises(ValueError, match="no mount of the node"):
        same_fuse(APP, other, "/data0", "/var/lib/kubelet/pods")


def test_the_rounds_alternate_the_side_that_goes_first(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str]] = []

    def side(name: str) -> bench_datapath.Side:
        def run(op: str, *args: object) -> Timed:
            calls.append((name, op))
            return Timed(op, 1.0, 1.0)

        return run

    settled: list[str] = []
    monkeypatch.setattr(bench_datapath, "settle", settled.append)
    runs = bench_datapath.rounds({"app": side("app"), "node": side("node")})
    writes = [name for name, op in calls if op == "write"]
    assert writes[:2] == ["app", "node"]  # each side's file written once, untimed, before the rounds
    timed = writes[2:]
    firsts = ["app" if r % 2 == 0 else "node" for r in range(bench_datapath.ROUNDS)]
    assert timed[::2] == firsts
    assert sorted(timed) == sorted(["app", "node"] * bench_datapath.ROUNDS)
    assert all(len(by_side) == bench_datapath.ROUNDS for r in runs.values() for by_side in r.values())
    assert settled == [op for _, op in calls]  # before every run
    assert bench_datapath.ROUNDS % 2 == 0  # each side first as often


MOUNTS = """\
tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0
cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,relatime,cpu,cpuacct 0 0
cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0
cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,name=systemd 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
"""


def test_the_node_side_joins_each_hierarchy_of_the_app_container_at_its_path() -> None:
    container = "3:cpu,cpuacct:/n0/kubepods/podu/c1\n2:memory:/n0/kubepods/podu/c1\n1:name=systemd:/\n0::/\n"
    assert cgroup_procs(container, MOUNTS) == [
        "/sys/fs/cgroup/cpu,cpuacct/n0/kubepods/podu/c1/cgroup.procs",
        "/sys/fs/cgroup/memory/n0/kubepods/podu/c1/cgroup.procs",
        "/sys/fs/cgroup/systemd/cgroup.procs",
        "/sys/fs/cgroup/unified/cgroup.procs",
    ]
    assert cgroup_procs("5:pids:/x\n", MOUNTS) == []  # a hierarchy not mounted here is left out


def test_the_data_path_bench_runs_only_when_named() -> None:
    from tests.bench.__main__ import BENCHES, chosen, parse_args

    assert "datapath" in BENCHES
    assert not chosen("datapath", parse_args([]))
    assert not chosen("datapath", parse_args(["--scale"]))
    assert chosen("datapath", parse_args(["--only", "datapath"]))
    assert chosen("curvine", parse_args([]))
    assert not chosen("curvine", parse_args(["--only", "datapath"]))
