"""The node service as a process with real FUSE (the stand-in) and real bind mounts: one FUSE per
mount key shared by volumes, exact refcounts under concurrency, recovery after ``kill -9`` of the
driver and of the FUSE, and nothing left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest

from csi import mounts
from csi.proto import csi_pb2, csi_pb2_grpc
from kubectl_fluid.api import names

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/dev/fuse").exists(), reason="real FUSE mounts need root and /dev/fuse"
)

MOUNT = csi_pb2.VolumeCapability(
    mount=csi_pb2.VolumeCapability.MountVolume(),
    access_mode=csi_pb2.VolumeCapability.AccessMode(
        mode=csi_pb2.VolumeCapability.AccessMode.MULTI_NODE_MULTI_WRITER
    ),
)


class Driver:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.sock = root / "csi.sock"
        self.proc: subprocess.Popen[bytes] | None = None
        self.channel: grpc.Channel | None = None

    def start(self) -> None:
        env = {**os.environ, "CURVINE_STANDIN_DATA": str(self.root / "data")}
        argv = [sys.executable, "-m", "csi.main", "--mode", "all", "--endpoint", f"unix://{self.sock}",
                "--node-id", "n1", "--state-dir", str(self.root / "state"),
                "--mount-root", str(self.root / "plugins"), "--backend-root", str(self.root / "data"),
                "--fuse-binary", f"{sys.executable} -m csi.fusestandin", "--log-format", "json",
                "--no-mirror"]  # fmt: skip
        with open(self.root / "driver.log", "ab") as log:
            self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.monotonic() + 20
        self.channel = grpc.insecure_channel(f"unix://{self.sock}")
        while True:
            try:
                csi_pb2_grpc.IdentityStub(self.channel).Probe(csi_pb2.ProbeRequest(), timeout=1)
                return
            except grpc.RpcError:
                assert self.proc.poll() is None, (self.root / "driver.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "the driver never answered"
                time.sleep(0.05)

    @property
    def node(self) -> csi_pb2_grpc.NodeStub:
        assert self.channel is not None
        return csi_pb2_grpc.NodeStub(self.channel)

    @property
    def controller(self) -> csi_pb2_grpc.ControllerStub:
        assert self.channel is not None
        return csi_pb2_grpc.ControllerStub(self.channel)

    def create(self, name: str, fs_path: str = "/") -> csi_pb2.Volume:
        params = {"master-addrs": "m1:8995", "fs-path": fs_path, "path-type": "DirectoryOrCreate"}
        request = csi_pb2.CreateVolumeRequest(name=name, volume_capabilities=[MOUNT], parameters=params)
        return self.controller.CreateVolume(request).volume

    def stage(self, volume: csi_pb2.Volume) -> str:
        staging = str(self.root / "stage" / volume.volume_id.replace("/", "_"))
        self.node.NodeStageVolume(
            csi_pb2.NodeStageVolumeRequest(
                volume_id=volume.volume_id,
                staging_target_path=staging,
                volume_capability=MOUNT,
                volume_context=volume.volume_context,
            )
        )
        return staging

    def publish(self, volume: csi_pb2.Volume, staging: str, target: str) -> None:
        self.node.NodePublishVolume(
            csi_pb2.NodePublishVolumeRequest(
                volume_id=volume.volume_id,
                staging_target_path=staging,
                target_path=target,
                volume_capability=MOUNT,
                volume_context=volume.volume_context,
            )
        )

    def unpublish(self, volume: csi_pb2.Volume, target: str) -> None:
        self.node.NodeUnpublishVolume(
            csi_pb2.NodeUnpublishVolumeRequest(volume_id=volume.volume_id, target_path=target)
        )

    def unstage(self, volume: csi_pb2.Volume, staging: str) -> None:
        self.node.NodeUnstageVolume(
            csi_pb2.NodeUnstageVolumeRequest(volume_id=volume.volume_id, staging_target_path=staging)
        )

    def fuse_pids(self) -> list[int]:
        # -ww: never cut the command line (ps follows COLUMNS, which test runners set).
        out = subprocess.run(
            ["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True, check=True
        ).stdout
        plugins = str(self.root / "plugins")
        return [
            int(line.split()[0])
            for line in out.splitlines()
            if "-m csi.fusestandin --master-addrs" in line and plugins in line
        ]

    def refcounts(self) -> dict[str, int]:
        state = json.loads((self.root / "state" / names.CSI_STATE_FILE).read_text())
        return {key: len(entry["volumes"]) for key, entry in state["mounts"].items()}

    def fuse_starts(self) -> int:
        log = (self.root / "driver.log").read_text().splitlines()
        return sum(1 for line in log if '"started FUSE"' in line)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.channel is not None:
            self.channel.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(15)


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[Driver]:
    # Unix socket paths are short: keep the tree under a short directory.
    d = Driver(tmp_path)
    d.start()
    try:
        yield d
    finally:
        d.stop()
        for pid in d.fuse_pids():
            os.kill(pid, signal.SIGKILL)
        for m in reversed(mounts.mount_table()):
            if m.mount_point.startswith(str(tmp_path)):
                mounts.unmount(m.mount_point, lazy=True)


def leftovers(d: Driver) -> list[str]:
    return [m.mount_point for m in mounts.mount_table() if m.mount_point.startswith(str(d.root))]


def test_volumes_on_one_key_share_one_fuse_and_unstaging_all_stops_it(driver: Driver) -> None:
    volumes = [driver.create(f"pv-{i}") for i in range(3)]
    staged = [driver.stage(v) for v in volumes]
    targets = {
        v.volume_id: [str(driver.root / "pods" / f"{i}-{t}") for t in "ab"] for i, v in enumerate(volumes)
    }
    for v, s in zip(volumes, staged, strict=True):
        for target in targets[v.volume_id]:
            driver.publish(v, s, target)
    assert len(driver.fuse_pids()) == 1
    assert list(driver.refcounts().values()) == [3]

    first, second = targets[volumes[0].volume_id]
    Path(first, "hello").write_text("through one target")
    assert Path(second, "hello").read_text() == "through one target"
    assert not Path(targets[volumes[1].volume_id][0], "hello").exists()  # each volume its own directory

    other = driver.create("elsewhere", fs_path="/other")
    driver.stage(other)
    assert len(driver.fuse_pids()) == 2  # another fs-path, another FUSE

    for v in volumes:
        for target in targets[v.volume_id]:
            driver.unpublish(v, target)
        assert len(driver.fuse_pids()) == 2  # unpublish never touches the shared FUSE
    for v, s in zip(volumes, staged, strict=True):
        driver.unstage(v, s)
    deadline = time.monotonic() + 10
    while len(driver.fuse_pids()) != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(driver.fuse_pids()) == 1
    assert all(str(driver.root / "pods") not in p for p in leftovers(driver))
    assert len(driver.refcounts()) == 1


def test_fifty_concurrent_stage_and_publish_on_one_key_start_one_fuse(driver: Driver) -> None:
    volumes = [driver.create(f"c-{i}") for i in range(50)]

    def stage_and_publish(i: int) -> None:
        staging = driver.stage(volumes[i])
        driver.publish(volumes[i], staging, str(driver.root / "pods" / f"c{i}"))

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(stage_and_publish, range(50)))
    assert driver.fuse_starts() == 1
    assert list(driver.refcounts().values()) == [50]
    assert len(driver.fuse_pids()) == 1


def test_kill_9_of_the_driver_and_of_the_fuse_recover(driver: Driver) -> None:
    volumes = [driver.create(f"k-{i}") for i in range(2)]
    staged = [driver.stage(v) for v in volumes]
    targets = [str(driver.root / "pods" / f"k{i}") for i in range(2)]
    for v, s, t in zip(volumes, staged, targets, strict=True):
        driver.publish(v, s, t)
    Path(targets[0], "data").write_text("kept")
    (fuse,) = driver.fuse_pids()

    driver.kill()
    driver.start()
    assert driver.fuse_pids() == [fuse]  # adopted, not restarted
    assert list(driver.refcounts().values()) == [2]
    assert Path(targets[0], "data").read_text() == "kept"

    os.kill(fuse, signal.SIGKILL)
    deadline = time.monotonic() + 15
    while True:
        pids = driver.fuse_pids()
        try:
            if pids and pids != [fuse] and Path(targets[0], "data").read_text() == "kept":
                break
        except OSError:
            pass  # still the dead mount
        assert time.monotonic() < deadline, (pids, leftovers(driver))
        time.sleep(0.1)
    assert list(driver.refcounts().values()) == [2]

    for v, s, t in zip(volumes, staged, targets, strict=True):
        driver.unpublish(v, t)
        driver.unstage(v, s)
    assert driver.fuse_pids() == []
    assert leftovers(driver) == []
