"""``make demo`` as a user runs it: on a local cluster of its own (not the session's) whose node is a
real kubelet, twice in a row (the second reuses the cluster, the node and its images, and starts the
demo's objects afresh), then ``make down``, after which nothing it started runs and nothing it mounted
stays, in the state dir or in the real node's own folder. Each run's FUSE is Curvine's own
curvine-fuse: the client pods of Curvine's own Dataset and CacheRuntime (mode client, on the nodes
NodeStage labelled), and the CSI node's FUSE pods on the sample Curvine cluster for a StorageClass's
volume; the files written are in Curvine, and what the demo made is still there afterwards for the
commands it suggests, which work."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.fluid import kubectl_binary

REPO = Path(__file__).resolve().parents[2]


def make(target: str, state: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    # The demo starts its own cluster whatever KUBECONFIG the suite was given.
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    return subprocess.run(
        ["make", "--no-print-directory", target, f"STATE={state}"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def node_records(state: Path) -> list[dict[str, Any]]:
    """The real nodes' records: their own folders (containerd's and kubelet's roots), bridges and
    cgroup roots."""
    return [json.loads(p.read_text()) for p in state.glob("realnodes/*/node.json")]


def network_and_cgroup_traces(records: list[dict[str, Any]]) -> list[str]:
    """The nodes' bridges, iptables chains (KF- + the bridge, in any table) and cgroup roots still there."""
    left = []
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=False).stdout
    for table in ("filter", "nat", "raw"):
        rules = subprocess.run(
            ["iptables", "-w", "5", "-t", table, "-S"], capture_output=True, text=True, check=False
        ).stdout
        left += [
            f"{table}: {line}" for line in rules.splitlines() if any(r["bridge"] in line for r in records)
        ]
    left += [f"link {r['bridge']}" for r in records if f" {r['bridge']}:" in links]
    with open("/proc/self/mounts") as mounts:
        cgroups = [Path(line.split()[1]) for line in mounts if line.split()[2] in ("cgroup", "cgroup2")]
    left += [
        str(c / r["cgroup_root"].strip("/"))
        for c in cgroups
        for r in records
        if (c / r["cgroup_root"].strip("/")).exists()
    ]
    return left


def recorded_processes(state: Path) -> list[tuple[str, int, str]]:
    """(name, pid, start time) of every process the cluster's state records (moto's S3 server among
    them, whose command line names no path of the state dir)."""
    try:
        listed = json.loads((state / "cluster.json").read_text())["processes"]
    except (OSError, ValueError, KeyError):
        return []
    return [(p["name"], p["pid"], p["start_time"]) for p in listed]


def start_time(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except OSError:
        return None


def traces(*roots: str) -> tuple[list[str], list[str]]:
    """Processes whose command line names one of ``roots``, and mount points under them."""
    procs = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if any(r in cmdline for r in roots) and "pytest" not in cmdline:
                procs.append(f"{entry.name}: {cmdline[:200]}")
    with open("/proc/self/mountinfo") as table:
        mounts = [line.split()[4] for line in table if line.split()[4].startswith(roots)]
    return procs, mounts


def left_for_exploring(state: Path, out: str) -> None:
    """The commands the demo ends with, run as a user would after it: each works on what it left."""
    suggested = out[out.index("Everything stays up for you to explore") :].splitlines()[1:]
    commands = [line.strip() for line in suggested if line.strip().startswith("kubectl ")]
    assert len(commands) == 6, suggested
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["KUBECONFIG"] = str(state / "kubeconfig")
    # kubectl, and the plugin where kubectl finds it, as an operator has them.
    tools = [str(REPO / ".venv" / "bin"), str(Path(kubectl_binary()).parent), env["PATH"]]
    env["PATH"] = os.pathsep.join(tools)
    said = {}
    for command in commands:
        run = subprocess.run(
            command, shell=True, env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert run.returncode == 0, f"{command}: {run.stderr}"
        said[command] = run.stdout
    datasets, mounts, cat, loads, listed, loaded = said.values()
    assert "fluid-demo" in datasets, datasets
    assert "demo" in datasets, datasets
    assert "curvine-master-0.curvine-master.default.svc:8995" in mounts, mounts
    assert "client:fluid-demo/curvine-demo" in mounts, mounts  # the Dataset's app left running
    assert cat.startswith("written in reader-a at "), cat
    assert re.search(r"curvine-demo-load-\w+ +curvine-demo +Complete", loads), loads  # the demo's DataLoad
    assert re.search(r"shard-0\.bin\n.*shard-1\.bin", listed), listed  # S3's files through the PVC
    assert " complete in " in loaded, loaded  # a DataLoad of a path, run on what the demo left


@pytest.mark.skipif(shutil.which("go") is None, reason="make demo builds the local control plane: needs Go")
@pytest.mark.timeout(1800 + 600 + 120 + 60)  # the runs' own limits below, and the checks
def test_make_demo_twice_then_make_down_leaves_nothing(tmp_path: Path) -> None:
    state = tmp_path / "demo"
    records: list[dict[str, Any]] = []
    try:
        # The first run may build the node's binaries and both images (minutes, once per machine).
        for run, timeout in ((1, 1800), (2, 600)):
            done = make("demo", state, timeout=timeout)
            assert done.returncode == 0, (
                f"make demo #{run} failed:\n{done.stdout[-4000:]}\n{done.stderr[-3000:]}"
            )
            out = done.stdout
            assert "read back through Mooncake: 'hello from demo-app" in out, out[-3000:]
            assert "the FUSE pod runs /opt/curvine/curvine-fuse of kubectl-fluid/curvine:" in out, out[-3000:]
            assert "live_worker_num: 1" in out, out[-3000:]
            assert "/hello.txt" in out.split("is in Curvine itself")[1], out[-3000:]  # cv fs ls in the master
            assert "no FUSE mount and no bind mount left on any of the" in out, out[-3000:]
            assert "REFS" in out  # kubectl fluid mounts showed the shared mount
            assert "both containers read the file again" in out, out[-3000:]
            # Issue 30: Curvine's own Dataset, its runtime's client as the FUSE of its PVC.
            assert "the master elected itself (curvine-demo-master-0), one worker" in out, out[-3000:]
            assert re.search(r"NodeStage labelled real-node-\d and real-node-\d; the runtime's client", out)
            assert "2 mount(s) of mode client" in out, out[-3000:]
            assert "client:fluid-demo/curvine-demo" in out, out[-3000:]  # kubectl fluid mounts, mode client
            assert "/from-app-a.txt" in out.split("and is in Curvine")[1], out[-3000:]  # cv fs ls
            assert "OnRuntimeDeleted, keeps each node's label and client" in out, out[-3000:]
            # Issue 29: three nodes, and the narration says where things ran.
            assert re.search(r"put on real-node-\d, got on real-node-\d, held in the worker's memory", out), (
                out[-3000:]
            )
            # Issue 31: S3 as the Dataset's UFS, cache placement, a DataLoad, a read the cache serves.
            assert re.search(r"the webhook added a preference for fluid\.io/s-fluid-demo-curvine-demo; the "
                             r"scheduler chose real-node-\d", out), out[-3000:]  # fmt: skip
            cold, loaded = out.split("A cold read of")[1].split("A read of")
            gets = r"S3 answered [1-9]\d* GET\(s\) of s3://fluid-ufs/data/train/shard-0.bin"
            assert re.search(gets, cold), cold
            assert "S3 answered 0 GET(s) of s3://fluid-ufs/data/train/shard-1.bin" in loaded, loaded
            assert re.search(r"curvine-demo-load-\w+ +Executing", out), out[-3000:]  # its progress
            assert "100.0%" in out.split("a DataLoad of the whole Dataset")[1], out[-3000:]
            left_for_exploring(state, out)
            records = records or node_records(state)
        assert len(records) == 3, f"make demo started {len(records)} real node(s), not 3"
    finally:
        recorded = recorded_processes(state)
        down = make("down", state, timeout=120)
    assert down.returncode == 0, down.stderr
    assert "s3-ufs" in [name for name, _, _ in recorded], recorded  # the demo's S3, a recorded process
    alive = [(name, pid) for name, pid, started in recorded if start_time(pid) == started]
    assert alive == [], f"recorded processes still running after make down: {alive}"
    procs, mounts = traces(str(state), *(r["dir"] for r in records))
    assert procs == [], f"still running after make down: {procs}"
    assert mounts == [], f"still mounted after make down: {mounts}"
    assert network_and_cgroup_traces(records) == [], "left after make down"
