"""Is the event loop keeping up? Measured from a thread, told by ``/healthz``.

Every admission waits for the one event loop. A loop kept busy (a bug, a flood of work) refuses every
labelled pod in the cluster with the API server's "context deadline exceeded" while the process looks
alive, so liveness must see it. Design:

- A daemon thread posts a callback into the loop every ``interval`` seconds and measures how long it
  waits for its turn: exactly what an admission would wait before it is even read. While one is
  outstanding the thread posts no other, and its wait so far counts.
- ``lag()`` is the longest such wait over the last ``window`` seconds; ``problem()`` describes it when it
  exceeds ``limit``, and ``/healthz`` answers 503 with that text. A loop so stuck that it cannot even
  serve ``/healthz`` fails the probe by its timeout instead, which kubelet counts the same way.
- When a stall first passes ``limit``, the thread logs the loop thread's stack once: what it was doing
  is the first thing anyone debugging it needs.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from typing import Final

log = logging.getLogger(__name__)

INTERVAL: Final = 0.5
# Far above a busy loop's normal lag (milliseconds at saturation), below the 5 s the API server waits.
LIMIT: Final = 2.0
WINDOW: Final = 10.0
_STACK_LINES: Final = 40


class LoopWatch:
    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        interval: float = INTERVAL,
        limit: float = LIMIT,
        window: float = WINDOW,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.loop = loop
        self.interval, self.limit, self.window = interval, limit, window
        self.clock = clock
        self._sent: float | None = None  # when the outstanding callback was posted
        self._waits: deque[tuple[float, float]] = deque()  # (answered at, waited)
        self._lock = threading.Lock()  # _waits is written on the loop, read from either thread
        self._loop_thread = threading.get_ident()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="loopwatch", daemon=True)
        self._reported = False

    def start(self) -> None:
        """Call from the loop's own thread (its stack is the one reported)."""
        self._loop_thread = threading.get_ident()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def lag(self) -> float:
        """Seconds of the longest wait for the loop seen over the last ``window``, the current one
        included."""
        now = self.clock()
        with self._lock:
            waits = [waited for at, waited in self._waits if now - at <= self.window]
        sent = self._sent
        if sent is not None:
            waits.append(now - sent)
        return max(waits, default=0.0)

    def problem(self) -> str | None:
        lag = self.lag()
        if lag <= self.limit:
            return None
        return (
            f"event loop stalled: a callback waited {lag:.1f}s for it within the last {self.window:g}s "
            f"(limit {self.limit:g}s); admissions wait as long"
        )

    # -- the thread

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            sent = self._sent
            if sent is None:
                self._sent = self.clock()
                try:
                    self.loop.call_soon_threadsafe(self._answered)
                except RuntimeError:  # the loop is closed: nothing left to watch
                    return
            elif self.clock() - sent > self.limit and not self._reported:
                self._reported = True
                log.warning("%s; the loop is at:\n%s", self.problem(), self._loop_stack())

    def _answered(self) -> None:
        now = self.clock()
        sent = self._sent
        if sent is None:
            return
        with self._lock:
            self._waits.append((now, now - sent))
            while self._waits and now - self._waits[0][0] > self.window:
                self._waits.popleft()
        self._sent = None
        self._reported = False

    def _loop_stack(self) -> str:
        frame = sys._current_frames().get(self._loop_thread)
        if frame is None:
            return "(no stack)"
        return "".join(traceback.format_stack(frame)[-_STACK_LINES:])
