"""An HTTP CONNECT proxy on loopback for the plugin's proxy tests (unit and e2e): it records each
tunnel and its Proxy-Authorization, then pipes bytes both ways."""

from __future__ import annotations

import contextlib
import select
import socket
import socketserver
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class ConnectProxy:
    port: int
    tunnels: list[str] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextlib.contextmanager
def connect_proxy_running() -> Iterator[ConnectProxy]:
    state = ConnectProxy(0)

    class Handler(socketserver.BaseRequestHandler):
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
            state.tunnels.append(where)
            host, _, port = where.rpartition(":")
            with socket.create_connection((host, int(port))) as upstream:
                self.request.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                ends = [self.request, upstream]
                while True:
                    readable, _, _ = select.select(ends, [], [], 5)
                    if not readable:
                        return
                    for end in readable:
                        data = end.recv(65536)
                        if not data:
                            return
                        (upstream if end is self.request else self.request).sendall(data)

    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    state.port = srv.server_address[1]
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        srv.shutdown()
        srv.server_close()
