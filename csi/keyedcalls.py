"""Calls per mount key that answer on time even when the key's FUSE does not.

A call's work on a key runs under the key's lock (csi/keyedlocks.py), and what it does to the host
runs in the key's own thread (csi/keyedthreads.py). When that host work runs past the deadline (a
FUSE that stopped answering), ``run`` raises ``KeyHung`` at that moment, while the work goes on in
the background, still holding the key's lock, and finishes (or fails, and undoes itself) when the
kernel answers: the caller answers on time, nothing runs beside the stuck work, and what the work
changes is recorded after all (kubelet takes a deadline's answer as "may still happen" and asks
again). Meanwhile a call on that key fails at once, and one that was waiting for its lock fails when
the key gets stuck: one thread per key at most is ever stuck, however often kubelet retries.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from csi.keyedlocks import KeyedLocks
from csi.keyedthreads import DEFAULT_DEADLINE, KeyedThreads, Stuck

log = logging.getLogger("csi.keyedcalls")

_T = TypeVar("_T")


class KeyHung(Exception):
    """The key's host work is stuck: ``ours`` when it is this call's own (the work goes on), else the
    call was not run (it would have waited behind another's)."""

    def __init__(self, stuck: Stuck, ours: bool) -> None:
        super().__init__(f"mount key {stuck.key}: {stuck.what} has not ended for {stuck.seconds():.0f} s")
        self.stuck = stuck
        self.ours = ours


class KeyedCalls:
    def __init__(self, deadline: float = DEFAULT_DEADLINE, *, late: Callable[[], None] | None = None) -> None:
        self.locks = KeyedLocks()
        self.threads = KeyedThreads(deadline, "fluid-csi-node")
        # Told when work that outlived its call has ended (the node service then saves its state).
        self.late = late
        self._late: set[asyncio.Future[Any]] = set()

    @property
    def deadline(self) -> float:
        return self.threads.deadline

    def busy(self, key: str) -> bool:
        """Whether a call holds or waits for the key's lock."""
        return self.locks.busy(key)

    async def run(self, key: str, work: Callable[[], Awaitable[_T]]) -> _T:
        """``work()`` under the key's lock; ``KeyHung`` as said above. A caller cancelled meanwhile
        cancels the work (which waits for its host work to end before it undoes anything)."""
        stuck = self.threads.stuck(key)
        if stuck is not None:
            raise KeyHung(stuck, ours=False)
        holding = False

        async def locked() -> _T:
            nonlocal holding
            async with self.locks.hold(key):
                holding = True
                return await work()

        task = asyncio.ensure_future(locked())
        signal = self.threads.when_stuck(key)
        try:
            await asyncio.wait((task, signal), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            self._outlive(task)
            raise
        finally:
            stuck = signal.result() if signal.done() else None
            signal.cancel()
        if task.done():
            return task.result()
        assert stuck is not None
        if not holding:
            task.cancel()  # it only waited for the lock: nothing of it ran
            raise KeyHung(stuck, ours=False)
        self._outlive(task)  # the lock holder is the only one with host work on the key: its own
        raise KeyHung(stuck, ours=True)

    async def host(self, key: str, what: str, work: Callable[..., _T], *args: Any) -> _T:
        """``work(*args)`` in the key's thread, to its end (``what`` names it in messages)."""
        return await self.threads.run(key, what, work, *args)

    def forget(self, key: str) -> None:
        """The key's mount is gone: its thread goes once idle."""
        self.threads.forget(key)

    def _outlive(self, task: asyncio.Future[Any]) -> None:
        """Keep ``task`` until it ends; its failure is logged, its end told to ``late``."""
        self._late.add(task)
        task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Future[Any]) -> None:
        self._late.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("work that outlived its call failed: %s", task.exception())
        if self.late is not None:
            self.late()
