"""Calls per mount key with a deadline (csi/keyedcalls.py, csi/keyedthreads.py), with host work that
blocks in a thread until the test lets it go: what a system call into a FUSE that does not answer
does. The real FUSE version of each case is tests/unit/test_csi_hung_fuse.py."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Awaitable, Callable, Iterator

import pytest

from csi.keyedcalls import KeyedCalls, KeyHung

DEADLINE = 0.3
# Generous: these wait for things that happen at once, never for the deadline itself.
PATIENCE = 10.0


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """Host work waits on it; always opened at the end, so no thread outlives the test stuck."""
    event = threading.Event()
    yield event
    event.set()


def run(main: Callable[[], Awaitable[None]], gate: threading.Event) -> None:
    async def whole() -> None:
        try:
            await asyncio.wait_for(main(), PATIENCE)
        finally:
            gate.set()  # the hang ends, and the work that outlived its call with it
            others = asyncio.all_tasks() - {asyncio.current_task()}
            await asyncio.wait_for(asyncio.gather(*others, return_exceptions=True), PATIENCE)

    asyncio.run(whole())


def blocked(calls: KeyedCalls, gate: threading.Event, key: str = "k") -> Callable[[], Awaitable[None]]:
    """A call's work whose host part ("binding") waits for ``gate``."""

    async def work() -> None:
        await calls.host(key, "binding", gate.wait)

    return work


def noting(ran: list[str], name: str) -> Callable[[], Awaitable[None]]:
    """A call's work that only notes that it ran."""

    async def work() -> None:
        ran.append(name)

    return work


def test_stuck_host_work_answers_at_the_deadline_and_finishes_later(gate: threading.Event) -> None:
    done: list[str] = []

    async def main() -> None:
        calls = KeyedCalls(DEADLINE)

        async def publish() -> None:
            await calls.host("k", "a stat of its root", gate.wait)
            done.append("published")

        with pytest.raises(KeyHung) as hung:
            await calls.run("k", publish)
        assert hung.value.ours
        assert hung.value.stuck.what == "a stat of its root"
        assert calls.threads.stuck("k") is not None
        assert done == []

        gate.set()
        while calls.threads.stuck("k") is not None or not done:
            await asyncio.sleep(0.01)
        assert done == ["published"]  # the work went on and ended once the host answered

        await calls.run("k", noting(done, "again"))  # the key answers again
        assert done == ["published", "again"]

    run(main, gate)


def test_a_call_on_a_stuck_key_fails_at_once_without_running(gate: threading.Event) -> None:
    ran: list[str] = []

    async def main() -> None:
        calls = KeyedCalls(DEADLINE)

        with pytest.raises(KeyHung):
            await calls.run("k", blocked(calls, gate))
        with pytest.raises(KeyHung) as refused:
            await calls.run("k", noting(ran, "later"))
        assert not refused.value.ours
        assert refused.value.stuck.what == "binding"
        assert ran == []

    run(main, gate)


def test_a_call_waiting_for_the_lock_fails_when_the_key_gets_stuck(gate: threading.Event) -> None:
    ran: list[str] = []

    async def main() -> None:
        calls = KeyedCalls(DEADLINE)

        first = asyncio.ensure_future(calls.run("k", blocked(calls, gate)))
        await asyncio.sleep(0)  # the first holds the lock
        with pytest.raises(KeyHung) as behind:
            await calls.run("k", noting(ran, "queued"))
        assert not behind.value.ours
        with pytest.raises(KeyHung):
            await first
        gate.set()
        while calls.busy("k"):
            await asyncio.sleep(0.01)
        assert ran == []  # it never ran, not even once the lock was free

    run(main, gate)


def test_more_stuck_keys_than_the_default_pool_has_threads_leave_other_keys_working(
    gate: threading.Event,
) -> None:
    # asyncio's default pool has min(32, cpus + 4) threads: that many stuck lookups would starve it.
    stuck_keys = [f"stuck-{i}" for i in range(min(32, (os.cpu_count() or 1) + 4) + 2)]

    async def main() -> None:
        calls = KeyedCalls(DEADLINE)

        results = await asyncio.gather(
            *(calls.run(key, blocked(calls, gate, key)) for key in stuck_keys), return_exceptions=True
        )
        assert all(isinstance(r, KeyHung) for r in results), results

        async def healthy() -> str:
            return await calls.host("healthy", "a stat", lambda: "answered")

        assert await calls.run("healthy", healthy) == "answered"
        # Even the default pool is untouched.
        assert await asyncio.to_thread(lambda: "free") == "free"

    run(main, gate)


def test_a_cancelled_caller_ends_only_after_its_host_work(gate: threading.Event) -> None:
    order: list[str] = []

    async def main() -> None:
        calls = KeyedCalls(60.0)

        def bind() -> None:
            gate.wait()
            order.append("bound")

        async def stage() -> None:
            try:
                await calls.host("k", "binding", bind)
            except asyncio.CancelledError:
                order.append("undone")  # an undo never runs beside the bind it undoes
                raise

        call = asyncio.ensure_future(calls.run("k", stage))
        while not calls.busy("k"):
            await asyncio.sleep(0.01)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        gate.set()
        while calls.busy("k"):
            await asyncio.sleep(0.01)
        assert order == ["bound", "undone"]

    run(main, gate)
