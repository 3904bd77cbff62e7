"""The driver's gRPC server: a grpc.aio server on a unix socket serving Identity plus the Controller
and/or Node service, stopped gracefully.

Endpoints are spelled as kubelet, the sidecars and csi-sanity spell them: ``unix:///abs/csi.sock``,
``unix:/abs/csi.sock`` or a bare path. A socket file left by a previous (killed) instance is removed
at start, but only once a connection to it is refused: removing a live instance's socket would steal
its endpoint silently, and a non-socket file at that path is somebody else's.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import signal
import socket
import stat
from pathlib import Path

import grpc

from csi.proto import csi_pb2_grpc

log = logging.getLogger("csi.server")

# sockaddr_un.sun_path is 108 bytes on Linux, including the terminating NUL.
_SUN_PATH_MAX = 107
DEFAULT_GRACE_SECONDS = 5.0


class EndpointError(ValueError):
    """An endpoint that cannot be served: wrong scheme, path too long, in use, not a socket."""


def socket_path(endpoint: str) -> Path:
    """The unix socket path an endpoint names (made absolute)."""
    if endpoint.startswith("unix://"):
        path = endpoint.removeprefix("unix://")
        if not path.startswith("/"):
            # unix://host/path has an authority: gRPC would not read it as a path either.
            raise EndpointError(f"endpoint {endpoint!r}: unix:// must be followed by an absolute path")
    elif endpoint.startswith("unix:"):
        path = endpoint.removeprefix("unix:")
    elif "://" in endpoint:
        raise EndpointError(f"endpoint {endpoint!r}: only unix sockets are served")
    else:
        path = endpoint
    if not path:
        raise EndpointError(f"endpoint {endpoint!r} names no path")
    resolved = Path(path).absolute()
    if len(str(resolved).encode()) > _SUN_PATH_MAX:
        raise EndpointError(f"socket path {resolved} is longer than {_SUN_PATH_MAX} bytes")
    return resolved


def clear_stale_socket(path: Path) -> None:
    """Remove ``path`` if it is a socket nobody listens on; refuse if it is live or not a socket."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise EndpointError(f"{path} exists and is not a socket; refusing to replace it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
    except OSError as err:
        if err.errno not in (errno.ECONNREFUSED, errno.ENOENT):
            raise
        log.info("removing stale socket %s", path)
        path.unlink(missing_ok=True)
    else:
        raise EndpointError(f"{path} is in use by another process")
    finally:
        probe.close()


class CsiServer:
    """Identity always; Controller and Node when given (``--mode all`` gives both, on one socket)."""

    def __init__(
        self,
        endpoint: str,
        *,
        identity: csi_pb2_grpc.IdentityServicer,
        controller: csi_pb2_grpc.ControllerServicer | None = None,
        node: csi_pb2_grpc.NodeServicer | None = None,
    ) -> None:
        self.path = socket_path(endpoint)
        self._identity, self._controller, self._node = identity, controller, node
        # Made in start(): a grpc.aio server belongs to the event loop it is created on, and the
        # caller may well build this object before asyncio.run() makes that loop.
        self._server: grpc.aio.Server | None = None
        self._inode: int | None = None

    @property
    def target(self) -> str:
        """What a client dials to reach this server."""
        return f"unix://{self.path}"

    async def start(self) -> None:
        if self._server is not None:
            raise RuntimeError("CsiServer.start called twice")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        clear_stale_socket(self.path)
        server = grpc.aio.server()
        csi_pb2_grpc.add_IdentityServicer_to_server(self._identity, server)
        if self._controller is not None:
            csi_pb2_grpc.add_ControllerServicer_to_server(self._controller, server)
        if self._node is not None:
            csi_pb2_grpc.add_NodeServicer_to_server(self._node, server)
        # Older grpcio returns 0 on a failed bind instead of raising.
        if server.add_insecure_port(self.target) == 0:
            raise EndpointError(f"cannot listen on {self.path}")
        await server.start()
        self._server = server
        self._inode = self.path.lstat().st_ino
        log.info("serving CSI on %s", self.path)

    async def stop(self, grace: float | None = DEFAULT_GRACE_SECONDS) -> None:
        """Refuse new calls, let running ones finish for ``grace`` seconds, then cancel them."""
        if self._server is not None:
            await self._server.stop(grace)
            self._server = None
        # gRPC leaves the file behind. Remove it only if it is still ours: a successor that already
        # took over the path (a rolling restart) must keep its socket.
        with contextlib.suppress(FileNotFoundError):
            if self._inode is not None and self.path.lstat().st_ino == self._inode:
                self.path.unlink()
        self._inode = None
        log.info("stopped serving CSI on %s", self.path)

    async def wait(self) -> None:
        if self._server is not None:
            await self._server.wait_for_termination()


async def serve_until_signalled(server: CsiServer, grace: float = DEFAULT_GRACE_SECONDS) -> None:
    """Serve until SIGTERM or SIGINT, then stop gracefully (kubelet's pod shutdown sends SIGTERM)."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    try:
        await server.start()
        await stopping.wait()
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        await server.stop(grace)
