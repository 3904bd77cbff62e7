"""Names the API server just answered 404 for, remembered for a few seconds: the webhook's negative
cache. Pure bookkeeping; the caller passes the time.

Without it every pod naming a missing dataset cost a GET per name, however many pods named it a
moment before (issue 27, item 4: 56 GETs a pod, 13,496 in one run). With it, a flood of such pods
costs one GET per name every ``NOT_FOUND_SECONDS``. The watch corrects it at once: the watch cache's
ADDED (or MODIFIED) event for a name ``forget``s it, so a Dataset created right after its 404 is seen
as soon as the watch brings it, and a name the watch holds is never asked about here at all (the
caches are read first). Entries expire in the order they were made (one lifetime for all), so the
oldest go first when ``capacity`` is reached.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final, Generic, TypeVar

K = TypeVar("K")

# Long enough that a flood of pods naming one missing name costs a GET per name a few times a
# minute, short enough that a name the watch failed to report is looked up again soon.
NOT_FOUND_SECONDS: Final = 5.0
# Names remembered at most; past it the oldest are forgotten (each costs one GET again).
MAX_REMEMBERED: Final = 8192


class NotFound(Generic[K]):
    def __init__(self, ttl: float = NOT_FOUND_SECONDS, capacity: int = MAX_REMEMBERED) -> None:
        if ttl <= 0 or capacity < 1:
            raise ValueError(f"a negative cache needs ttl > 0 and capacity >= 1, not {ttl} and {capacity}")
        self.ttl = ttl
        self.capacity = capacity
        # key -> when it expires, oldest first (an OrderedDict: popping the oldest is O(1))
        self._until: OrderedDict[K, float] = OrderedDict()

    def add(self, key: K, now: float) -> None:
        """``key`` was answered 404 at ``now``."""
        self._until.pop(key, None)
        self._expire(now)
        while len(self._until) >= self.capacity:
            self._until.popitem(last=False)
        self._until[key] = now + self.ttl

    def known(self, key: K, now: float) -> bool:
        """Whether ``key`` was answered 404 less than ``ttl`` seconds before ``now`` and not
        forgotten since."""
        until = self._until.get(key)
        if until is None:
            return False
        if now < until:
            return True
        del self._until[key]
        return False

    def forget(self, key: K) -> None:
        self._until.pop(key, None)

    def __len__(self) -> int:
        return len(self._until)

    def _expire(self, now: float) -> None:
        while self._until and now >= next(iter(self._until.values())):
            self._until.popitem(last=False)
