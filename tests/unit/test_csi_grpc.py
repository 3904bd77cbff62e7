"""Identity and Controller services over real gRPC: the server runs in-process on a unix socket (its
own event loop in a thread) and the tests call it through the generated client stubs, so requests and
answers cross the wire exactly as kubelet's and the provisioner's would."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Coroutine, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest

from csi.backends.backend import BackendPathError, Cluster, LocalBackend
from csi.proto import csi_pb2, csi_pb2_grpc
from csi.rpc.controller_service import ControllerServicer
from csi.rpc.identity import IdentityServicer
from csi.rpc.server import CsiServer, EndpointError, socket_path
from kubectl_fluid.api import names

REPO = Path(__file__).resolve().parents[2]
MASTERS = "master-0.cache:8995,master-1.cache:8995"
CLUSTER = names.cluster_id(MASTERS)
GIB = 1 << 30
Mode = csi_pb2.VolumeCapability.AccessMode
T = TypeVar("T")


class LoopThread:
    """An event loop in a daemon thread: the aio server lives there while tests block on a client."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


@dataclass
class Driver:
    identity: csi_pb2_grpc.IdentityStub
    controller: csi_pb2_grpc.ControllerStub
    node: csi_pb2_grpc.NodeStub
    channel: grpc.Channel
    data: Path
    sock: Path


@pytest.fixture
def short_dir() -> Iterator[Path]:
    # A unix socket path must fit 107 bytes; pytest's tmp_path can be longer than that.
    path = Path(tempfile.mkdtemp(prefix="csi-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def start(loop: LoopThread, sock: Path, data: Path) -> CsiServer:
    # Built here, outside the loop that runs it, as fluid-csi's main() does.
    server = CsiServer(
        str(sock), identity=IdentityServicer(), controller=ControllerServicer(LocalBackend(data))
    )
    loop.run(server.start())
    return server


@pytest.fixture
def driver(short_dir: Path) -> Iterator[Driver]:
    loop = LoopThread()
    sock, data = short_dir / "csi.sock", short_dir / "data"
    server = start(loop, sock, data)
    channel = grpc.insecure_channel(f"unix://{sock}")
    try:
        yield Driver(
            identity=csi_pb2_grpc.IdentityStub(channel),
            controller=csi_pb2_grpc.ControllerStub(channel),
            node=csi_pb2_grpc.NodeStub(channel),
            channel=channel,
            data=data,
            sock=sock,
        )
    finally:
        channel.close()
        loop.run(server.stop(0))
        loop.close()


def mount_cap(mode: Mode.Mode.ValueType = Mode.SINGLE_NODE_WRITER) -> csi_pb2.VolumeCapability:
    return csi_pb2.VolumeCapability(mount=csi_pb2.VolumeCapability.MountVolume(), access_mode=Mode(mode=mode))


def create_request(
    name: str = "pvc-1", capacity: int = GIB, overrides: Mapping[str, str] | None = None, **params: str
) -> csi_pb2.CreateVolumeRequest:
    """A valid request; ``params`` (``fs_path=...``) and ``overrides`` (literal keys) change parameters."""
    parameters = {names.PARAM_MASTER_ADDRS: MASTERS, names.PARAM_PATH_TYPE: "DirectoryOrCreate"}
    parameters.update({key.replace("_", "-"): value for key, value in params.items()})
    parameters.update(overrides or {})
    return csi_pb2.CreateVolumeRequest(
        name=name,
        capacity_range=csi_pb2.CapacityRange(required_bytes=capacity),
        volume_capabilities=[mount_cap()],
        parameters=parameters,
    )


def rpc_error(call: object, request: object) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call(request)  # type: ignore[operator]
    return caught.value


def code_and_details(err: grpc.RpcError) -> tuple[grpc.StatusCode, str]:
    return err.code(), err.details() or ""


# --- Identity ---------------------------------------------------------------------------------------


def test_plugin_info_names_the_driver_and_a_version(driver: Driver) -> None:
    info = driver.identity.GetPluginInfo(csi_pb2.GetPluginInfoRequest())
    assert info.name == names.CSI_DRIVER
    assert info.vendor_version


def test_plugin_capabilities_report_the_controller_service(driver: Driver) -> None:
    caps = driver.identity.GetPluginCapabilities(csi_pb2.GetPluginCapabilitiesRequest())
    assert [c.service.type for c in caps.capabilities] == [
        csi_pb2.PluginCapability.Service.CONTROLLER_SERVICE
    ]


def test_probe_reports_ready_explicitly(driver: Driver) -> None:
    probe = driver.identity.Probe(csi_pb2.ProbeRequest())
    assert probe.HasField("ready")
    assert probe.ready.value is True


# --- Controller: capabilities and unserved methods --------------------------------------------------


def test_controller_capabilities_are_create_delete_only(driver: Driver) -> None:
    caps = driver.controller.ControllerGetCapabilities(csi_pb2.ControllerGetCapabilitiesRequest())
    assert [c.rpc.type for c in caps.capabilities] == [
        csi_pb2.ControllerServiceCapability.RPC.CREATE_DELETE_VOLUME
    ]


@pytest.mark.parametrize(
    "method", ["/csi.v1.Controller/ListVolumes", "/csi.v1.Controller/ControllerPublishVolume"]
)
def test_methods_not_served_answer_unimplemented(driver: Driver, method: str) -> None:
    call: grpc.UnaryUnaryMultiCallable[bytes, bytes] = driver.channel.unary_unary(
        method, request_serializer=None, response_deserializer=None
    )
    assert rpc_error(call, b"").code() == grpc.StatusCode.UNIMPLEMENTED


def test_node_service_is_absent_in_controller_mode(driver: Driver) -> None:
    err = rpc_error(driver.node.NodeGetCapabilities, csi_pb2.NodeGetCapabilitiesRequest())
    assert err.code() == grpc.StatusCode.UNIMPLEMENTED


# --- CreateVolume / DeleteVolume --------------------------------------------------------------------


def test_create_volume_makes_the_directory_and_answers_handle_and_context(driver: Driver) -> None:
    volume = driver.controller.CreateVolume(create_request(fs_path="/team/a")).volume
    assert volume.volume_id == names.volume_handle(CLUSTER, "/team/a", "pvc-1")
    assert volume.capacity_bytes == GIB
    assert (driver.data / CLUSTER / "team/a/pvc-1").is_dir()
    context = dict(volume.volume_context)
    assert context[names.PARAM_CLUSTER_ID] == CLUSTER
    assert context[names.PARAM_CURVINE_PATH] == "/team/a/pvc-1"
    assert context[names.PARAM_VOLUME_HANDLE] == volume.volume_id
    assert context[names.PARAM_MASTER_ADDRS] == MASTERS
    assert context[names.PARAM_FS_PATH] == "/team/a"


def test_create_volume_at_the_root_has_no_double_slash(driver: Driver) -> None:
    volume = driver.controller.CreateVolume(create_request()).volume
    assert volume.volume_id == f"{CLUSTER}@/@pvc-1"
    assert volume.volume_context[names.PARAM_CURVINE_PATH] == "/pvc-1"


def test_create_volume_twice_returns_the_same_volume(driver: Driver) -> None:
    first = driver.controller.CreateVolume(create_request()).volume
    second = driver.controller.CreateVolume(create_request()).volume
    assert first == second


def test_create_volume_again_with_a_capacity_it_does_not_fit_is_already_exists(driver: Driver) -> None:
    driver.controller.CreateVolume(create_request(capacity=GIB))
    err = rpc_error(driver.controller.CreateVolume, create_request(capacity=2 * GIB))
    assert err.code() == grpc.StatusCode.ALREADY_EXISTS


def test_create_volume_again_with_other_parameters_is_already_exists(driver: Driver) -> None:
    driver.controller.CreateVolume(create_request())
    err = rpc_error(driver.controller.CreateVolume, create_request(fs_path="/elsewhere"))
    assert err.code() == grpc.StatusCode.ALREADY_EXISTS


def test_concurrent_creates_of_one_name_all_get_one_volume(driver: Driver) -> None:
    with ThreadPoolExecutor(16) as pool:
        volumes = list(pool.map(lambda _: driver.controller.CreateVolume(create_request()).volume, range(32)))
    assert len({v.volume_id for v in volumes}) == 1


def test_a_restarted_controller_answers_a_repeat_from_the_filesystem(driver: Driver, short_dir: Path) -> None:
    first = driver.controller.CreateVolume(create_request()).volume
    loop = LoopThread()
    other = start(loop, short_dir / "other.sock", driver.data)  # fresh memory, same data
    try:
        with grpc.insecure_channel(other.target) as channel:
            again = csi_pb2_grpc.ControllerStub(channel).CreateVolume(create_request()).volume
    finally:
        loop.run(other.stop(0))
        loop.close()
    assert again.volume_id == first.volume_id


def test_directory_path_type_needs_the_directory(driver: Driver) -> None:
    request = create_request(path_type="Directory")
    err = rpc_error(driver.controller.CreateVolume, request)
    code, details = code_and_details(err)
    assert code == grpc.StatusCode.FAILED_PRECONDITION
    assert "/pvc-1" in details
    assert "DirectoryOrCreate" in details
    (driver.data / CLUSTER / "pvc-1").mkdir(parents=True)
    assert driver.controller.CreateVolume(request).volume.volume_id == f"{CLUSTER}@/@pvc-1"


def test_delete_volume_removes_the_directory_and_is_idempotent(driver: Driver) -> None:
    volume = driver.controller.CreateVolume(create_request(fs_path="/team")).volume
    (driver.data / CLUSTER / "team/pvc-1/file").write_text("data")
    for _ in range(2):
        driver.controller.DeleteVolume(csi_pb2.DeleteVolumeRequest(volume_id=volume.volume_id))
        assert not (driver.data / CLUSTER / "team/pvc-1").exists()
    assert (driver.data / CLUSTER / "team").is_dir()  # the fs-path stays
    # The name is free again: a new volume of that name is created, with another capacity.
    assert driver.controller.CreateVolume(create_request(fs_path="/team", capacity=3 * GIB)).volume


@pytest.mark.parametrize(
    "volume_id", ["no-such-volume", "abc@/@x", f"{CLUSTER}@/a/../b@x", f"{CLUSTER}@/@.."]
)
def test_delete_of_an_unknown_or_foreign_id_succeeds_and_touches_nothing(
    driver: Driver, volume_id: str
) -> None:
    (driver.data / CLUSTER / "b/x").mkdir(parents=True)
    driver.controller.DeleteVolume(csi_pb2.DeleteVolumeRequest(volume_id=volume_id))
    assert (driver.data / CLUSTER / "b/x").is_dir()


# --- invalid arguments ------------------------------------------------------------------------------


def test_create_without_name_is_invalid_and_says_name(driver: Driver) -> None:
    request = create_request()
    request.ClearField("name")
    code, details = code_and_details(rpc_error(driver.controller.CreateVolume, request))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "name" in details


def test_create_without_capabilities_is_invalid_and_says_which_field(driver: Driver) -> None:
    request = create_request()
    request.ClearField("volume_capabilities")
    code, details = code_and_details(rpc_error(driver.controller.CreateVolume, request))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "volume_capabilities" in details


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({names.PARAM_MASTER_ADDRS: ""}, names.PARAM_MASTER_ADDRS),
        ({names.PARAM_MASTER_ADDRS: "host-without-port"}, names.PARAM_MASTER_ADDRS),
        ({names.PARAM_FS_PATH: "/a/../b"}, names.PARAM_FS_PATH),
        ({names.PARAM_FS_PATH: "relative"}, names.PARAM_FS_PATH),
        ({names.PARAM_FS_PATH: "/a@b"}, names.PARAM_FS_PATH),
        ({names.PARAM_PATH_TYPE: "File"}, names.PARAM_PATH_TYPE),
        ({"io-threads": "-1"}, "io-threads"),
        ({"io-threads": "9" * 5000}, "io-threads"),  # past Python's int() limit
        ({"no-such-key": "1"}, "no-such-key"),
    ],
)
def test_invalid_parameters_are_invalid_argument_naming_the_key(
    driver: Driver, params: dict[str, str], named: str
) -> None:
    code, details = code_and_details(
        rpc_error(driver.controller.CreateVolume, create_request(overrides=params))
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert f'"{named}"' in details


def test_missing_master_addrs_is_invalid_argument(driver: Driver) -> None:
    request = create_request()
    del request.parameters[names.PARAM_MASTER_ADDRS]
    code, details = code_and_details(rpc_error(driver.controller.CreateVolume, request))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert names.PARAM_MASTER_ADDRS in details


@pytest.mark.parametrize("name", ["a/b", "a@b", "..", "x\ny"])
def test_a_name_that_cannot_be_a_directory_is_invalid(driver: Driver, name: str) -> None:
    err = rpc_error(driver.controller.CreateVolume, create_request(name=name))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_block_access_clone_and_bad_capacity_are_invalid(driver: Driver) -> None:
    block = create_request()
    block.volume_capabilities[0].block.SetInParent()
    clone = create_request()
    clone.volume_content_source.volume.volume_id = "x"
    no_mode = create_request()
    no_mode.volume_capabilities[0].ClearField("access_mode")
    inverted = create_request()
    inverted.capacity_range.limit_bytes = 1
    for request in (block, clone, no_mode, inverted):
        assert rpc_error(driver.controller.CreateVolume, request).code() == grpc.StatusCode.INVALID_ARGUMENT


def test_delete_without_volume_id_is_invalid(driver: Driver) -> None:
    code, details = code_and_details(rpc_error(driver.controller.DeleteVolume, csi_pb2.DeleteVolumeRequest()))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "volume_id" in details


# --- ValidateVolumeCapabilities ---------------------------------------------------------------------


def test_validate_confirms_mount_access_in_every_mode(driver: Driver) -> None:
    volume = driver.controller.CreateVolume(create_request()).volume
    caps = [mount_cap(mode) for mode in (Mode.SINGLE_NODE_WRITER, Mode.MULTI_NODE_MULTI_WRITER)]
    answer = driver.controller.ValidateVolumeCapabilities(
        csi_pb2.ValidateVolumeCapabilitiesRequest(volume_id=volume.volume_id, volume_capabilities=caps)
    )
    assert list(answer.confirmed.volume_capabilities) == caps


def test_validate_does_not_confirm_block_access(driver: Driver) -> None:
    volume = driver.controller.CreateVolume(create_request()).volume
    block = csi_pb2.VolumeCapability(
        block=csi_pb2.VolumeCapability.BlockVolume(), access_mode=Mode(mode=Mode.SINGLE_NODE_WRITER)
    )
    answer = driver.controller.ValidateVolumeCapabilities(
        csi_pb2.ValidateVolumeCapabilitiesRequest(volume_id=volume.volume_id, volume_capabilities=[block])
    )
    assert not answer.HasField("confirmed")
    assert "block" in answer.message


def test_validate_a_static_volume_through_its_context(driver: Driver) -> None:
    (driver.data / CLUSTER / "static/dir").mkdir(parents=True)
    context = {names.PARAM_MASTER_ADDRS: MASTERS, names.PARAM_CURVINE_PATH: "/static/dir"}
    answer = driver.controller.ValidateVolumeCapabilities(
        csi_pb2.ValidateVolumeCapabilitiesRequest(
            volume_id="any-unique-handle", volume_context=context, volume_capabilities=[mount_cap()]
        )
    )
    assert answer.HasField("confirmed")


def test_validate_errors(driver: Driver) -> None:
    validate = driver.controller.ValidateVolumeCapabilities
    missing = csi_pb2.ValidateVolumeCapabilitiesRequest(volume_id="nope", volume_capabilities=[mount_cap()])
    assert rpc_error(validate, missing).code() == grpc.StatusCode.NOT_FOUND
    no_id = csi_pb2.ValidateVolumeCapabilitiesRequest(volume_capabilities=[mount_cap()])
    assert rpc_error(validate, no_id).code() == grpc.StatusCode.INVALID_ARGUMENT
    no_caps = csi_pb2.ValidateVolumeCapabilitiesRequest(volume_id="nope")
    assert rpc_error(validate, no_caps).code() == grpc.StatusCode.INVALID_ARGUMENT


# --- the server -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        ("unix:///run/csi/csi.sock", "/run/csi/csi.sock"),
        ("unix:/run/c.sock", "/run/c.sock"),
        ("/a/b.sock", "/a/b.sock"),
    ],
)
def test_endpoint_spellings(endpoint: str, expected: str) -> None:
    assert socket_path(endpoint) == Path(expected)


@pytest.mark.parametrize(
    "endpoint", ["tcp://127.0.0.1:10000", "unix://relative/csi.sock", "unix:", "/" + "x" * 120]
)
def test_endpoints_not_served(endpoint: str) -> None:
    with pytest.raises(EndpointError):
        socket_path(endpoint)


def test_a_stale_socket_is_replaced_and_removed_at_stop(short_dir: Path) -> None:
    sock = short_dir / "csi.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(sock))  # bound, never listening: what a killed process leaves
    stale.close()
    loop = LoopThread()
    try:
        server = start(loop, sock, short_dir / "data")
        with grpc.insecure_channel(server.target) as channel:
            assert csi_pb2_grpc.IdentityStub(channel).Probe(csi_pb2.ProbeRequest()).ready.value
        loop.run(server.stop(0))
        assert not sock.exists()
    finally:
        loop.close()


def test_a_successors_socket_is_left_in_place_at_stop(short_dir: Path) -> None:
    # A rolling restart: the new instance took the path over (its socket replaced ours) before the
    # old one stopped; the old one's stop must not remove the new one's endpoint.
    sock = short_dir / "csi.sock"
    loop = LoopThread()
    try:
        server = start(loop, sock, short_dir / "data")
        sock.unlink()
        successor = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        successor.bind(str(sock))
        successor.listen()
        try:
            loop.run(server.stop(0))
            assert sock.is_socket()
        finally:
            successor.close()
    finally:
        loop.close()


def test_a_live_socket_or_a_plain_file_is_never_taken_over(driver: Driver, short_dir: Path) -> None:
    loop = LoopThread()
    try:
        with pytest.raises(EndpointError, match="in use"):
            start(loop, driver.sock, driver.data)
        plain = short_dir / "plain"
        plain.write_text("not a socket")
        with pytest.raises(EndpointError, match="not a socket"):
            start(loop, plain, driver.data)
        assert plain.read_text() == "not a socket"
    finally:
        loop.close()
    # The live server is untouched.
    assert driver.identity.Probe(csi_pb2.ProbeRequest()).ready.value


def test_importing_the_stubs_without_generating_them_says_what_to_run(tmp_path: Path) -> None:
    (tmp_path / "csi/proto").mkdir(parents=True)
    (tmp_path / "csi/__init__.py").write_text("")
    shutil.copy(REPO / "csi/proto/__init__.py", tmp_path / "csi/proto/__init__.py")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", "import csi.proto"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "make csi-stubs" in result.stderr


# --- LocalBackend -----------------------------------------------------------------------------------


def test_local_backend_refuses_paths_outside_a_cluster(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path)
    (tmp_path / CLUSTER).mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / CLUSTER / "link").symlink_to(tmp_path / "outside")
    ours = Cluster(CLUSTER)
    for cluster, path in [(Cluster("../x"), "/a"), (ours, "/a/../b"), (ours, "a"), (ours, "/link/sub")]:
        with pytest.raises(BackendPathError):
            asyncio.run(backend.mkdirs(cluster, path))
    with pytest.raises(BackendPathError):
        asyncio.run(backend.remove(ours, "/"))
    asyncio.run(backend.remove(ours, "/link"))  # the link goes, not what it points to
    assert (tmp_path / "outside").is_dir()
    assert not (tmp_path / CLUSTER / "link").exists()


def test_fluid_csi_serves_until_sigterm_and_leaves_no_socket(short_dir: Path) -> None:
    sock = short_dir / "csi.sock"
    argv = [sys.executable, "-m", "csi.main", "--mode", "controller", "--endpoint", f"unix://{sock}"]
    argv += ["--backend-root", str(short_dir / "data"), "--log-format", "text"]
    process = subprocess.Popen(argv, cwd=REPO, stderr=subprocess.PIPE, text=True)
    try:
        with grpc.insecure_channel(f"unix://{sock}") as channel:
            grpc.channel_ready_future(channel).result(timeout=30)
            info = csi_pb2_grpc.IdentityStub(channel).GetPluginInfo(csi_pb2.GetPluginInfoRequest())
        assert info.name == names.CSI_DRIVER
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
        assert process.returncode == 0, stderr
        assert not sock.exists()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_help_says_what_each_mount_mode_survives() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "csi.main", "--help"], cwd=REPO, capture_output=True, text=True, check=True
    )
    text = " ".join(run.stdout.split())  # argparse wraps lines
    assert "embedded: FUSE is a child of this process" in text
    assert "survives a restart of this process, not of its container" in text
    assert "standalone: one FUSE pod per mount key" in text
    assert "survives a restart of this process and of its container" in text


@pytest.mark.parametrize("length", [97, 105])
def test_an_endpoint_as_long_as_grpc_binds_is_served(short_dir: Path, length: int) -> None:
    # make up's csi.sock under a deep state dir (pytest's, say) was refused once the server bound a
    # longer private name beside it first: grpc binds at most 105 bytes of path.
    deep = short_dir / ("d" * (length - len(str(short_dir)) - len("/") - len("/x/csi.sock")))
    sock = deep / "x" / "csi.sock"
    sock.parent.mkdir(parents=True)
    assert len(str(sock)) == length
    loop = LoopThread()
    try:
        server = start(loop, sock, short_dir / "data")
        channel = grpc.insecure_channel(f"unix://{sock}")
        info = csi_pb2_grpc.IdentityStub(channel).GetPluginInfo(csi_pb2.GetPluginInfoRequest(), timeout=10)
        assert info.name == names.CSI_DRIVER
        channel.close()
        loop.run(server.stop(0))
        assert not sock.exists()
    finally:
        loop.close()


def test_an_endpoint_longer_than_grpc_binds_is_refused_naming_it(short_dir: Path) -> None:
    deep = short_dir / ("d" * (106 - len(str(short_dir)) - len("/") - len("/csi.sock")))
    deep.mkdir()
    with pytest.raises(EndpointError, match="longer than 105 bytes"):
        socket_path(f"unix://{deep / 'csi.sock'}")
