"""The CSI node service's figures, each beside the floor it stands on, in one run:

- NodePublish p50 on a warm key, beside one bare bind mount(2) (what a publish must do at least),
  and the two floors under it: a gRPC round trip that does nothing (NodeGetInfo), and one durable
  write of the node's state file as it stands (temporary file, fsync, rename, fsync of the
  directory), which a publish waits for before it answers; then the publish beside the two floors'
  sum (issue 33's goal: at most 1.5x), and where its time went, from the node service's own debug
  lines (``NodePublish steps``, kubectl_fluid/spans.py);
- cold NodeStage (a new mount key: FUSE start to ready), beside the stand-in alone reaching ``ready``;
- stage+publish pairs per second over 50 warm mount keys (16 concurrent callers), beside its floor:
  gRPC calls that do nothing (NodeGetInfo) per second from the same 16 callers, halved (a pair is
  two calls);
- the node service's RSS.
Needs root and /dev/fuse (real mounts); the cluster is not involved.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from csi.fuse import mounts
from csi.proto import csi_pb2
from kubectl_fluid.api import names
from kubectl_fluid.files import atomic_write
from tests.bench.bench_controller import rss_mb
from tests.bench.report import Report, at_least, at_most, percentile, ratio_at_most
from tests.unit.test_csi_node import Driver

# The node service's debug lines carry each NodeStage's and NodePublish's steps (kubectl_fluid/spans.py).
DEBUG = ("--log-level", "debug")
PUBLISH_GOAL = ratio_at_most(1.5)


def logged_steps(driver_log: Path, call: str, volume_ids: set[str]) -> list[dict[str, float]]:
    """Each ``{call} steps`` line of ``volume_ids`` in the node service's log, in order: its steps'
    milliseconds and the handler's own total (``total``)."""
    out = []
    for line in driver_log.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("msg") == f"{call} steps" and entry.get("volume_id") in volume_ids:
            out.append({**entry["steps_ms"], "total": entry["total_ms"]})
    return out


def step_rows(report: Report, what: str, steps: list[dict[str, float]], client_ms: list[float]) -> None:
    """``{what}: <step> p50`` rows, each step as the node service timed it, and the time outside the
    handler (gRPC both ways, the client): the caller's time less the handler's. Steps that ran side by
    side (validate-config beside the FUSE's start) are each timed in full."""
    if len(steps) != len(client_ms):
        print(f"[bench] {what}'s steps skipped: {len(steps)} debug lines for {len(client_ms)} calls")
        return
    names = list(dict.fromkeys(name for one in steps for name in one if name != "total"))
    for name in names:
        report.add(f"{what}: {name} p50", percentile([one.get(name, 0.0) for one in steps], 50), "ms")
    outside = [client - one["total"] for client, one in zip(client_ms, steps, strict=True)]
    report.add(f"{what}: outside the handler (gRPC) p50", percentile(outside, 50), "ms")


def publish_beside_floor(report: Report, name: str, publish: list[float], floor: float) -> None:
    report.add(name, percentile(publish, 50), "ms", "its floor: gRPC round trip + one durable write", floor,
               goal=PUBLISH_GOAL)  # fmt: skip


def bare_bind_ms(root: Path, rounds: int = 50) -> list[float]:
    src = root / "bind-src"
    src.mkdir()
    out = []
    for i in range(rounds):
        dst = root / f"bind-{i}"
        dst.mkdir()
        t0 = time.perf_counter()
        mounts.bind(src, dst)
        out.append((time.perf_counter() - t0) * 1000)
        mounts.unmount(dst)
    return out


def info_ms(driver: Driver, rounds: int = 200) -> list[float]:
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        driver.node.NodeGetInfo(csi_pb2.NodeGetInfoRequest(), timeout=5)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def info_per_second(driver: Driver, callers: int, calls: int = 2000) -> float:
    def one(_: int) -> None:
        driver.node.NodeGetInfo(csi_pb2.NodeGetInfoRequest(), timeout=5)

    with ThreadPoolExecutor(callers) as pool:
        t0 = time.perf_counter()
        list(pool.map(one, range(calls)))
        return calls / (time.perf_counter() - t0)


def durable_write_ms(state_dir: Path, scratch: Path, rounds: int = 50) -> list[float]:
    """The node service's own atomic write of a copy of its state file, on the same file system."""
    content = (state_dir / names.CSI_STATE_FILE).read_bytes()
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        atomic_write(scratch / "state.json", content)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def bare_standin_ms(root: Path, rounds: int = 5) -> list[float]:
    out = []
    env = {**os.environ, "CURVINE_STANDIN_DATA": str(root / "standin-data")}
    for i in range(rounds):
        mnt = root / f"standin-{i}"
        mnt.mkdir()
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "csi.standin.fusestandin",
                "--master-addrs",
                "b:1",
                "--fs-path",
                "/",
                "--mnt-path",
                str(mnt),
            ],
            stdout=subprocess.PIPE,
            env=env,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready"
        out.append((time.perf_counter() - t0) * 1000)
        proc.terminate()
        proc.wait()
    return out


def run(report: Report) -> None:
    if os.geteuid() != 0 or not Path("/dev/fuse").exists():
        print("[bench] CSI figures skipped: real FUSE mounts need root and /dev/fuse")
        return
    with tempfile.TemporaryDirectory(prefix="fcsi-") as tmp:
        root = Path(tmp)
        driver = Driver(root, extra=DEBUG)
        driver.start()
        try:
            cold = []
            for i in range(5):
                volume = driver.create(f"cold-{i}", fs_path=f"/cold{i}")
                t0 = time.perf_counter()
                driver.stage(volume)
                cold.append((time.perf_counter() - t0) * 1000)
            alone = percentile(bare_standin_ms(root), 50)
            report.add("cold NodeStage (FUSE start) p50", percentile(cold, 50), "ms", "stand-in alone", alone)

            warm = driver.create("warm")
            staging = driver.stage(warm)
            publish = []
            for i in range(200):
                t0 = time.perf_counter()
                driver.publish(warm, staging, str(root / "pods" / f"w{i}"))
                publish.append((time.perf_counter() - t0) * 1000)
            report.add("NodePublish p50, warm key", percentile(publish, 50), "ms", "one bare bind mount(2)",
                       percentile(bare_bind_ms(root), 50), goal=at_most(2, "ms"))  # fmt: skip
            info = percentile(info_ms(driver), 50)
            report.add("its floor: gRPC round trip alone (NodeGetInfo) p50", info, "ms")
            write = percentile(durable_write_ms(root / "state", root / "bench-state"), 50)
            report.add("its floor: one durable state-file write p50", write, "ms")
            publish_beside_floor(report, "NodePublish p50, warm key, beside its floor", publish, info + write)
            steps = logged_steps(root / "driver.log", "NodePublish", {warm.volume_id})
            step_rows(report, "warm NodePublish", steps, publish)

            # Kubelet's shape of load: many pods' volumes at once over the node's mount keys, each
            # key's FUSE already running (a warm node); 16 callers in flight.
            keys, per_key = 50, 10
            for j in range(keys):
                driver.stage(driver.create(f"key-{j}", fs_path=f"/k{j}"))
            volumes = [
                driver.create(f"pair-{j}-{i}", fs_path=f"/k{j}") for i in range(per_key) for j in range(keys)
            ]

            def pair(i: int) -> None:
                s = driver.stage(volumes[i])
                driver.publish(volumes[i], s, str(root / "pods" / f"p{i}"))

            t0 = time.perf_counter()
            with ThreadPoolExecutor(16) as pool:
                list(pool.map(pair, range(len(volumes))))
            report.add(
                f"stage+publish pairs per second ({keys} warm keys)",
                len(volumes) / (time.perf_counter() - t0),
                "pairs/s",
                "its floor: 2 NodeGetInfo calls, same callers",
                info_per_second(driver, 16) / 2,
                goal=at_least(500, "pairs/s"),
            )
            assert driver.proc is not None
            report.add("node service RSS", rss_mb(driver.proc.pid), "MB")
        finally:
            driver.stop()
            for pid in driver.fuse_pids():
                os.kill(pid, 9)
            for m in reversed(mounts.mount_table()):
                if m.mount_point.startswith(str(root)):
                    mounts.unmount(m.mount_point, lazy=True)
