"""The simulator's single event queue, ordered by (time, sequence number) so
that simultaneous events run in the order they were scheduled: determinism
never depends on comparing payloads."""

from __future__ import annotations

import heapq


class EventQueue:
    __slots__ = ("_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list = []
        self._seq = 0

    def push(self, time: float, kind: int, a, b=None) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (time, self._seq, kind, a, b))

    def pop_until(self, limit: float):
        """Pop the next event strictly before `limit`, or None."""
        heap = self._heap
        if heap and heap[0][0] < limit:
            return heapq.heappop(heap)
        return None

    def __len__(self) -> int:
        return len(self._heap)
