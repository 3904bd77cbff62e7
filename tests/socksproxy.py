"""A SOCKS5 proxy on loopback for the plugin's proxy tests (RFC 1928 CONNECT; RFC 1929 user and
password when asked to require them): it records each destination as the client named it (a host
name stays a name: the proxy resolves it) and the credentials, then pipes bytes both ways."""

from __future__ import annotations

import contextlib
import socket
import socketserver
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

from tests.connectproxy import pipe
from tests.serving import serving


@dataclass
class SocksProxy:
    port: int
    login: tuple[str, str] | None = None
    destinations: list[str] = field(default_factory=list)
    logins: list[tuple[str, str]] = field(default_factory=list)

    @property
    def url(self) -> str:
        auth = f"{self.login[0]}:{self.login[1]}@" if self.login else ""
        return f"socks5://{auth}127.0.0.1:{self.port}"


def _exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("client went away")
        data += chunk
    return data


@contextlib.contextmanager
def socks_proxy_running(login: tuple[str, str] | None = None) -> Iterator[SocksProxy]:
    state = SocksProxy(0, login)

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            sock = self.request
            _, count = _exact(sock, 2)
            methods = _exact(sock, count)
            wanted = 2 if login else 0
            if wanted not in methods:
                sock.sendall(b"\x05\xff")
                return
            sock.sendall(bytes([5, wanted]))
            if login:
                _, ulen = _exact(sock, 2)
                user = _exact(sock, ulen).decode()
                password = _exact(sock, _exact(sock, 1)[0]).decode()
                state.logins.append((user, password))
                ok = (user, password) == login
                sock.sendall(b"\x01" + (b"\x00" if ok else b"\x01"))
                if not ok:
                    return
            _, command, _, kind = _exact(sock, 4)
            if command != 1:  # CONNECT only
                sock.sendall(b"\x05\x07\x00\x01" + bytes(6))
                return
            if kind == 1:
                host = socket.inet_ntop(socket.AF_INET, _exact(sock, 4))
            elif kind == 4:
                host = socket.inet_ntop(socket.AF_INET6, _exact(sock, 16))
            else:
                host = _exact(sock, _exact(sock, 1)[0]).decode()
            (port,) = struct.unpack("!H", _exact(sock, 2))
            state.destinations.append(f"{host}:{port}")
            try:
                upstream = socket.create_connection((host, port), timeout=5)
            except OSError:
                sock.sendall(b"\x05\x05\x00\x01" + bytes(6))  # connection refused
                return
            with upstream:
                sock.sendall(b"\x05\x00\x00\x01" + bytes(6))
                pipe(sock, upstream)

    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    state.port = srv.server_address[1]
    with serving(srv):
        yield state
