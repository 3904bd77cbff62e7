"""An HTTP CONNECT proxy on loopback for the plugin's proxy tests (unit and e2e): it records each
tunnel and its Proxy-Authorization, then pipes bytes both ways. Given a TLS context it is an
``https://`` proxy: the client speaks TLS to it, and the tunnelled TLS runs inside that."""

from __future__ import annotations

import contextlib
import select
import socket
import socketserver
import ssl
from collections.abc import Iterator
from dataclasses import dataclass, field

from tests.serving import serving


@dataclass
class ConnectProxy:
    port: int
    tunnels: list[str] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)
    scheme: str = "http"

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"


def pipe(a: socket.socket, b: socket.socket) -> None:
    """Bytes both ways until either side closes or five idle seconds pass. A TLS side may hold
    decrypted bytes select() cannot see: those are drained first."""
    ends = [a, b]
    while True:
        ready: list[socket.socket] = [e for e in ends if isinstance(e, ssl.SSLSocket) and e.pending()]
        if not ready:
            ready, _, _ = select.select(ends, [], [], 5)
            if not ready:
                return
        for end in ready:
            data = end.recv(65536)
            if not data:
                return
            (b if end is a else a).sendall(data)


@contextlib.contextmanager
def connect_proxy_running(
    tls: ssl.SSLContext | None = None, refuse: str | None = None
) -> Iterator[ConnectProxy]:
    """The proxy, until the block ends; ``refuse`` (a status, e.g. ``407 Proxy Authentication
    Required``) answers every CONNECT with it instead of a tunnel."""
    state = ConnectProxy(0, scheme="https" if tls else "http")

    class Handler(socketserver.BaseRequestHandler):
        def setup(self) -> None:
            if tls is not None:
                self.request = tls.wrap_socket(self.request, server_side=True)

        def handle(self) -> None:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = self.request.recv(4096)
                if not chunk:
                    return
                head += chunk
            lines = head.split(b"\r\n\r\n", 1)[0].decode().split("\r\n")
            method, where, _ = lines[0].split(" ")
            headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
            state.auth.append(headers.get("Proxy-Authorization"))
            if method != "CONNECT":
                self.request.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
                return
            if refuse:
                self.request.sendall(f"HTTP/1.1 {refuse}\r\nContent-Length: 0\r\n\r\n".encode())
                return
            state.tunnels.append(where)
            host, _, port = where.rpartition(":")
            with socket.create_connection((host.strip("[]"), int(port))) as upstream:
                self.request.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                pipe(self.request, upstream)

    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    state.port = srv.server_address[1]
    with serving(srv):
        yield state
