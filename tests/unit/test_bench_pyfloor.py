"""The webhook bench's floor answers every request with the bytes it was given, after reading the
whole body (as the webhook must), and does nothing else."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.bench.pyfloor import app_answering


def test_the_floor_reads_the_whole_body_then_answers_the_given_bytes() -> None:
    chunks: list[dict[str, Any]] = [
        {"type": "http.request", "body": b"a", "more_body": True},
        {"type": "http.request", "body": b"b"},
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return chunks.pop(0)

    async def send(message: dict[str, Any]) -> None:
        assert not chunks, "answered before the body was read"
        sent.append(message)

    asyncio.run(app_answering(b'{"ok":1}')({"type": "http", "method": "POST"}, receive, send))
    assert sent[0]["status"] == 200
    assert (b"content-length", b"8") in sent[0]["headers"]
    assert sent[1] == {"type": "http.response.body", "body": b'{"ok":1}'}
