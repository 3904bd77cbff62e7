"""Each namespace's budget of direct GETs (the webhook's cache misses), as a token bucket per
namespace: ``burst`` GETs at once, refilled at ``rate`` a second. Pure bookkeeping; the caller passes
the time.

Why per namespace (issue 27, item 4): with one server-wide budget, pods of one namespace naming
datasets that do not exist queued so many GETs that another namespace's pod, needing one, waited past
the admission deadline and was refused. Now a namespace that spends its budget has its own further
misses refused at once, and never delays another namespace's.

A take larger than ``burst`` (a pod naming more datasets than the burst, when the administrator
raised ``--max-datasets-per-pod``) is granted from a full bucket and leaves it in debt, so such a pod
is served, yet the total over any time stays under ``burst + rate * seconds`` plus one such take.
"""

from __future__ import annotations

from typing import Final

# One pod naming the most datasets allowed by default (64), each a Dataset and a ConfigMap not yet in
# the watch caches, is served at once. A namespace's misses come from objects created a moment before
# their pods (the watch delivers them within milliseconds); names answered 404 are remembered
# (webhook/notfound.py), so no working namespace comes near this.
NAMESPACE_BURST: Final = 128
NAMESPACE_RATE: Final = 32.0  # GETs a second, after the burst
# Buckets kept before the full ones are dropped (a full bucket is the same as none); after a sweep,
# the next waits until twice as many are kept, so sweeps stay rare however many namespaces take.
_PRUNE_AT: Final = 1024


class Budgets:
    """Token buckets by namespace. ``take`` grants GETs or refuses them whole."""

    def __init__(self, burst: int = NAMESPACE_BURST, rate: float = NAMESPACE_RATE) -> None:
        if burst < 1 or rate <= 0:
            raise ValueError(f"a budget needs burst >= 1 and rate > 0, not {burst} and {rate}")
        self.burst = burst
        self.rate = rate
        self._buckets: dict[str, tuple[float, float]] = {}  # namespace -> (level, when)
        self._prune_at = _PRUNE_AT

    def level(self, namespace: str, now: float) -> float:
        """GETs ``namespace`` could make at ``now`` (negative: in debt)."""
        held = self._buckets.get(namespace)
        if held is None:
            return float(self.burst)
        level, when = held
        return min(float(self.burst), level + max(0.0, now - when) * self.rate)

    def take(self, namespace: str, count: int, now: float) -> bool:
        """Spend ``count`` GETs of ``namespace`` at ``now`` if its bucket holds them (or is full, for
        a count above the burst); False, and nothing spent, otherwise."""
        if count <= 0:
            return True
        level = self.level(namespace, now)
        if level < min(count, self.burst):
            return False
        if len(self._buckets) >= self._prune_at:
            self._prune(now)
        self._buckets[namespace] = (level - count, now)
        return True

    def tracked(self) -> int:
        return len(self._buckets)

    def _prune(self, now: float) -> None:
        for namespace in [ns for ns in self._buckets if self.level(ns, now) >= self.burst]:
            del self._buckets[namespace]
        self._prune_at = max(_PRUNE_AT, 2 * len(self._buckets))
