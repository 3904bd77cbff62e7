"""An HTTP CONNECT proxy on loopback for the plugin's proxy tests (unit and e2e): it records each
tunnel and its Proxy-Authorization, then pipes bytes both ways; a plain-HTTP request in absolute form
is passed on without a tunnel. Given a TLS context it is an ``https://`` proxy: the client speaks TLS
to it, and the tunnelled TLS runs inside that. Beside it, a plain TCP relay that records every byte
it carries: what an eavesdropper on the way to the proxy sees."""

from __future__ import annotations

import contextlib
import select
import socket
import socketserver
import ssl
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from tests.serving import serving


@dataclass
class ConnectProxy:
    port: int
    tunnels: list[str] = field(default_factory=list)
    # Plain-HTTP requests in absolute form (their URLs), passed on without a tunnel.
    forwarded: list[str] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)
    scheme: str = "http"

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"


def pipe(a: socket.socket, b: socket.socket, seen: bytearray | None = None) -> None:
    """Bytes both ways until either side closes or five idle seconds pass; those from ``a`` are also
    added to ``seen``. A TLS side may hold decrypted bytes select() cannot see: those are drained
    first."""
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
            if end is a and seen is not None:
                seen.extend(data)
            (b if end is a else a).sendall(data)


@contextlib.contextmanager
def connect_proxy_running(
    tls: ssl.SSLContext | None = None,
    refuse: str | None = None,
    *,
    require: str | None = None,
    hosts: Mapping[str, str] | None = None,
) -> Iterator[ConnectProxy]:
    """The proxy, until the block ends; ``refuse`` (a status, e.g. ``407 Proxy Authentication
    Required``) answers every CONNECT with it instead of a tunnel. ``require``: the only
    Proxy-Authorization it tunnels for (407 otherwise). ``hosts``: names it resolves itself (to an
    address), as a proxy's own DNS knows names its clients cannot resolve."""
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
            forward = method != "CONNECT"
            if forward and not where.startswith("http://"):
                self.request.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
                return
            refusal = refuse
            if require is not None and headers.get("Proxy-Authorization") != require:
                refusal = refusal or "407 Proxy Authentication Required"
            if refusal:
                self.request.sendall(f"HTTP/1.1 {refusal}\r\nContent-Length: 0\r\n\r\n".encode())
                return
            (state.forwarded if forward else state.tunnels).append(where)
            url = urlsplit(where if forward else f"//{where}")
            address = (hosts or {}).get(url.hostname or "", url.hostname or "")
            with socket.create_connection((address, url.port or 80)) as upstream:
                if forward:
                    # A plain-HTTP request in absolute form: passed on in origin form, one per connection.
                    origin = f"{method} {url.path or '/'}{'?' + url.query if url.query else ''} HTTP/1.1"
                    upstream.sendall(origin.encode() + head[head.index(b"\r\n") :])
                else:
                    self.request.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                pipe(self.request, upstream)

    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    state.port = srv.server_address[1]
    with serving(srv):
        yield state


@dataclass
class Relay:
    port: int
    seen: bytearray = field(default_factory=bytearray)


@contextlib.contextmanager
def relay_running(port: int) -> Iterator[Relay]:
    """A plain TCP relay to ``127.0.0.1:port``, recording the bytes it carries from its clients."""
    state = Relay(0)

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            with socket.create_connection(("127.0.0.1", port)) as upstream:
                pipe(self.request, upstream, seen=state.seen)

    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    state.port = srv.server_address[1]
    with serving(srv):
        yield state
