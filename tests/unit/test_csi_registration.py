"""kubelet's plugin registration (pluginregistration.v1), served by the node service itself in place of
the node-driver-registrar sidecar: driven over its real unix socket with the generated client, as
kubelet's plugin watcher calls it (GetInfo, then NotifyRegistrationStatus), in-process and as the
``fluid-csi --mode node`` process the DaemonSet runs."""

from __future__ import annotations

import logging
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from csi.proto import csi_pb2, csi_pb2_grpc, pluginregistration_pb2, pluginregistration_pb2_grpc
from csi.rpc.registration import KubeletRegistration
from csi.rpc.server import EndpointError
from kubectl_fluid.api import names
from tests.unit.test_csi_grpc import LoopThread

REPO = Path(__file__).resolve().parents[2]
KUBELET_SEES = f"{names.KUBELET_PLUGINS_ROOT}/{names.CSI_DRIVER}/csi.sock"
REFUSED = (
    "RegisterPlugin error -- plugin registration failed with err: error updating CSINode object "
    'with CSI driver node info: nodes "n1" not found'
)


@pytest.fixture
def short_dir() -> Iterator[Path]:
    # A unix socket path must fit 107 bytes; pytest's tmp_path can be longer than that.
    path = Path(tempfile.mkdtemp(prefix="reg-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def registry(short_dir: Path) -> Path:
    path = short_dir / "plugins_registry"
    path.mkdir()
    return path


@pytest.fixture
def loop() -> Iterator[LoopThread]:
    thread = LoopThread()
    yield thread
    thread.close()


def stale_socket(path: Path) -> None:
    """What a killed process leaves: a socket file bound once, listened on by nobody."""
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()


def kubelet(path: Path) -> tuple[grpc.Channel, pluginregistration_pb2_grpc.RegistrationStub]:
    channel = grpc.insecure_channel(f"unix://{path}")
    return channel, pluginregistration_pb2_grpc.RegistrationStub(channel)


def notify(path: Path, registered: bool, error: str = "") -> None:
    channel, stub = kubelet(path)
    with channel:
        stub.NotifyRegistrationStatus(
            pluginregistration_pb2.RegistrationStatus(plugin_registered=registered, error=error), timeout=5
        )


def socket_name() -> str:
    return f"{names.CSI_DRIVER}-reg.sock"


# --- in-process: the service on its socket ---------------------------------------------------------


def test_get_info_answers_what_kubelets_csi_handler_validates(registry: Path, loop: LoopThread) -> None:
    registration = KubeletRegistration(registry, KUBELET_SEES)
    loop.run(registration.start())
    try:
        # kubelet's plugin watcher finds the socket by its name in plugins_registry.
        assert registration.path == registry / socket_name()
        assert registration.path.is_socket()
        channel, stub = kubelet(registration.path)
        with channel:
            info = stub.GetInfo(pluginregistration_pb2.InfoRequest(), timeout=1)  # kubelet's 1 s
        assert info.type == "CSIPlugin"
        assert info.name == names.CSI_DRIVER
        assert info.endpoint == KUBELET_SEES
        # kubelet takes the highest 1.x version listed and refuses an empty list.
        assert list(info.supported_versions) == ["1.0.0"]
    finally:
        loop.run(registration.stop())


def test_a_refused_registration_is_the_problem_until_kubelet_accepts_it(
    registry: Path, loop: LoopThread, caplog: pytest.LogCaptureFixture
) -> None:
    registration = KubeletRegistration(registry, KUBELET_SEES)
    loop.run(registration.start())
    try:
        # Before kubelet has said anything there is nothing wrong (no kubelet at all is a fine
        # local run); the node is not yet registered either.
        assert registration.problem() is None
        assert registration.registered is None
        with caplog.at_level(logging.INFO, logger="csi.registration"):
            notify(registration.path, False, REFUSED)
        problem = registration.problem()
        assert problem is not None
        assert REFUSED in problem
        assert registration.registered is False
        refused = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert refused
        assert REFUSED in refused[-1].getMessage()
        # kubelet retries; once it registers the driver, the problem is gone.
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="csi.registration"):
            notify(registration.path, True)
        assert registration.problem() is None
        assert registration.registered is True
        assert any("registered" in r.getMessage() and r.levelno == logging.INFO for r in caplog.records)
    finally:
        loop.run(registration.stop())


def test_a_stale_socket_is_replaced_and_the_socket_removed_at_stop(registry: Path, loop: LoopThread) -> None:
    path = registry / socket_name()
    stale_socket(path)
    registration = KubeletRegistration(registry, KUBELET_SEES)
    loop.run(registration.start())
    try:
        # The stale file refused every connection: answering is the new socket.
        channel, stub = kubelet(path)
        with channel:
            assert stub.GetInfo(pluginregistration_pb2.InfoRequest(), timeout=1).name == names.CSI_DRIVER
        assert registration.socket_problem() is None
    finally:
        loop.run(registration.stop())
    # Gone: kubelet's plugin watcher sees the removal and deregisters the driver. Nothing else is
    # left in kubelet's directory either.
    assert not path.exists()
    assert list(registry.iterdir()) == []


def test_while_serving_the_directory_holds_nothing_kubelet_would_stat_in_vain(
    registry: Path, loop: LoopThread
) -> None:
    # kubelet's plugin watcher stats every file created in the directory, and logs an error for one
    # gone by then; dot files it then ignores. A name gRPC bound before the socket was put in place
    # stays while the server runs, and one a killed instance left is cleared at the next start.
    killed = registry / ".fc5f5e0ff.0"
    stale_socket(killed)
    registration = KubeletRegistration(registry, KUBELET_SEES)
    loop.run(registration.start())
    try:
        assert not killed.exists()
        others = [p for p in registry.iterdir() if p != registration.path]
        assert [p.name[0] for p in others] == ["."]
        assert others[0].stat().st_ino == registration.path.stat().st_ino
    finally:
        loop.run(registration.stop())
    assert list(registry.iterdir()) == []


def test_a_live_socket_or_a_plain_file_is_never_taken_over(registry: Path, loop: LoopThread) -> None:
    first = KubeletRegistration(registry, KUBELET_SEES)
    loop.run(first.start())
    try:
        with pytest.raises(EndpointError, match="in use"):
            loop.run(KubeletRegistration(registry, KUBELET_SEES).start())
        channel, stub = kubelet(first.path)
        with channel:
            assert stub.GetInfo(pluginregistration_pb2.InfoRequest(), timeout=1).type == "CSIPlugin"
    finally:
        loop.run(first.stop())
    first.path.write_text("somebody else's")
    with pytest.raises(EndpointError, match="not a socket"):
        loop.run(KubeletRegistration(registry, KUBELET_SEES).start())
    assert first.path.read_text() == "somebody else's"


def test_a_registry_that_is_not_there_is_refused_naming_the_flags(short_dir: Path, loop: LoopThread) -> None:
    # Creating it would hide the mistake: no kubelet watches a directory it did not make.
    missing = short_dir / "var/lib/kubelet/plugins_registry"
    with pytest.raises(EndpointError) as err:
        loop.run(KubeletRegistration(missing, KUBELET_SEES).start())
    assert str(missing) in str(err.value)
    assert "--plugin-registration-dir" in str(err.value)
    assert "--no-registration" in str(err.value)
    assert not missing.exists()


def test_a_socket_removed_under_it_is_a_liveness_problem(registry: Path, loop: LoopThread) -> None:
    registration = KubeletRegistration(registry, KUBELET_SEES)
    # Not before the socket is made: the node service recovers its mounts first, for a while.
    assert registration.socket_problem() is None
    loop.run(registration.start())
    try:
        registration.path.unlink()  # plugins_registry wiped: kubelet deregistered the driver
        problem = registration.socket_problem()
        assert problem is not None
        assert str(registration.path) in problem
        stale_socket(registration.path)  # and somebody else's socket at the path is not ours either
        assert registration.socket_problem() is not None
    finally:
        loop.run(registration.stop())
    # Not ours: left in place.
    assert registration.path.is_socket()


@pytest.mark.parametrize("asked", [False, True], ids=["silence", "asked"])
def test_silence_from_kubelet_is_logged_naming_the_directory(
    registry: Path, loop: LoopThread, caplog: pytest.LogCaptureFixture, asked: bool
) -> None:
    registration = KubeletRegistration(registry, KUBELET_SEES, unasked_warning=0.3)
    with caplog.at_level(logging.WARNING, logger="csi.registration"):
        loop.run(registration.start())
        try:
            if asked:
                channel, stub = kubelet(registration.path)
                with channel:
                    stub.GetInfo(pluginregistration_pb2.InfoRequest(), timeout=1)
            time.sleep(0.8)
        finally:
            loop.run(registration.stop())
    if asked:
        assert not caplog.records
        return
    (warning,) = caplog.records
    assert "GetInfo" in warning.getMessage()
    assert str(registry) in warning.getMessage()


# --- the process: fluid-csi --mode node ------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def probe(port: int, path: str = "/readyz") -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def wait_until(what: str, check: Callable[[], bool], proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 20
    while not check():
        assert proc.poll() is None, f"fluid-csi exited {proc.returncode}: {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"{what}: not within 20 s; log: {log.read_text()[-3000:]}"
        time.sleep(0.05)


def node_service(root: Path, *extra: str) -> tuple[subprocess.Popen[bytes], Path]:
    log = root / "node.log"
    argv = [sys.executable, "-m", "csi.main", "--mode", "node", "--endpoint", f"unix://{root}/csi.sock",
            "--node-id", "n1", "--state-dir", str(root / "state"), "--mount-root", str(root / "plugins"),
            "--fuse-binary", f"{sys.executable} -m csi.standin.fusestandin", "--no-mirror",
            "--log-format", "text", *extra]  # fmt: skip
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    return proc, log


def test_the_node_service_registers_as_kubelet_sees_it_and_deregisters_at_sigterm(
    short_dir: Path, registry: Path
) -> None:
    port = free_port()
    proc, log = node_service(
        short_dir, "--plugin-registration-dir", str(registry), "--health-host", "127.0.0.1",
        "--health-port", str(port),
    )  # fmt: skip
    path = registry / socket_name()
    try:
        wait_until("the registration socket", path.is_socket, proc, log)
        channel, stub = kubelet(path)
        with channel:
            info = stub.GetInfo(pluginregistration_pb2.InfoRequest(), timeout=1)
        # Without --kubelet-registration-path: the CSI socket as this process serves it (a node
        # service on the host, or one whose socket is mounted at its host path).
        assert info.endpoint == str(short_dir / "csi.sock")
        # What kubelet does next, at the endpoint it was given: NodeGetInfo, for the CSINode object.
        # The CSI socket is up before the registration socket appears.
        with grpc.insecure_channel(f"unix://{info.endpoint}") as csi:
            node = csi_pb2_grpc.NodeStub(csi).NodeGetInfo(csi_pb2.NodeGetInfoRequest(), timeout=5)
        assert node.node_id == "n1"
        wait_until("/readyz", lambda: probe(port)[0] == 200, proc, log)
        notify(path, False, REFUSED)
        status, body = probe(port)
        assert status == 503
        assert REFUSED in body
        assert REFUSED in log.read_text()
        notify(path, True)
        assert probe(port) == (200, "ok\n")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        assert not path.exists()
        assert not (short_dir / "csi.sock").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_node_service_answers_the_kubelet_registration_path_it_is_given(
    short_dir: Path, registry: Path
) -> None:
    stale_socket(registry / socket_name())
    port = free_port()
    proc, log = node_service(
        short_dir, "--plugin-registration-dir", str(registry), "--kubelet-registration-path", KUBELET_SEES,
        "--health-host", "127.0.0.1", "--health-port", str(port),
    )  # fmt: skip
    try:
        path = registry / socket_name()

        def answers() -> bool:
            channel, stub = kubelet(path)
            with channel:
                try:
                    return (
                        stub.GetInfo(pluginregistration_pb2.InfoRequest(), timeout=1).endpoint == KUBELET_SEES
                    )
                except grpc.RpcError:
                    return False

        wait_until("GetInfo on the replaced stale socket", answers, proc, log)
        assert probe(port, "/healthz") == (200, "ok\n")
        # The socket removed under it: kubelet has deregistered the driver; liveness says so, and
        # the container's restart makes a new socket.
        path.unlink()
        assert probe(port, "/healthz")[0] == 503
        assert f"{path} was removed or replaced: failing /healthz" in log.read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_the_node_service_without_its_registry_exits_saying_what_to_do(short_dir: Path) -> None:
    missing = short_dir / "kubelet" / "plugins_registry"
    proc, log = node_service(short_dir, "--plugin-registration-dir", str(missing))
    assert proc.wait(timeout=20) == 1
    text = log.read_text()
    assert str(missing) in text
    assert "--no-registration" in text


def test_no_registration_serves_none(short_dir: Path, registry: Path) -> None:
    proc, log = node_service(short_dir, "--plugin-registration-dir", str(registry), "--no-registration")
    try:
        wait_until("the CSI socket", (short_dir / "csi.sock").is_socket, proc, log)
        assert list(registry.iterdir()) == []
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.mark.parametrize("path", ["csi.sock", "unix://relative/csi.sock", "tcp://10.0.0.1:10000"])
def test_a_kubelet_registration_path_kubelet_cannot_dial_is_refused(path: str) -> None:
    from csi.main import parse_args

    base = ["--mode", "node", "--endpoint", "/c.sock", "--node-id", "n"]
    with pytest.raises(SystemExit):
        parse_args([*base, "--kubelet-registration-path", path])
    assert parse_args(
        [*base, "--kubelet-registration-path", f"unix://{KUBELET_SEES}"]
    ).kubelet_registration_path == (KUBELET_SEES)
