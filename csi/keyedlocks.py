"""One lock per name, for the controller service (per volume), the node service (per volume and
mount key) and the Curvine backend (per cluster): a plain leaf, so each of those layers can share
it without importing another."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class KeyedLocks:
    """One asyncio.Lock per key, dropped when nobody holds or waits for it (names are unbounded)."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    def busy(self, key: str) -> bool:
        """Whether anyone holds or waits for ``key``'s lock."""
        return key in self._locks

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)
