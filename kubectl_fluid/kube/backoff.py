"""Exponential backoff with full jitter: what every retry loop in the product waits between tries."""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Backoff:
    base: float = 0.2
    cap: float = 30.0
    factor: float = 2.0
    attempts: int = 0
    # Full jitter spreads many clients (controller replicas, webhook pods) restarting at once.
    rng: random.Random = field(default_factory=random.Random, repr=False)

    def next(self) -> float:
        """Seconds to wait before the next try; grows until ``cap``."""
        ceiling = min(self.cap, self.base * self.factor**self.attempts)
        self.attempts += 1
        return self.rng.uniform(ceiling / 2, ceiling)

    def reset(self) -> None:
        self.attempts = 0
