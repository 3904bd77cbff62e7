"""Host work per key (a FUSE mount key) in a thread of that key's own, with a deadline.

A system call that reaches a FUSE mount (a stat, a lookup, a bind's statfs) waits until the FUSE
server answers, and a server whose cache master hangs may not answer for minutes. Such a call can
run on neither the event loop (it would stall every other key's calls and the health probes) nor a
shared pool (a few stuck threads would take every thread the other keys need, and the thread
cannot be cancelled: it stays stuck until the kernel answers). So each key gets one thread of its
own: one key's stuck call holds up only that key's later work.

Work that runs past the deadline makes its key *stuck* (``stuck``) until it ends; ``when_stuck``
tells a waiter the moment it happens, so the caller can answer (or give up) on time while the work
goes on. The work's own future (``submit``) is resolved only when the thread is done with it: an
awaiting caller that is cancelled does not make it look finished.

A plain leaf, like csi/keyedlocks.py: the node service and the FUSE runners each keep their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

_T = TypeVar("_T")
# A FUSE that has not answered a lookup in this long is hung, not slow: a healthy one answers in
# milliseconds, a Curvine master fail-over takes seconds, and kubelet gives a CSI call two minutes.
DEFAULT_DEADLINE = 30.0


@dataclass(frozen=True)
class Stuck:
    """Work of ``key`` that has run past the deadline: ``what`` it is, ``since`` (time.monotonic)."""

    key: str
    what: str
    since: float

    def seconds(self) -> float:
        return time.monotonic() - self.since


class Hung(Exception):
    """The deadline passed before the work ended; the work goes on in its thread."""

    def __init__(self, stuck: Stuck) -> None:
        super().__init__(f"{stuck.what} has not ended for {stuck.seconds():.0f} s")
        self.stuck = stuck


@dataclass
class _Lane:
    """One key's thread: how much work it holds, what it runs now (set by the thread itself), and
    whether that is stuck."""

    executor: ThreadPoolExecutor
    queued: int = 0
    running: Stuck | None = None
    stuck: Stuck | None = None
    timer: asyncio.TimerHandle | None = None
    # Dropped once idle: its key's mount is gone (kept while busy, so a stuck key still reads stuck).
    forgotten: bool = False


class KeyedThreads:
    def __init__(self, deadline: float = DEFAULT_DEADLINE, name: str = "fluid-csi-host") -> None:
        self.deadline = deadline
        self.name = name
        self._lanes: dict[str, _Lane] = {}
        # Per key, who waits to hear that its work is stuck.
        self._waiters: dict[str, set[asyncio.Future[Stuck]]] = {}

    def stuck(self, key: str) -> Stuck | None:
        """The work of ``key`` that has run past the deadline and not ended, if any."""
        lane = self._lanes.get(key)
        return None if lane is None else lane.stuck

    def when_stuck(self, key: str) -> asyncio.Future[Stuck]:
        """Resolved with the key's ``Stuck`` when its work next runs past the deadline (at once if it
        is stuck now). Cancel it when no longer interested."""
        waiter: asyncio.Future[Stuck] = asyncio.get_running_loop().create_future()
        stuck = self.stuck(key)
        if stuck is not None:
            waiter.set_result(stuck)
            return waiter
        self._waiters.setdefault(key, set()).add(waiter)
        waiter.add_done_callback(lambda _: self._stop_waiting(key, waiter))
        return waiter

    def _stop_waiting(self, key: str, waiter: asyncio.Future[Stuck]) -> None:
        waiters = self._waiters.get(key)
        if waiters is not None:
            waiters.discard(waiter)
            if not waiters:
                del self._waiters[key]

    def submit(self, key: str, what: str, work: Callable[..., _T], *args: Any) -> asyncio.Future[_T]:
        """``work(*args)`` in the key's thread, after the key's earlier work; the future is its end,
        resolved only once the thread is done with it (cancelling the future does not stop it)."""
        loop = asyncio.get_running_loop()
        lane = self._lane(key)
        done: asyncio.Future[_T] = loop.create_future()
        # The caller's context variables, as asyncio.to_thread passes them (a call's timed steps).
        context = contextvars.copy_context()

        def in_thread() -> _T:
            lane.running = Stuck(key, what, time.monotonic())
            try:
                return context.run(work, *args)
            finally:
                lane.running = None

        def ended(result: Future[_T]) -> None:
            lane.queued -= 1
            if lane.stuck is not None and lane.stuck is not lane.running:
                lane.stuck = None  # the stuck work ended: the thread runs the next, or nothing
            if lane.queued == 0:
                if lane.timer is not None:
                    lane.timer.cancel()
                    lane.timer = None
                if lane.forgotten:
                    self._drop(key, lane)
            elif lane.timer is None and lane.stuck is None:
                lane.timer = loop.call_later(self.deadline, self._check, key, lane)
            if done.cancelled():
                return
            error = result.exception()
            if error is not None:
                done.set_exception(error)
            else:
                done.set_result(result.result())

        lane.queued += 1
        if lane.timer is None and lane.stuck is None:
            lane.timer = loop.call_later(self.deadline, self._check, key, lane)
        running = lane.executor.submit(in_thread)
        running.add_done_callback(lambda result: loop.call_soon_threadsafe(ended, result))
        return done

    async def run(self, key: str, what: str, work: Callable[..., _T], *args: Any) -> _T:
        """``work(*args)`` in the key's thread, awaited to its end however long it takes. A caller
        cancelled meanwhile still waits for that end before the cancellation goes on: an undo must
        never run beside the work it undoes."""
        return await finish(self.submit(key, what, work, *args))

    async def within(
        self, key: str, what: str, work: Callable[..., _T], *args: Any, wait: float | None = None
    ) -> _T:
        """``work(*args)`` in the key's thread; ``Hung`` once ``wait`` seconds (the deadline unless
        said) have passed (the work goes on, the key stuck from the deadline until it ends)."""
        future = self.submit(key, what, work, *args)
        wait = self.deadline if wait is None else wait
        done, _ = await asyncio.wait([future], timeout=wait)
        if not done:
            raise Hung(self.stuck(key) or Stuck(key, what, time.monotonic() - wait))
        return future.result()

    def forget(self, key: str) -> None:
        """Drop the key's thread (its mount is gone) once it has no work left."""
        lane = self._lanes.get(key)
        if lane is not None:
            lane.forgotten = True
            if lane.queued == 0:
                self._drop(key, lane)

    def _drop(self, key: str, lane: _Lane) -> None:
        if self._lanes.get(key) is lane:
            del self._lanes[key]
        lane.executor.shutdown(wait=False)

    def _lane(self, key: str) -> _Lane:
        lane = self._lanes.get(key)
        if lane is not None:
            lane.forgotten = False  # in use again
        else:
            prefix = f"{self.name}-{key[:8]}"
            lane = self._lanes[key] = _Lane(ThreadPoolExecutor(max_workers=1, thread_name_prefix=prefix))
        return lane

    def _check(self, key: str, lane: _Lane) -> None:
        """The lane's timer: the work the thread runs now is stuck once it has run for the deadline;
        until then, look again when it will have."""
        lane.timer = None
        if lane.queued == 0:
            return
        running = lane.running
        wait = self.deadline if running is None else self.deadline - running.seconds()
        if wait > 0:
            lane.timer = asyncio.get_running_loop().call_later(wait, self._check, key, lane)
            return
        assert running is not None
        lane.stuck = running
        for waiter in list(self._waiters.get(key, ())):
            if not waiter.done():
                waiter.set_result(running)


async def finish(future: asyncio.Future[_T]) -> _T:
    """Await ``future`` to its end; a cancellation meanwhile is raised only after it."""
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        while not future.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait([future])
        if not future.cancelled():
            future.exception()  # seen: the cancellation is what the caller reports
        raise
