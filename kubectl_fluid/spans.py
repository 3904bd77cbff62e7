"""Where one call's time went: named steps in milliseconds, for a debug log line a user can read.

A call opens a recording (``recording(True)``); code beneath it, in the same task, in tasks it
starts, or in a thread started with its context (``asyncio.to_thread``), times a step with
``step(name)``. No recording open (debug logging off): ``step`` costs one context-variable lookup
and records nothing. Steps that run side by side are each timed in full, so together they can add
up to more than the call; the recording's ``total_ms`` is the call's own time.

The CSI node service logs NodeStage's and NodePublish's steps this way (``fluid-csi --log-level
debug``), and the bench reads the same lines to print the cold path's breakdown."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any


class Spans:
    """One call's steps, in the order they first ended, each its summed milliseconds."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.steps: dict[str, float] = {}

    def add(self, name: str, ms: float) -> None:
        self.steps[name] = self.steps.get(name, 0.0) + ms

    def fields(self) -> dict[str, Any]:
        """What the log line carries: ``total_ms`` and ``steps_ms`` (rounded to microseconds)."""
        total = (time.perf_counter() - self.start) * 1000
        return {"total_ms": round(total, 3), "steps_ms": {k: round(v, 3) for k, v in self.steps.items()}}


_current: ContextVar[Spans | None] = ContextVar("fluid_spans", default=None)


@contextlib.contextmanager
def recording(enabled: bool) -> Iterator[Spans | None]:
    """A recording for the block's steps when ``enabled``; None (nothing recorded) otherwise."""
    if not enabled:
        yield None
        return
    spans = Spans()
    token = _current.set(spans)
    try:
        yield spans
    finally:
        _current.reset(token)


@contextlib.contextmanager
def step(name: str) -> Iterator[None]:
    """Time the block as ``name`` in the open recording, if any."""
    spans = _current.get()
    if spans is None:
        yield
        return
    t0 = time.perf_counter()
    try:
        yield
    finally:
        spans.add(name, (time.perf_counter() - t0) * 1000)
