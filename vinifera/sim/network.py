"""The simulated network: per-message latency and loss, seeded."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NetworkModel:
    # One-way latency, uniform in [latency_min, latency_max] (protocol time
    # units; with a 1 s period the default is 10-100 ms, a wide-area spread).
    latency_min: float = 0.01
    latency_max: float = 0.1
    # Probability that a message is lost.
    loss: float = 0.0

    def __post_init__(self) -> None:
        if not 0 <= self.latency_min <= self.latency_max:
            raise ValueError("need 0 <= latency_min <= latency_max")
        if not 0.0 <= self.loss < 1.0:
            raise ValueError("loss must be in [0, 1)")

    def delay(self, rng: random.Random) -> float | None:
        """Latency of one message, or None when it is lost."""
        if self.loss and rng.random() < self.loss:
            return None
        return self.latency_min + (self.latency_max - self.latency_min) * rng.random()
