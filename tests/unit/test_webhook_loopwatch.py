"""Liveness of the webhook's event loop (webhook.loopwatch) and ``/healthz`` telling it."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest

from webhook.loopwatch import LoopWatch
from webhook.server import App


def test_a_blocked_loop_is_a_problem_until_it_has_kept_up_for_a_window(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> None:
        watch = LoopWatch(asyncio.get_running_loop(), interval=0.02, limit=0.2, window=0.5)
        watch.start()
        try:
            await asyncio.sleep(0.2)
            assert watch.problem() is None
            time.sleep(0.6)  # what a loop busy with one admission looks like to every other one
            problem = watch.problem()
            assert problem is not None
            assert problem.startswith("event loop stalled: a callback waited 0.")
            assert "(limit 0.2s)" in problem
            await asyncio.sleep(0.1)
            assert watch.problem() is not None, "one quick answer does not end it: the window does"
            await asyncio.sleep(0.6)
            assert watch.problem() is None
        finally:
            watch.stop()

    with caplog.at_level(logging.WARNING, logger="webhook.loopwatch"):
        asyncio.run(main())
    (record,) = caplog.records
    # The loop thread's stack, as it was during the stall: the line that blocked it.
    assert "time.sleep(0.6)" in record.getMessage()


async def _get(app: App, path: str) -> tuple[int, bytes]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app({"type": "http", "path": path, "method": "GET"}, receive, send)
    return sent[0]["status"], sent[1]["body"]


def test_healthz_answers_503_with_the_problem() -> None:
    async def review(_: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("not an admission")

    problems: list[str | None] = [None]
    app = App(review, ready=lambda: True, live=lambda: problems[0])
    assert asyncio.run(_get(app, "/healthz")) == (200, b"ok\n")
    problems[0] = "event loop stalled: a callback waited 3.0s"
    assert asyncio.run(_get(app, "/healthz")) == (503, b"event loop stalled: a callback waited 3.0s\n")
    assert asyncio.run(_get(app, "/livez"))[0] == 503
    assert asyncio.run(_get(app, "/readyz")) == (200, b"ok\n")
