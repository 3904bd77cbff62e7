"""The HTTPS surface: an ASGI app with the admission path, ``/healthz``, ``/readyz`` and ``/metrics``.

Written against the bare ASGI interface (no framework): the admission path is the hot path, and the
work per request is one body read, one orjson parse, the pipeline and one orjson dump.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from kubectl_fluid.api import names
from webhook import metrics

# The API server sends at most ~3 MiB objects; a review is the object plus a little.
MAX_BODY = 4 * 1024 * 1024

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
Review = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


TEXT = b"text/plain; charset=utf-8"


class BadRequest(Exception):
    pass


class App:
    """``live`` says why the server is not alive (``webhook.loopwatch``), or None when it is."""

    def __init__(
        self, review: Review, ready: Callable[[], bool], live: Callable[[], str | None] = lambda: None
    ) -> None:
        self.review = review
        self.ready = ready
        self.live = live
        # Which process answered (names.WEBHOOK_WORKER_HEADER): one of N workers behind one port.
        self.worker = (names.WEBHOOK_WORKER_HEADER.encode(), str(os.getpid()).encode())

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path, method = scope["path"], scope["method"]
        if path == names.WEBHOOK_MUTATE_PATH:
            if method != "POST":
                await self._respond(send, 405, b"POST only\n")
                return
            await self._admit(receive, send)
        elif path in ("/healthz", "/livez"):
            problem = self.live()
            await self._respond(send, 503 if problem else 200, f"{problem or 'ok'}\n".encode())
        elif path == "/readyz":
            ok = self.ready()
            await self._respond(send, 200 if ok else 503, b"ok\n" if ok else b"caches not synced\n")
        elif path == "/metrics":
            await self._respond(send, 200, metrics.exposition(), metrics.CONTENT_TYPE.encode())
        else:
            await self._respond(send, 404, b"not found\n")

    async def _admit(self, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        try:
            body = await _read_body(receive)
            review = _parse(body)
        except BadRequest as e:
            metrics.BAD_REQUESTS.inc()
            await self._respond(send, 400, f"bad AdmissionReview: {e}\n".encode())
            return
        answer = await self.review(review)
        await self._respond(send, 200, orjson.dumps(answer), b"application/json")
        metrics.ADMISSION_SECONDS.observe(time.perf_counter() - started)

    async def _respond(self, send: Send, status: int, body: bytes, content_type: bytes = TEXT) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", content_type),
                    (b"content-length", str(len(body)).encode()),
                    self.worker,
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


async def _read_body(receive: Receive) -> bytes:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise BadRequest("client went away")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            raise BadRequest(f"body larger than {MAX_BODY} bytes")
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def _parse(body: bytes) -> dict[str, Any]:
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise BadRequest(f"not JSON: {e}") from None
    if not isinstance(review, dict) or review.get("kind") != "AdmissionReview":
        raise BadRequest("kind must be AdmissionReview")
    if review.get("apiVersion") != "admission.k8s.io/v1":
        raise BadRequest("apiVersion must be admission.k8s.io/v1")
    request = review.get("request")
    if not isinstance(request, dict) or not isinstance(request.get("uid"), str):
        raise BadRequest("request.uid missing")
    if not isinstance(request.get("object"), dict):
        raise BadRequest("request.object missing")
    return review


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
