"""HTTP/1.1 on one connection that ``kubectl_fluid.kube.dial`` opened: a request out, its response in,
the connection kept for the next one unless the server says otherwise (RFC 9112).

The plugin's client sends one request at a time and reads JSON back, so this is all it needs of
HTTP; ``http.client`` would cost a command more to import (its ``email`` header parser) than the
request takes. What it reads: a status line (1xx answers skipped), headers, and a body framed by
``Transfer-Encoding: chunked``, ``Content-Length`` or the end of the connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MAX_LINE = 65536
MAX_HEADERS = 100
# No body, whatever the headers say (RFC 9112 §6.3).
NO_BODY = frozenset({204, 304})


class Disconnected(ConnectionResetError):
    """The server closed a connection without answering: a kept-alive connection it dropped while
    idle, so a GET may be sent again on a new one."""


class BadResponse(OSError):
    """An answer that is not HTTP/1.x, or is cut short."""


class Response:
    def __init__(self, status: int, headers: list[tuple[str, str]], body: bytes, will_close: bool) -> None:
        self.status = status
        self.headers = headers  # (lower-case name, value), in the order received
        self.body = body
        self.will_close = will_close

    def values(self, name: str) -> list[str]:
        """Every value of header ``name`` (case-insensitive)."""
        name = name.lower()
        return [v for n, v in self.headers if n == name]


def host_header(host: str, port: int) -> str:
    """Host as http.client (our client before this module) sent it: the port unless 80, IPv6
    literals in brackets."""
    name = f"[{host}]" if ":" in host else host
    return name if port == 80 else f"{name}:{port}"


class Connection:
    """One request at a time over ``sock`` (a socket, a TLS socket, or TLS inside TLS)."""

    def __init__(self, sock: Any) -> None:
        self._sock = sock
        self._in = sock.makefile("rb")

    def exchange(
        self,
        method: str,
        target: str,
        host: str,
        headers: Sequence[tuple[str, str]],
        payload: bytes | None,
    ) -> Response:
        self.send(method, target, host, headers, payload)
        return self.receive(method)

    def send(
        self,
        method: str,
        target: str,
        host: str,
        headers: Sequence[tuple[str, str]],
        payload: bytes | None,
    ) -> None:
        """The request alone: its answer is read by ``receive``, so a caller can do other work while
        the server prepares it (the next page of a list while this one is decoded)."""
        # Header by header: impersonation repeats Impersonate-Group, which a dict cannot hold.
        lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", "Accept-Encoding: identity"]
        lines += [f"{name}: {value}" for name, value in headers]
        if payload is not None:
            lines.append(f"Content-Length: {len(payload)}")
        self._sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (payload or b""))

    def close(self) -> None:
        self._in.close()
        self._sock.close()

    # -- reading -----------------------------------------------------------------------------------
    def _line(self) -> bytes:
        line: bytes = self._in.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise BadResponse("the server sent a line longer than 64 KiB")
        return line

    def receive(self, method: str) -> Response:
        """The answer to the request ``send`` wrote (``method`` decides whether it has a body)."""
        while True:
            status_line = self._line()
            if not status_line:
                raise Disconnected("Remote end closed connection without response")
            version, _, rest = status_line.decode("latin-1").rstrip("\r\n").partition(" ")
            code = rest[:3]
            if not version.startswith("HTTP/1.") or not code.isdigit() or rest[3:4] not in ("", " "):
                raise BadResponse(f"not an HTTP/1.x answer: {status_line[:80]!r}")
            status = int(code)
            headers = self._headers()
            if not 100 <= status < 200 or status == 101:
                break
        values = {n: v for n, v in headers}
        connection = values.get("connection", "").lower()
        will_close = "close" in connection or (version == "HTTP/1.0" and "keep-alive" not in connection)
        if method == "HEAD" or status in NO_BODY or 100 <= status < 200:
            return Response(status, headers, b"", will_close)
        if "chunked" in values.get("transfer-encoding", "").lower():
            return Response(status, headers, self._chunked(), will_close)
        length = values.get("content-length")
        if length is not None:
            if not length.strip().isdigit():
                raise BadResponse(f"the server sent Content-Length {length!r}")
            return Response(status, headers, self._exactly(int(length)), will_close)
        # Neither: the body runs to the end of the connection.
        return Response(status, headers, self._in.read(), True)

    def _headers(self) -> list[tuple[str, str]]:
        headers: list[tuple[str, str]] = []
        while True:
            line = self._line()
            if line in (b"\r\n", b"\n", b""):
                return headers
            if len(headers) == MAX_HEADERS:
                raise BadResponse(f"the server sent more than {MAX_HEADERS} headers")
            name, sep, value = line.decode("latin-1").partition(":")
            if not sep:
                raise BadResponse(f"the server sent a header line without a colon: {line[:80]!r}")
            headers.append((name.strip().lower(), value.strip()))

    def _exactly(self, n: int) -> bytes:
        data: bytes = self._in.read(n)
        if len(data) < n:
            raise BadResponse(f"the answer was cut short: {len(data)} of {n} bytes")
        return data

    def _chunked(self) -> bytes:
        parts: list[bytes] = []
        while True:
            size_field = self._line().split(b";", 1)[0].strip()
            try:
                size = int(size_field, 16)
            except ValueError:
                raise BadResponse(f"the server sent a bad chunk size: {size_field[:20]!r}") from None
            if size == 0:
                self._headers()  # trailers, unused
                return b"".join(parts)
            parts.append(self._exactly(size))
            if self._line() not in (b"\r\n", b"\n"):
                raise BadResponse("a chunk did not end where its size said")
