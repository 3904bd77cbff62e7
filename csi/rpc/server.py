"""The driver's gRPC server: a grpc.aio server on a unix socket serving Identity plus the Controller
and/or Node service, stopped gracefully.

Endpoints are spelled as kubelet, the sidecars and csi-sanity spell them: ``unix:///abs/csi.sock``,
``unix:/abs/csi.sock`` or a bare path. A socket file left by a previous (killed) instance is removed
at start, but only once a connection to it is refused: removing a live instance's socket would steal
its endpoint silently, and a non-socket file at that path is somebody else's.

gRPC binds a private name beside the path, and the socket is linked into place once it listens: a
watcher never sees a socket that refuses it, and gRPC, which unlinks the path it bound at shutdown
whatever file is there by then, never removes a successor's socket. The private name is a dot file,
which kubelet's plugin watcher ignores; it stays while the server runs, since the watcher stats every
new file and logs an error for one already gone, and one a killed instance left is cleared at start.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import itertools
import logging
import os
import re
import signal
import socket
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import grpc

from csi.proto import csi_pb2_grpc

log = logging.getLogger("csi.rpc.server")

# sockaddr_un.sun_path is 108 bytes on Linux, including the terminating NUL.
# What grpc binds: sun_path holds 108 bytes, and grpc refuses a path of over 105 (measured, grpcio 1.85).
_SUN_PATH_MAX = 105
_ASIDE = itertools.count()
# Short (".fc1a2b.0"): it must fit wherever the endpoint's own name does, as nearly as can be.
_ASIDE_NAME = re.compile(r"\.fc[0-9a-f]+\.[0-9]+")
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


def _clear_stale_asides(directory: Path) -> None:
    """The private names killed instances left (live ones are other instances', and stay)."""
    for entry in directory.iterdir():
        if _ASIDE_NAME.fullmatch(entry.name):
            with contextlib.suppress(EndpointError, FileNotFoundError):
                clear_stale_socket(entry)


class UnixGrpcServer:
    """A grpc.aio server on a unix socket file it owns: a stale file is replaced at start (never a live
    one, nor a non-socket), and the file is removed at stop while it is still the one this server
    made. ``what`` names the service in logs."""

    def __init__(self, path: Path, what: str, add_services: Callable[[grpc.aio.Server], None]) -> None:
        self.path, self.what, self._add_services = path, what, add_services
        # Made in start(): a grpc.aio server belongs to the event loop it is created on, and the
        # caller may well build this object before asyncio.run() makes that loop.
        self._server: grpc.aio.Server | None = None
        # An O_PATH descriptor of the socket file made: it pins the inode, so a file made at the path
        # after ours was removed can never have our inode number (a bare inode number, or inode and
        # change time, is often reused within a clock tick).
        self._fd: int | None = None
        self._aside: Path | None = None

    @property
    def target(self) -> str:
        """What a client dials to reach this server."""
        return f"unix://{self.path}"

    def owns_socket(self) -> bool:
        """The file at ``path`` is still the socket this server made (nobody removed or replaced it)."""
        if self._fd is None:
            return False
        try:
            now = self.path.lstat()
        except FileNotFoundError:
            return False
        made = os.fstat(self._fd)
        return (now.st_dev, now.st_ino) == (made.st_dev, made.st_ino)

    async def start(self) -> None:
        if self._server is not None:
            raise RuntimeError(f"{self.what} server started twice")
        clear_stale_socket(self.path)
        _clear_stale_asides(self.path.parent)
        aside: Path | None = self.path.with_name(f".fc{os.getpid():x}.{next(_ASIDE)}")
        if len(str(aside).encode()) > _SUN_PATH_MAX:
            # An endpoint within a few bytes of the limit: bound where it is, as before asides
            # existed; only then can a stopping instance's grpc unlink a successor's socket.
            aside = None
        server = grpc.aio.server()
        self._add_services(server)
        bound = aside or self.path
        # Older grpcio returns 0 on a failed bind instead of raising.
        if server.add_insecure_port(f"unix://{bound}") == 0:
            raise EndpointError(f"cannot listen on {bound}")
        await server.start()
        if aside is not None:
            try:
                # A link, not a rename: it fails rather than replace a socket made there meanwhile.
                os.link(aside, self.path)
            except FileExistsError:
                await server.stop(0)
                aside.unlink(missing_ok=True)
                raise EndpointError(f"{self.path} was taken by another process while starting") from None
        self._server, self._aside = server, aside
        self._fd = os.open(self.path, os.O_PATH | os.O_NOFOLLOW)
        log.info("serving %s on %s", self.what, self.path)

    async def stop(self, grace: float | None = DEFAULT_GRACE_SECONDS) -> None:
        """Refuse new calls, let running ones finish for ``grace`` seconds, then cancel them."""
        if self._server is None and self._fd is None:
            return  # never started (or stopped already): nothing to stop, nothing to remove
        if self._server is not None:
            await self._server.stop(grace)
            self._server = None
        if self._aside is not None:
            self._aside.unlink(missing_ok=True)  # gRPC's own name (it removes it too, these days)
            self._aside = None
        # Remove the file only if it is still ours: a successor that already took over the path (a
        # rolling restart) must keep its socket.
        if self.owns_socket():
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        log.info("stopped serving %s on %s", self.what, self.path)

    async def wait(self) -> None:
        if self._server is not None:
            await self._server.wait_for_termination()


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
        self._unix = UnixGrpcServer(self.path, "CSI", self._add_services)

    @property
    def target(self) -> str:
        return self._unix.target

    def _add_services(self, server: grpc.aio.Server) -> None:
        csi_pb2_grpc.add_IdentityServicer_to_server(self._identity, server)
        if self._controller is not None:
            csi_pb2_grpc.add_ControllerServicer_to_server(self._controller, server)
        if self._node is not None:
            csi_pb2_grpc.add_NodeServicer_to_server(self._node, server)

    async def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        await self._unix.start()

    async def stop(self, grace: float | None = DEFAULT_GRACE_SECONDS) -> None:
        await self._unix.stop(grace)

    async def wait(self) -> None:
        await self._unix.wait()


class Companion(Protocol):
    """A service started once the CSI socket serves and stopped before it stops (the registration
    with kubelet: kubelet calls the CSI socket as soon as it sees the registration)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


async def serve_until_signalled(
    server: CsiServer, grace: float = DEFAULT_GRACE_SECONDS, companion: Companion | None = None
) -> None:
    """Serve until SIGTERM or SIGINT, then stop gracefully (kubelet's pod shutdown sends SIGTERM):
    ``companion`` after the server starts, and before it stops."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    try:
        await server.start()
        try:
            if companion is not None:
                await companion.start()
            await stopping.wait()
        finally:
            if companion is not None:
                await companion.stop()
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        await server.stop(grace)
