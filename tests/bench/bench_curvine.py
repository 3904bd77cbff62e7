"""The CSI node service on the real Curvine (hack/localcluster/peers/curvinecluster.py: a single-node master
and worker), each figure beside its floor, in one run:

- cold NodeStage (a new mount key: configuration file, ``validate-config``, curvine-fuse started
  until the kernel shows its mount, the volume's directory bound), beside the bare curvine-fuse
  started by hand with the same configuration until its mount answers (issue 33's goal: at most
  1.3x), and where the cold call's time went, step by step, from the node service's own debug
  lines (``NodeStage steps``, kubectl_fluid/spans.py);
- NodePublish p50 on a warm key, beside one bare bind mount(2), and beside its floor: a gRPC round
  trip that does nothing and one durable write of the state file (issue 33's goal: at most 1.5x).

The bare curvine-fuse is timed from Popen until the kernel shows its mount and a stat of its root is
answered (a mount a program can use), woken by the mount table's change (csi/fuse/mounts.py:
TableChanges), not by a timer's tick, so the floor is not inflated by polling.

Needs root, /dev/fuse and the real binaries (hack/localcluster/peers/curvinebins.py); the cluster is not
involved. ``python -m tests.bench.bench_curvine`` runs these alone.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

from csi.fuse import mounts
from csi.proto import csi_pb2
from kubectl_fluid.api import names
from tests.bench.bench_csi import (
    bare_bind_ms,
    durable_write_ms,
    info_ms,
    logged_steps,
    publish_beside_floor,
    step_rows,
)
from tests.bench.report import Report, percentile, ratio_at_most
from tests.unit.test_csi_node import MOUNT, Driver

if TYPE_CHECKING:
    from localcluster.peers import curvinecluster

ROUNDS = 5


def bare_fuse_ms(cv: curvinecluster.LocalCurvine, root: Path) -> list[float]:
    """curvine-fuse alone, with the nodes' configuration: Popen until its mount answers a stat."""
    from csi.fuse.fuseconfig import fuse_config
    from csi.model.params import FuseParams

    settings = tomllib.loads(cv.layout.node_settings.read_text())
    out = []
    for i in range(ROUNDS):
        mnt, fs_path = root / f"bare-{i}" / "fuse-mount", f"/bench/bare{i}"
        mnt.mkdir(parents=True)
        conf = root / f"bare-{i}" / "fuse.toml"
        conf.write_text(fuse_config(FuseParams(master_addrs=cv.master_addrs, fs_path=fs_path), settings))
        argv = [str(cv.layout.fuse), "--conf", str(conf), "--fs-path", fs_path, "--mnt-path", str(mnt)]
        with mounts.TableChanges() as changes:
            t0 = time.perf_counter()
            fuse = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)  # fmt: skip
            try:
                deadline = time.monotonic() + 30
                while not mounts.mounted_at(mnt) and fuse.poll() is None and time.monotonic() < deadline:
                    changes.wait(0.05)
                os.stat(mnt)  # the first request: answered once curvine-fuse serves
                out.append((time.perf_counter() - t0) * 1000)
            finally:
                fuse.terminate()
                fuse.wait(15)
                if mounts.mounted_at(mnt):
                    mounts.unmount(mnt, lazy=True)
    return out


def create(driver: Driver, masters: str, name: str, fs_path: str) -> csi_pb2.Volume:
    params = {
        names.PARAM_MASTER_ADDRS: masters,
        names.PARAM_FS_PATH: fs_path,
        names.PARAM_PATH_TYPE: names.PATH_TYPE_DIRECTORY_OR_CREATE,
    }
    request = csi_pb2.CreateVolumeRequest(name=name, volume_capabilities=[MOUNT], parameters=params)
    return driver.controller.CreateVolume(request, timeout=60).volume


def run(report: Report) -> None:
    if os.geteuid() != 0 or not Path("/dev/fuse").exists():
        print("[bench] real Curvine figures skipped: real FUSE mounts need root and /dev/fuse")
        return
    from localcluster.peers import (
        curvinebins,  # hack/, on the path of tests.bench's main
        curvinecluster,
    )

    if curvinebins.find() is None:
        print(f"[bench] real Curvine figures skipped: no binaries in {curvinebins.peer_dir()}")
        return
    # Short: unix socket paths are at most 108 bytes.
    with tempfile.TemporaryDirectory(prefix="fcv-") as tmp, curvinecluster.running(Path(tmp) / "cv") as cv:
        root = Path(tmp)
        extra = (
            "--backend",
            "curvine",
            "--fuse-config",
            str(cv.layout.node_settings),
            "--log-level",
            "debug",
        )
        driver = Driver(root / "d", fuse_binary=str(cv.layout.fuse), extra=extra)
        driver.root.mkdir()
        driver.start()
        try:
            run_id = secrets.token_hex(3)
            cold, cold_ids = [], set()
            for i in range(ROUNDS):
                volume = create(driver, cv.master_addrs, f"cold-{i}", f"/bench/{run_id}/cold{i}")
                t0 = time.perf_counter()
                driver.stage(volume)
                cold.append((time.perf_counter() - t0) * 1000)
                cold_ids.add(volume.volume_id)
            alone = percentile(bare_fuse_ms(cv, root), 50)
            report.add(
                "cold NodeStage, real curvine-fuse p50", percentile(cold, 50), "ms",
                "bare curvine-fuse start to its mount answering", alone, goal=ratio_at_most(1.3),
            )  # fmt: skip
            step_rows(
                report,
                "cold NodeStage",
                logged_steps(driver.root / "driver.log", "NodeStage", cold_ids),
                cold,
            )

            warm = create(driver, cv.master_addrs, "warm", f"/bench/{run_id}/warm")
            staging = driver.stage(warm)
            publish = []
            for i in range(100):
                t0 = time.perf_counter()
                driver.publish(warm, staging, str(driver.root / "pods" / f"w{i}"))
                publish.append((time.perf_counter() - t0) * 1000)
            report.add(
                "NodePublish p50, warm key, real curvine-fuse", percentile(publish, 50), "ms",
                "one bare bind mount(2)", percentile(bare_bind_ms(root), 50),
            )  # fmt: skip
            floor = percentile(info_ms(driver), 50) + percentile(
                durable_write_ms(driver.root / "state", root / "bench-state"), 50
            )
            name = "NodePublish p50, warm key, real curvine-fuse, beside its floor"
            publish_beside_floor(report, name, publish, floor)
        finally:
            driver.stop()
            for pid in driver.fuse_pids() + curvine_fuse_pids(driver.root):
                os.kill(pid, 9)
            for m in reversed(mounts.mount_table()):
                if m.mount_point.startswith(str(root)):
                    mounts.unmount(m.mount_point, lazy=True)


def curvine_fuse_pids(root: Path) -> list[int]:
    """The node service's curvine-fuse children left after it stopped (its --mnt-path under root)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ours = any(a.startswith(str(root).encode()) for a in argv[1:])
        if entry.name.isdigit() and ours and argv[0].endswith(b"curvine-fuse"):
            pids.append(int(entry.name))
    return pids


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hack"))
    report = Report()
    run(report)
    report.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
