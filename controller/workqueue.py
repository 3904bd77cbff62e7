"""A de-duplicating, rate-limited work queue with per-key serialisation (controller-runtime's model).

- A key queued twice is queued once: reconcile is level-triggered, one pass sees the latest state.
- A key is never handed to two workers at once; a key added while it is being processed is marked
  dirty and handed out again once its current pass is done.
- Failures come back after a per-key exponential delay; success forgets the key's failure count.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass
class ItemBackoff:
    """Per-key exponential delay: base * 2**failures, capped."""

    base: float = 0.05
    cap: float = 300.0
    failures: dict[Hashable, int] = field(default_factory=dict)

    def when(self, key: Hashable) -> float:
        n = self.failures.get(key, 0)
        self.failures[key] = n + 1
        return float(min(self.cap, self.base * 2**n))

    def forget(self, key: Hashable) -> None:
        self.failures.pop(key, None)

    def retries(self, key: Hashable) -> int:
        return self.failures.get(key, 0)


class ShutDown(Exception):
    """The queue was shut down: workers stop."""


class WorkQueue(Generic[K]):
    def __init__(self, backoff: ItemBackoff | None = None) -> None:
        self._order: deque[K] = deque()
        self._queued: set[K] = set()
        self._processing: set[K] = set()
        self._dirty: set[K] = set()
        self._timers: dict[K, asyncio.TimerHandle] = {}
        self._wake = asyncio.Event()
        self._closed = False
        self.backoff = backoff or ItemBackoff()

    def __len__(self) -> int:
        return len(self._order)

    @property
    def in_flight(self) -> int:
        return len(self._processing)

    def add(self, key: K) -> None:
        if self._closed:
            return
        if key in self._processing:
            self._dirty.add(key)
            return
        if key in self._queued:
            return
        self._queued.add(key)
        self._order.append(key)
        self._wake.set()

    def add_after(self, key: K, delay: float) -> None:
        """Queue ``key`` after ``delay`` seconds; an earlier pending timer for it wins."""
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        pending = self._timers.get(key)
        if pending is not None:
            if pending.when() <= loop.time() + delay:
                return
            pending.cancel()
        self._timers[key] = loop.call_later(delay, self._fire, key)

    def add_rate_limited(self, key: K) -> float:
        """Queue ``key`` again after its backoff delay; returns the delay."""
        delay = self.backoff.when(key)
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        self.backoff.forget(key)

    def _fire(self, key: K) -> None:
        self._timers.pop(key, None)
        self.add(key)

    async def get(self) -> K:
        while not self._order:
            if self._closed:
                raise ShutDown
            self._wake.clear()
            await self._wake.wait()
        key = self._order.popleft()
        self._queued.discard(key)
        self._processing.add(key)
        return key

    def done(self, key: K) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)

    def shut_down(self) -> None:
        self._closed = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._wake.set()


async def drain(
    queue: WorkQueue[K],
    settle: Callable[[K], Awaitable[float | None]],
    failed: Callable[[K, float, Exception], None],
    retry: Callable[[K, Exception], float] | None = None,
) -> None:
    """Hand each key to ``settle`` until the queue shuts down. A success forgets the key's failures and,
    when ``settle`` answers seconds, queues it again after them (a look again later). A failure queues
    it again after its backoff (``retry``'s delay instead, when given) and is told to ``failed`` (key,
    delay, error) to log."""
    while True:
        try:
            key = await queue.get()
        except ShutDown:
            return
        try:
            again = await settle(key)
        except Exception as e:
            if retry is None:
                delay = queue.add_rate_limited(key)
            else:
                delay = retry(key, e)
                queue.add_after(key, delay)
            failed(key, delay, e)
        else:
            queue.forget(key)
            if again is not None:
                queue.add_after(key, again)
        finally:
            queue.done(key)
