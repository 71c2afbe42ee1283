"""Token buckets per key (a source host, a source port): how much one
source may make a node do.

Pure (the clock is an argument), so the arithmetic is table-tested. The table
of peers is itself capped: when full, the least recently seen peer is
forgotten (it starts again with a full bucket, which is no worse than a new
peer).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable


class PeerRateLimiter:
    def __init__(self, rate: float, burst: float, max_peers: int = 4096) -> None:
        if rate <= 0 or burst < 1 or max_peers < 1:
            raise ValueError("rate must be > 0, burst >= 1 and max_peers >= 1")
        self.rate = rate
        self.burst = burst
        self.max_peers = max_peers
        self._buckets: OrderedDict[Hashable, list[float]] = OrderedDict()  # peer -> [tokens, t]

    def allow(self, peer: Hashable, now: float, cost: float = 1.0) -> bool:
        """Spend `cost` tokens of `peer`'s bucket if it has them."""
        bucket = self._buckets.get(peer)
        if bucket is None:
            if len(self._buckets) >= self.max_peers:
                self._buckets.popitem(last=False)
            bucket = self._buckets[peer] = [self.burst, now]
        else:
            self._buckets.move_to_end(peer)
            elapsed = max(0.0, now - bucket[1])
            bucket[0] = min(self.burst, bucket[0] + elapsed * self.rate)
            bucket[1] = now
        if bucket[0] >= cost:
            bucket[0] -= cost
            return True
        return False

    def __len__(self) -> int:
        return len(self._buckets)
