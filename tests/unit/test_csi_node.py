"""The node service as a process with real FUSE (the stand-in) and real bind mounts: one FUSE per
mount key shared by volumes, exact refcounts under concurrency, recovery after ``kill -9`` of the
driver and of the FUSE, and nothing left behind."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import pytest

from csi.fuse import mounts
from csi.model.mountkey import volume_source
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


STANDIN = f"{sys.executable} -m csi.standin.fusestandin"
MASTERS = "m1:8995"


class Driver:
    def __init__(self, root: Path, fuse_binary: str = STANDIN, extra: tuple[str, ...] = ()) -> None:
        self.root = root
        self.sock = root / "csi.sock"
        self.fuse_binary, self.extra = fuse_binary, extra
        self.proc: subprocess.Popen[bytes] | None = None
        self.channel: grpc.Channel | None = None

    def start(self) -> None:
        env = {**os.environ, "CURVINE_STANDIN_DATA": str(self.root / "data")}
        argv = [sys.executable, "-m", "csi.main", "--mode", "all", "--endpoint", f"unix://{self.sock}",
                "--node-id", "n1", "--state-dir", str(self.root / "state"),
                "--mount-root", str(self.root / "plugins"), "--backend-root", str(self.root / "data"),
                "--fuse-binary", self.fuse_binary, "--log-format", "json",
                "--no-mirror", *self.extra]  # fmt: skip
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
        params = {"master-addrs": MASTERS, "fs-path": fs_path, "path-type": "DirectoryOrCreate"}
        request = csi_pb2.CreateVolumeRequest(name=name, volume_capabilities=[MOUNT], parameters=params)
        return self.controller.CreateVolume(request).volume

    def stage(self, volume: csi_pb2.Volume, capability: csi_pb2.VolumeCapability = MOUNT) -> str:
        staging = str(self.root / "stage" / volume.volume_id.replace("/", "_"))
        self.node.NodeStageVolume(
            csi_pb2.NodeStageVolumeRequest(
                volume_id=volume.volume_id,
                staging_target_path=staging,
                volume_capability=capability,
                volume_context=volume.volume_context,
            )
        )
        return staging

    def publish(
        self,
        volume: csi_pb2.Volume,
        staging: str,
        target: str,
        capability: csi_pb2.VolumeCapability = MOUNT,
        *,
        readonly: bool = False,
    ) -> None:
        self.node.NodePublishVolume(
            csi_pb2.NodePublishVolumeRequest(
                volume_id=volume.volume_id,
                staging_target_path=staging,
                target_path=target,
                volume_capability=capability,
                readonly=readonly,
                volume_context=volume.volume_context,
            )
        )

    def published(self, name: str) -> tuple[csi_pb2.Volume, str, str]:
        """A new volume, staged and published at one target: the volume, staging path and target."""
        volume = self.create(name)
        staging = self.stage(volume)
        target = str(self.root / "pods" / name)
        self.publish(volume, staging, target)
        return volume, staging, target

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
            if "-m csi.standin.fusestandin --conf" in line and plugins in line
        ]

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = json.loads((self.root / "state" / names.CSI_STATE_FILE).read_text())
        return state

    def source(self, volume: csi_pb2.Volume) -> str:
        """Where the driver bound the volume's directory (its pods' binds come from there)."""
        for entry in self.state()["mounts"].values():
            if volume.volume_id in entry["volumes"]:
                return volume_source(entry["mnt_path"], volume.volume_id)
        raise AssertionError(f"{volume.volume_id} is not staged")

    def refcounts(self) -> dict[str, int]:
        return {key: len(entry["volumes"]) for key, entry in self.state()["mounts"].items()}

    def backing(self, curvine_path: str) -> Path:
        """Where the FUSE stand-in keeps a cache path: what a tenant changes through their mount."""
        return self.root / "data" / names.cluster_id(MASTERS) / curvine_path.lstrip("/")

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


@contextlib.contextmanager
def running(d: Driver) -> Iterator[Driver]:
    """``d`` started; afterwards stopped, with no FUSE process and no mount of its tree left."""
    d.start()
    try:
        yield d
    finally:
        d.stop()
        for pid in d.fuse_pids():
            os.kill(pid, signal.SIGKILL)
        for m in reversed(mounts.mount_table()):
            if m.mount_point.startswith(str(d.root)):
                mounts.unmount(m.mount_point, lazy=True)


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[Driver]:
    with running(Driver(tmp_path)) as d:
        yield d


def leftovers(d: Driver) -> list[str]:
    """Mounts beneath the driver's tree (the tree itself may be a mount: see shared_root)."""
    return [m.mount_point for m in mounts.mount_table() if m.mount_point.startswith(f"{d.root}/")]


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


@pytest.fixture
def shared_root(tmp_path: Path) -> Iterator[Path]:
    """The driver's tree on a shared mount of its own, as kubelet makes its root dir (rshared)."""
    root = tmp_path / "kubelet"
    root.mkdir()
    subprocess.run(["mount", "--bind", str(root), str(root)], check=True)
    subprocess.run(["mount", "--make-shared", str(root)], check=True)
    try:
        yield root
    finally:
        subprocess.run(["umount", "-R", "-l", str(root)], check=False)


class Container:
    """A running container's view of a target: runc binds the volume at the container's own path, in
    the container's own mount namespace, a slave copy (HostToContainer propagation)."""

    def __init__(self, target: str, view: Path) -> None:
        view.mkdir()
        self.view = view
        script = f"mount --bind {target} {view} && mount --make-rslave {view} && exec sleep 600"
        self.proc = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "slave", "sh", "-c", script], start_new_session=True
        )
        deadline = time.monotonic() + 10
        while self.read() is None or self.read().startswith("cat:"):  # type: ignore[union-attr]
            assert time.monotonic() < deadline, self.read()
            time.sleep(0.05)

    def read(self) -> str | None:
        run = subprocess.run(
            ["nsenter", f"--mount=/proc/{self.proc.pid}/ns/mnt", "cat", f"{self.view}/data"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        return run.stdout if run.returncode == 0 else run.stderr

    def reads_within(self, expected: str, seconds: float) -> str | None:
        deadline = time.monotonic() + seconds
        seen = self.read()
        while seen != expected and time.monotonic() < deadline:
            time.sleep(0.2)
            seen = self.read()
        return seen

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def kill_fuse_and_wait_for_its_successor(driver: Driver, target: str) -> None:
    (fuse,) = driver.fuse_pids()
    os.kill(fuse, signal.SIGKILL)
    deadline = time.monotonic() + 15
    while not (driver.fuse_pids() not in ([], [fuse]) and _reads(target) == "kept"):
        assert time.monotonic() < deadline, leftovers(driver)
        time.sleep(0.1)


def test_a_running_containers_copy_of_a_target_sees_the_restarted_fuse(shared_root: Path) -> None:
    # A container's volume with HostToContainer propagation is a slave copy of the target in a mount
    # namespace of its own. Re-binding by unmounting the target first left that copy on the dead FUSE
    # ("Transport endpoint is not connected" in the running pod, on the real node): the new bind
    # must reach the copy through the old target mount.
    with running(Driver(shared_root)) as driver:
        volume = driver.create("pv-running")
        target = str(driver.root / "pods" / "uid" / "mount")
        staging = driver.stage(volume)
        driver.publish(volume, staging, target)
        Path(target, "data").write_text("kept")
        container = Container(target, shared_root.parent / "container-data")
        try:
            assert container.read() == "kept"
            kill_fuse_and_wait_for_its_successor(driver, target)
            assert container.reads_within("kept", 5) == "kept"
        finally:
            container.stop()
        driver.unpublish(volume, target)
        driver.unstage(volume, staging)
        assert not mounts.mounted_at(target)
        assert driver.fuse_pids() == []


def test_after_a_fuse_restart_one_pods_unpublish_leaves_the_other_pods_volume_alone(
    shared_root: Path,
) -> None:
    # Two pods of one volume on a shared kubelet dir. The restarted FUSE is bound again on both
    # targets; a bind made on one target must not travel to the other's (they were peers of the
    # first FUSE's mount), or unmounting the second pod's target takes the first pod's new bind with
    # it, and the first pod's container is left on the dead FUSE.
    with running(Driver(shared_root)) as driver:
        volume = driver.create("pv-two")
        staging = driver.stage(volume)
        targets = [str(driver.root / "pods" / uid / "mount") for uid in ("a", "b")]
        for target in targets:
            driver.publish(volume, staging, target)
        Path(targets[0], "data").write_text("kept")
        containers = [Container(t, shared_root.parent / f"container-{i}") for i, t in enumerate(targets)]
        try:
            assert [c.read() for c in containers] == ["kept", "kept"]
            kill_fuse_and_wait_for_its_successor(driver, targets[0])
            assert [c.reads_within("kept", 5) for c in containers] == ["kept", "kept"]
            assert _reads(targets[1]) == "kept"

            containers.pop().stop()  # pod b goes: kubelet stops its container, then unpublishes
            driver.unpublish(volume, targets[1])
            assert not mounts.mounted_at(targets[1])
            assert _reads(targets[0]) == "kept"
            assert containers[0].read() == "kept"
            assert driver.refcounts() == {next(iter(driver.refcounts())): 1}
        finally:
            for container in containers:
                container.stop()
        driver.unpublish(volume, targets[0])
        driver.unstage(volume, staging)
        assert leftovers(driver) == []
        assert driver.fuse_pids() == []


def _reads(path: str) -> str | None:
    try:
        return Path(path, "data").read_text()
    except OSError:
        return None


# --- bind sources beneath the FUSE mount ------------------------------------------------------------


def static_volume(volume_id: str, curvine_path: str) -> csi_pb2.Volume:
    """A static PV's volume: any handle, the cache path named in its context."""
    context = {names.PARAM_MASTER_ADDRS: MASTERS, names.PARAM_CURVINE_PATH: curvine_path}
    return csi_pb2.Volume(volume_id=volume_id, volume_context=context)


def stage_error(driver: Driver, volume: csi_pb2.Volume) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        driver.stage(volume)
    return caught.value


@pytest.fixture
def host_secrets(tmp_path: Path) -> Path:
    """A host directory no pod may see (say /var/lib/kubelet/pods, with every pod's tokens)."""
    secrets = tmp_path / "host-secrets"
    (secrets / "pv").mkdir(parents=True)
    for directory in (secrets, secrets / "pv"):
        (directory / "token").write_text("a service account token")
    return secrets


@pytest.mark.parametrize("link", ["/pv", "/team"], ids=["the-volume-itself", "a-parent"])
def test_a_symlink_on_the_volumes_path_is_refused_and_nothing_is_bound(
    driver: Driver, host_secrets: Path, link: str
) -> None:
    # A tenant who controls the cache's contents made the link (through their own volume, say).
    driver.backing(link).parent.mkdir(parents=True, exist_ok=True)
    driver.backing(link).symlink_to(host_secrets)
    volume = static_volume("static-link", "/pv" if link == "/pv" else "/team/pv")

    err = stage_error(driver, volume)
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION, err.details()
    assert volume.volume_context[names.PARAM_CURVINE_PATH] in (err.details() or "")
    assert "symbolic link" in (err.details() or "")
    staging = driver.root / "stage" / "static-link"
    assert not mounts.mounted_at(staging)
    assert not (staging / "token").exists()
    # This call started the key's FUSE, so its failure stopped it again.
    assert driver.refcounts() == {}
    assert driver.fuse_pids() == []


def test_recovery_does_not_follow_a_symlink_that_replaced_a_volumes_directory(
    driver: Driver, host_secrets: Path
) -> None:
    volume, staging, target = driver.published("pv-r")
    (fuse,) = driver.fuse_pids()
    # The node restarts: the driver and its FUSE die and nothing stays mounted.
    driver.kill()
    os.kill(fuse, signal.SIGKILL)
    for m in reversed(mounts.mount_table()):
        if m.mount_point.startswith(str(driver.root)):
            mounts.unmount(m.mount_point, lazy=True)
    backing = driver.backing(volume.volume_context[names.PARAM_CURVINE_PATH])
    backing.rmdir()
    backing.symlink_to(host_secrets)

    driver.start()  # recovery: a new FUSE, then the staging path and the target bound again
    assert len(driver.fuse_pids()) == 1
    assert not (Path(staging) / "token").exists()
    assert not (Path(target) / "token").exists()
    assert not mounts.mounted_at(staging)
    assert not mounts.mounted_at(target)
    (entry,) = driver.state()["mounts"].values()
    assert entry["phase"] == "Broken"
    log = (driver.root / "driver.log").read_text()
    assert "symbolic link" in log
    driver.unpublish(volume, target)
    driver.unstage(volume, staging)
    assert driver.fuse_pids() == []


# --- a repeated NodeStage (kubelet retries) ---------------------------------------------------------


def break_mount_at(path: str, scratch: Path) -> None:
    """Put a dead FUSE mount (ENOTCONN) at ``path`` instead of what is there: what a staging bind
    into a FUSE that died looks like."""
    mounts.unmount(path, lazy=True)
    dead = scratch / "dead-fuse"
    env = {**os.environ, "CURVINE_STANDIN_DATA": str(scratch / "dead-data")}
    argv = [*STANDIN.split(), "--master-addrs", "m9:1", "--fs-path", "/", "--mnt-path", str(dead)]
    fuse = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert fuse.stdout is not None
    assert fuse.stdout.readline().strip() == b"ready"
    mounts.bind(dead, path)
    fuse.kill()
    fuse.wait()
    mounts.unmount(dead, lazy=True)
    assert mounts.is_broken(path)


def test_a_repeated_stage_remakes_a_broken_source_bind(driver: Driver, tmp_path: Path) -> None:
    volume = driver.create("pv-b")
    staging = driver.stage(volume)
    source = driver.source(volume)
    driver.backing(volume.volume_context[names.PARAM_CURVINE_PATH]).joinpath("f").write_text("served")
    break_mount_at(source, tmp_path)

    driver.stage(volume)  # kubelet's retry
    assert (Path(source) / "f").read_text() == "served"
    assert len(mounts.mounted_at(source)) == 1
    assert not mounts.mounted_at(staging)
    target = str(driver.root / "pods" / "b")
    driver.publish(volume, staging, target)
    assert (Path(target) / "f").read_text() == "served"


def test_publish_onto_a_broken_source_bind_remakes_it_first(driver: Driver, tmp_path: Path) -> None:
    volume = driver.create("pv-p")
    staging = driver.stage(volume)
    source = driver.source(volume)
    driver.backing(volume.volume_context[names.PARAM_CURVINE_PATH]).joinpath("f").write_text("served")
    break_mount_at(source, tmp_path)

    target = str(driver.root / "pods" / "p")
    driver.publish(volume, staging, target)
    assert (Path(target) / "f").read_text() == "served"
    assert (Path(source) / "f").read_text() == "served"


def test_a_staging_bind_an_earlier_version_made_is_taken_off(driver: Driver, tmp_path: Path) -> None:
    # Bound at kubelet's staging path, two volumes of one directory were each other's device
    # references, and kubelet unstaged neither: the staging path is a plain directory now.
    volume = driver.create("pv-old")
    staging = driver.stage(volume)
    mounts.bind(driver.source(volume), staging)
    break_mount_at(staging, tmp_path)
    driver.stage(volume)  # a retry, or the next volume's stage after the upgrade
    assert not mounts.mounted_at(staging)
    mounts.bind(driver.source(volume), staging)
    driver.unstage(volume, staging)
    assert leftovers(driver) == []
    assert driver.fuse_pids() == []


def test_two_volumes_of_one_directory_leave_no_mount_at_either_staging_path(driver: Driver) -> None:
    first = driver.create("pv-one")
    second = static_volume("pv-two", first.volume_context[names.PARAM_CURVINE_PATH])
    stagings = [driver.stage(first), driver.stage(second)]
    # kubelet's device references of a staging path: every other mount of the same source.
    assert [mounts.mounted_at(staging) for staging in stagings] == [[], []]
    for volume, staging in zip((first, second), stagings, strict=True):
        driver.unstage(volume, staging)
    assert leftovers(driver) == []


def test_a_failed_repeat_of_stage_leaves_the_staged_volume_alone(driver: Driver) -> None:
    volume = driver.create("pv-a")
    staging = driver.stage(volume)
    (fuse,) = driver.fuse_pids()
    refcounts = driver.refcounts()
    # The volume's directory is gone from the cache: a retried NodeStage cannot bind it again.
    shutil.rmtree(driver.backing(volume.volume_context[names.PARAM_CURVINE_PATH]))

    err = stage_error(driver, volume)
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION, err.details()
    assert driver.refcounts() == refcounts  # still staged: this call added nothing to take away
    assert driver.fuse_pids() == [fuse]
    assert mounts.mounted_at(driver.source(volume))
    driver.unstage(volume, staging)
    assert driver.fuse_pids() == []


# --- the recorded FUSE pid --------------------------------------------------------------------------


def start_time(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


@pytest.mark.parametrize("record", ["pid-and-start-time", "pid-only"])
def test_a_recorded_pid_reused_by_another_process_is_not_adopted_nor_signalled(
    driver: Driver, record: str
) -> None:
    volume, staging, target = driver.published("pv-pid")
    Path(target, "f").write_text("kept")
    (fuse,) = driver.fuse_pids()
    (key,) = driver.refcounts()
    if record == "pid-and-start-time":
        assert driver.state()["mounts"][key]["pid_start_time"] == start_time(fuse)
    driver.kill()
    # The recorded pid now belongs to an unrelated process (a state file written before start
    # times were recorded has only the pid).
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        state = driver.state()
        entry = state["mounts"][key]
        entry["pid"] = sleeper.pid
        if record == "pid-only":
            entry.pop("pid_start_time", None)
        (driver.root / "state" / names.CSI_STATE_FILE).write_text(json.dumps(state))

        driver.start()
        assert driver.fuse_starts() == 2, "the recorded pid was adopted as the key's FUSE"
        entry = driver.state()["mounts"][key]
        assert entry["pid"] not in (sleeper.pid, fuse)
        assert entry["pid_start_time"] == start_time(entry["pid"])
        assert Path(target, "f").read_text() == "kept"  # bound again, into the new FUSE
        driver.unpublish(volume, target)
        driver.unstage(volume, staging)
        assert sleeper.poll() is None, "an unrelated process was signalled"
    finally:
        sleeper.kill()
        sleeper.wait()
        with contextlib.suppress(ProcessLookupError):
            os.kill(fuse, signal.SIGKILL)  # the first FUSE: replaced, its mount detached


# --- the FUSE binary --------------------------------------------------------------------------------


def readyz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as err:
        return err.code


def with_health(root: Path, **kwargs: Any) -> tuple[Driver, int]:
    """A driver serving /readyz on a free loopback port, and the port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    return Driver(root, extra=("--health-host=127.0.0.1", f"--health-port={port}"), **kwargs), port


@pytest.mark.parametrize("problem", ["missing", "not-executable"])
def test_a_fuse_binary_that_cannot_run_is_named_at_start_and_at_node_stage(
    tmp_path: Path, problem: str
) -> None:
    binary = tmp_path / "opt" / "curvine-fuse"
    if problem == "not-executable":
        binary.parent.mkdir()
        binary.write_text("#!/bin/sh\n")
    unready, port = with_health(tmp_path, fuse_binary=str(binary))
    with running(unready) as driver:
        assert readyz(port) == 503
        log = (tmp_path / "driver.log").read_text()
        assert "--fuse-binary" in log
        assert str(binary) in log

        err = stage_error(driver, driver.create("pv-nofuse"))
        assert err.code() == grpc.StatusCode.FAILED_PRECONDITION, err.details()
        assert f"--fuse-binary {binary}" in (err.details() or "")
        assert driver.refcounts() == {}

        # Installed later: ready, and the volume stages, with no restart.
        binary.parent.mkdir(exist_ok=True)
        binary.write_text(f'#!/bin/sh\nexec {STANDIN} "$@"\n')
        binary.chmod(0o755)
        assert readyz(port) == 200
        driver.stage(driver.create("pv-nofuse"))


def test_a_working_fuse_binary_is_ready(tmp_path: Path) -> None:
    ready, port = with_health(tmp_path)
    with running(ready):
        assert readyz(port) == 200


def test_a_fuse_whose_fs_path_is_gone_from_the_cache_is_broken_with_the_reason_then_ready_again(
    driver: Driver,
) -> None:
    """What a restarted Curvine master without its namespace does to a live curvine-fuse: the mount
    stays, its root answers ENOENT. The FuseMount must not say Ready over it."""
    volume, staging, target = driver.published("pv-gone")
    (fuse,) = driver.fuse_pids()
    root = driver.backing("/")
    aside = root.with_name(root.name + ".aside")
    root.rename(aside)

    def phase() -> tuple[str, str]:
        (entry,) = driver.state()["mounts"].values()
        return entry["phase"], entry.get("reason") or ""

    deadline = time.monotonic() + 15
    while phase()[0] != "Broken":
        assert time.monotonic() < deadline, f"never Broken: {phase()}"
        time.sleep(0.2)
    assert "fs-path / is gone from the cache" in phase()[1]
    assert driver.fuse_pids() == [fuse], "a mount whose root is gone is not remounted"

    aside.rename(root)
    deadline = time.monotonic() + 15
    while phase() != ("Ready", ""):
        assert time.monotonic() < deadline, f"never Ready again: {phase()}"
        time.sleep(0.2)
    driver.unpublish(volume, target)
    driver.unstage(volume, staging)
    assert leftovers(driver) == []
