"""The controller's Curvine backend (a FUSE mount of each cluster's root that the controller owns)
over real gRPC, with the stand-in as its FUSE program here (test_make_up_curvine.py runs it on the
real Curvine): directories made and removed through the mount, the masters of a deleted volume found in
memory or in its PV, never in another volume's PV, and the mounts gone when the service stops."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

from csi.backends import masterips
from csi.backends.backend import BackendPathError, BackendUnavailable, Cluster
from csi.backends.curvinebackend import DEFAULT_DEADLINE, CurvineBackend
from csi.fuse import mounts
from csi.model.volumes import parse_volume_handle
from csi.proto import csi_pb2, csi_pb2_grpc
from csi.rpc.controller_service import ControllerServicer, masters_of_pv
from csi.rpc.identity import IdentityServicer
from csi.rpc.server import CsiServer
from kubectl_fluid.api import names
from tests.unit import hanging_fuse
from tests.unit.test_csi_grpc import LoopThread, create_request

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/dev/fuse").exists(), reason="real FUSE mounts need root and /dev/fuse"
)

MASTERS = "m1.cache:8995"
CLUSTER = names.cluster_id(MASTERS)
STANDIN = [sys.executable, "-m", "csi.standin.fusestandin"]


class Bed:
    """The controller service on a unix socket, its backend mounting stand-ins over ``data``."""

    def __init__(
        self,
        root: Path,
        pvs: dict[str, Mapping[str, Any]],
        command: list[str] = STANDIN,
        deadline: float = DEFAULT_DEADLINE,
        resolve: masterips.Resolver = masterips.resolve,
    ) -> None:
        self.root, self.pvs = root, pvs
        self.data = root / "data"
        os.environ["CURVINE_STANDIN_DATA"] = str(self.data)
        self.loop = LoopThread()
        self.backend = CurvineBackend(command, str(root / "mounts"), deadline=deadline, resolve=resolve)
        self.lookups: list[str] = []
        self.server = self._serve()
        self.channel = grpc.insecure_channel(f"unix://{root / 'csi.sock'}")
        self.controller = csi_pb2_grpc.ControllerStub(self.channel)

    def _serve(self) -> CsiServer:
        async def lookup(name: str) -> Mapping[str, Any] | None:
            self.lookups.append(name)
            return self.pvs.get(name)

        servicer = ControllerServicer(self.backend, lookup)
        server = CsiServer(str(self.root / "csi.sock"), identity=IdentityServicer(), controller=servicer)
        self.loop.run(server.start())
        return server

    def restart(self) -> None:
        """A new controller process: nothing remembered, the same backend tree."""
        self.loop.run(self.server.stop(0))
        self.server = self._serve()

    def close(self) -> None:
        self.channel.close()
        self.loop.run(self.server.stop(0))
        self.loop.run(self.backend.close())
        self.loop.close()
        os.environ.pop("CURVINE_STANDIN_DATA", None)


@contextmanager
def controller(**options: Any) -> Iterator[Bed]:
    root = Path(tempfile.mkdtemp(prefix="cvb-"))  # a short path: the socket's must fit 107 bytes
    b = Bed(root, {}, **options)
    try:
        yield b
    finally:
        b.close()
        left = [m.mount_point for m in mounts.mount_table() if m.mount_point.startswith(str(root))]
        for point in reversed(left):
            mounts.unmount(point, lazy=True)
        shutil.rmtree(root, ignore_errors=True)
        assert not left, f"mounts left after the service stopped: {left}"


@pytest.fixture
def bed() -> Iterator[Bed]:
    with controller() as b:
        yield b


def pv_csi(handle: str, masters: str = MASTERS) -> dict[str, Any]:
    return {
        "driver": names.CSI_DRIVER,
        "volumeHandle": handle,
        "volumeAttributes": {names.PARAM_MASTER_ADDRS: masters},
    }


def create(bed: Bed, name: str, timeout: float | None = None) -> csi_pb2.Volume:
    request = create_request(name)
    request.parameters.clear()
    request.parameters.update(
        {
            names.PARAM_MASTER_ADDRS: MASTERS,
            names.PARAM_FS_PATH: "/vols",
            names.PARAM_PATH_TYPE: names.PATH_TYPE_DIRECTORY_OR_CREATE,
        }
    )
    return bed.controller.CreateVolume(request, timeout=timeout).volume


def test_volumes_are_made_and_removed_through_the_controllers_own_mount(bed: Bed) -> None:
    volume = create(bed, "pvc-a")
    directory = bed.data / CLUSTER / "vols" / "pvc-a"
    assert directory.is_dir()
    mnt = bed.backend.mount_path(CLUSTER)
    assert (mnt / "vols" / "pvc-a").is_dir()  # through the mount, not around it
    assert mounts.mounted_at(str(mnt))
    assert Path(names.fuse_config_path(str(mnt))).is_file()

    bed.controller.DeleteVolume(csi_pb2.DeleteVolumeRequest(volume_id=volume.volume_id))
    assert not directory.exists()
    assert (bed.data / CLUSTER / "vols").is_dir()
    assert bed.lookups == []  # CreateVolume told it the masters

    bed.loop.run(bed.backend.close())
    assert not mounts.mounted_at(str(mnt))
    assert not (bed.root / "mounts" / CLUSTER).exists()


# csi-provisioner's default --timeout: an answer later than this is one it never hears.
PROVISIONER_TIMEOUT = 10.0


def test_a_mount_that_stops_answering_is_replaced_and_the_retry_creates_the_volume(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a curvine-fuse does when its master's pod is replaced (it waits out rpc-timeout-ms on the
    old connection): the call fails UNAVAILABLE before the provisioner's timeout, saying so, the hung
    FUSE is stopped, and the next try mounts the cluster afresh."""
    gates = Path(tempfile.mkdtemp(prefix="cvb-gates-"))
    monkeypatch.setenv(hanging_fuse.GATES_ENV, str(gates))
    with controller(command=hanging_fuse.COMMAND, deadline=1.0) as bed:
        create(bed, "pvc-before")
        hung = bed.backend.fuse.handle(CLUSTER)
        assert hung is not None
        assert hung.pid is not None
        with hanging_fuse.hanging(gates, MASTERS):
            with pytest.raises(grpc.RpcError) as failed:
                create(bed, "pvc-during", timeout=PROVISIONER_TIMEOUT)
            assert failed.value.code() == grpc.StatusCode.UNAVAILABLE, failed.value.details()
            assert f"cluster {CLUSTER} ({MASTERS}): no answer in 1 s" in str(failed.value.details())
            assert "is being replaced" in str(failed.value.details())
            # Stopped behind the answer (SIGTERM, then SIGKILL 5 s on: a hung FUSE may not end at once).
            stopped = time.monotonic() + 30
            while os.path.exists(f"/proc/{hung.pid}") and time.monotonic() < stopped:
                time.sleep(0.05)
            assert not os.path.exists(f"/proc/{hung.pid}")
            assert bed.backend.fuse.handle(CLUSTER) is None
        create(bed, "pvc-during")  # the provisioner's retry
        fresh = bed.backend.fuse.handle(CLUSTER)
        assert fresh is not None
        assert fresh != hung
        assert (bed.data / CLUSTER / "vols" / "pvc-during").is_dir()
    shutil.rmtree(gates, ignore_errors=True)


def test_a_mount_whose_masters_moved_is_replaced_before_it_is_used() -> None:
    """A master's pod replaced: its name resolves to another address, and the next call mounts the
    cluster afresh instead of asking the old mount (which would wait out curvine-fuse's rpc-timeout);
    a lookup that tells nothing keeps the mount."""
    answers = [frozenset({"m1.cache=10.0.0.1"})]

    async def resolve(master_addrs: str) -> masterips.Resolved:
        assert master_addrs == MASTERS
        return answers[-1]

    with controller(resolve=resolve) as bed:
        create(bed, "pvc-1")
        first = bed.backend.fuse.handle(CLUSTER)
        create(bed, "pvc-2")
        assert bed.backend.fuse.handle(CLUSTER) == first  # the same place: the same mount
        answers.append(frozenset())
        create(bed, "pvc-3")
        assert bed.backend.fuse.handle(CLUSTER) == first  # no answer: nothing to go on
        answers.append(frozenset({"m1.cache=10.0.0.7"}))
        create(bed, "pvc-4")
        moved = bed.backend.fuse.handle(CLUSTER)
        assert moved is not None
        assert moved != first
        assert first is not None
        assert not os.path.exists(f"/proc/{first.pid}")
        for name in ("pvc-1", "pvc-2", "pvc-3", "pvc-4"):
            assert (bed.data / CLUSTER / "vols" / name).is_dir()
        create(bed, "pvc-5")
        assert bed.backend.fuse.handle(CLUSTER) == moved


def test_after_a_restart_the_masters_come_from_the_volumes_pv(bed: Bed) -> None:
    volume = create(bed, "pvc-b")
    bed.restart()
    bed.pvs["pvc-b"] = pv_csi(volume.volume_id)
    bed.controller.DeleteVolume(csi_pb2.DeleteVolumeRequest(volume_id=volume.volume_id))
    assert bed.lookups == ["pvc-b"]
    assert not (bed.data / CLUSTER / "vols" / "pvc-b").exists()


@pytest.mark.parametrize(
    "pv",
    [
        None,  # gone
        pv_csi("other@/vols@pvc-c"),  # another volume's PV of that name
        pv_csi(f"{CLUSTER}@/vols@pvc-c", masters="m2.cache:8995"),  # masters of another cluster
        {**pv_csi(f"{CLUSTER}@/vols@pvc-c"), "driver": "other.csi"},
    ],
)
def test_without_its_masters_a_volume_is_not_deleted_and_the_error_says_why(
    bed: Bed, pv: dict[str, Any] | None
) -> None:
    volume = create(bed, "pvc-c")
    bed.restart()
    if pv is not None:
        bed.pvs["pvc-c"] = pv
    with pytest.raises(grpc.RpcError) as caught:
        bed.controller.DeleteVolume(csi_pb2.DeleteVolumeRequest(volume_id=volume.volume_id))
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    assert f"masters of cluster {CLUSTER} are not known" in (caught.value.details() or "")
    assert (bed.data / CLUSTER / "vols" / "pvc-c").is_dir()


def test_a_symlink_in_the_cluster_never_leads_outside(bed: Bed, tmp_path: Path) -> None:
    create(bed, "pvc-d")
    outside = tmp_path / "outside"
    outside.mkdir()
    (bed.data / CLUSTER / "vols" / "link").symlink_to(outside)
    cluster = Cluster(CLUSTER, MASTERS)
    with pytest.raises(BackendPathError):
        bed.loop.run(bed.backend.mkdirs(cluster, "/vols/link/x"))
    bed.loop.run(bed.backend.remove(cluster, "/vols/link"))
    assert outside.is_dir()


def test_unknown_masters_are_refused_before_mounting(tmp_path: Path) -> None:
    backend = CurvineBackend(STANDIN, str(tmp_path / "mounts"))
    with pytest.raises(BackendUnavailable, match="not known"):
        asyncio.run(backend.exists(Cluster(CLUSTER), "/a"))
    assert not (tmp_path / "mounts").exists()


def test_masters_of_pv() -> None:
    handle = parse_volume_handle(f"{CLUSTER}@/vols@pv-1")
    assert handle is not None
    assert masters_of_pv(pv_csi(str(handle), " M1.cache:08995 "), handle) == MASTERS
    assert masters_of_pv(pv_csi(str(handle), "not an address"), handle) is None
    assert masters_of_pv({"driver": names.CSI_DRIVER, "volumeHandle": str(handle)}, handle) is None
