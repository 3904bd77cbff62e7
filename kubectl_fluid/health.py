"""``/healthz``, ``/readyz`` and ``/metrics`` for the server processes that have no HTTP server of
their own (controller, CSI driver): a few lines of asyncio, no framework on the start-up path."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)


class HealthServer:
    def __init__(
        self,
        host: str,
        port: int,
        ready: Callable[[], bool],
        live: Callable[[], bool] = lambda: True,
        registry: CollectorRegistry = REGISTRY,
        *,
        why_not_ready: Callable[[], str | None] = lambda: None,
    ) -> None:
        self.host, self.port = host, port
        self.ready, self.live, self.registry = ready, live, registry
        # Said in /readyz's body when not ready: what `kubectl get --raw` or a curl on the node shows.
        self.why_not_ready = why_not_ready
        self._server: asyncio.Server | None = None

    async def start(self) -> int:
        """Listen; returns the bound port (``port=0`` picks a free one)."""
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            method, path, *_ = request.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
            status, ctype, body = self._route(method, path.split("?", 1)[0])
            head = (
                f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n"
            )
            writer.write(head.encode() + (body if method != "HEAD" else b""))
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError, OSError):
            pass  # a probe that hung up or sent garbage gets nothing
        finally:
            with contextlib.suppress(OSError):
                writer.close()

    def _route(self, method: str, path: str) -> tuple[str, str, bytes]:
        text = "text/plain; charset=utf-8"
        if method not in ("GET", "HEAD"):
            return "405 Method Not Allowed", text, b"method not allowed\n"
        if path in ("/healthz", "/livez"):
            ok = self.live()
            return ("200 OK" if ok else "503 Service Unavailable"), text, b"ok\n" if ok else b"unhealthy\n"
        if path == "/readyz":
            if self.ready():
                return "200 OK", text, b"ok\n"
            reason = self.why_not_ready()
            return "503 Service Unavailable", text, f"not ready{f': {reason}' if reason else ''}\n".encode()
        if path == "/metrics":
            return "200 OK", CONTENT_TYPE_LATEST, generate_latest(self.registry)
        return "404 Not Found", text, b"not found\n"
