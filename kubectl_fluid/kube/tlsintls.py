"""TLS to the API server inside the TLS connection to an ``https://`` proxy (``kubectl_fluid.kube.dial``
opens it): an ``ssl.SSLObject`` over memory buffers, pumped through the outer socket."""

from __future__ import annotations

import io
import ssl
from typing import Any


class TlsInTls:
    """The inner TLS connection, with what ``kubectl_fluid.kube.http11`` needs of a socket."""

    def __init__(self, outer: ssl.SSLSocket, context: ssl.SSLContext, server_name: str) -> None:
        self._outer = outer
        self._in, self._out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._in, self._out, server_hostname=server_name)
        self._call(self._tls.do_handshake)

    def _flush(self) -> None:
        pending = self._out.read()
        if pending:
            self._outer.sendall(pending)

    def _call(self, op: Any, *args: Any) -> Any:
        while True:
            try:
                result = op(*args)
            except ssl.SSLWantReadError:
                self._flush()
                data = self._outer.recv(65536)
                if not data:
                    self._in.write_eof()
                else:
                    self._in.write(data)
                continue
            self._flush()
            return result

    def sendall(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            sent = self._call(self._tls.write, view)
            view = view[sent:]

    def recv_into(self, buffer: Any) -> int:
        try:
            return int(self._call(self._tls.read, len(buffer), buffer))
        except ssl.SSLZeroReturnError:
            return 0

    def makefile(self, mode: str = "rb", **_: Any) -> io.BufferedReader:
        return io.BufferedReader(_Reader(self))

    def settimeout(self, timeout: float | None) -> None:
        self._outer.settimeout(timeout)

    def getpeercert(self, binary_form: bool = False) -> Any:
        return self._tls.getpeercert(binary_form)

    def close(self) -> None:
        self._outer.close()


class _Reader(io.RawIOBase):
    def __init__(self, conn: TlsInTls) -> None:
        self._conn = conn

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self._conn.recv_into(buffer)
