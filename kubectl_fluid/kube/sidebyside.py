"""Reads side by side for the plugin: forks of one client, each read on a thread of its own.

A command that reads several lists spends most of its time waiting for the server to prepare each;
sent together, the waits overlap (the server has cores of its own) and this process decodes one
answer while the next is prepared. One client per thread: a connection carries one request at a
time, and a client is not shared between threads.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from kubectl_fluid.kube.transport import Api

T = TypeVar("T")


@dataclass(frozen=True)
class Lane:
    """One forked client and the one thread that runs its reads, in the order submitted."""

    api: Api
    thread: ThreadPoolExecutor

    def submit(self, read: Callable[[Api], T]) -> Future[T]:
        """``read(client)`` started now (after this lane's earlier reads); its result or its
        exception comes from ``.result()``."""
        return self.thread.submit(read, self.api)


@contextlib.contextmanager
def side_by_side(api: Api, lanes: int) -> Iterator[tuple[Lane, ...]]:
    """``lanes`` forks of ``api`` with a thread each. Leaving waits for every read started and
    closes the forks' connections (``api`` itself stays the caller's)."""
    with contextlib.ExitStack() as stack:
        made = []
        for n in range(lanes):
            fork = api.fork()
            stack.callback(fork.close)
            # Entered after its fork's close callback, so left first: the read ends, then the close.
            thread = stack.enter_context(ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"read-{n}"))
            made.append(Lane(fork, thread))
        yield tuple(made)
