"""The simulator's event queue. Events run in (time, target, origin,
sequence) order: simultaneous events run by the node they happen at, then
by the node that caused them, then in the order that node caused them (the
driver's own joins, departures and publications, origin DRIVER, first and
in the order scheduled). No part of the key depends on what other nodes did
in between, so the order stays the same if the nodes are split between
processes, and determinism never depends on comparing payloads."""

from __future__ import annotations

import heapq
from collections import deque

# The origin (and target) of the driver's own events.
DRIVER = -1


class EventQueue:
    """A heap, and beside it a first-in-first-out line for events that are
    scheduled one period after the moment they are scheduled at (ticks):
    those come in time order, so the line stays sorted without the heap's
    comparisons, and the heap holds only the messages in flight."""

    __slots__ = ("_heap", "_line", "_seq")

    def __init__(self) -> None:
        self._heap: list = []
        self._line: deque = deque()  # sorted: entries pushed by push_later
        self._seq: dict[int, int] = {}  # origin -> events it has scheduled

    def push(self, time: float, kind: int, a, b=None, origin: int = DRIVER) -> None:
        """Schedule an event of `kind` about `a` (a node's address, or None)
        caused by `origin` (a node's address, or DRIVER)."""
        heapq.heappush(self._heap, self.entry(time, kind, a, b, origin))

    def entry(self, time: float, kind: int, a, b=None, origin: int = DRIVER) -> tuple:
        """The queue entry `push` would make (and number), without queueing
        it: for an event another process will run (sim/parallel.py)."""
        seq = self._seq.get(origin, 0) + 1
        self._seq[origin] = seq
        target = DRIVER if origin == DRIVER else a
        return (time, target, origin, seq, kind, a, b)

    def push_later(self, time: float, kind: int, a, b=None, origin: int = DRIVER) -> None:
        """push, for an event at a fixed delay after the current time: it
        sorts after every such event already queued (time only grows, and
        adding the same delay keeps the order), except in a tie of times,
        which the heap settles."""
        entry = self.entry(time, kind, a, b, origin)
        line = self._line
        if not line or line[-1] < entry:
            line.append(entry)
        else:
            heapq.heappush(self._heap, entry)

    def push_entry(self, entry: tuple) -> None:
        """Queue an entry made by `entry` (here or in another process)."""
        heapq.heappush(self._heap, entry)

    def restart_origin(self, origin: int, incarnation: int) -> None:
        """A new incarnation of node `origin` numbers its events afresh,
        above any the previous one left in the queue: the numbering depends
        on the incarnation alone, not on what the previous one did."""
        self._seq[origin] = incarnation << 40

    def pop_until(self, limit: float):
        """Pop the next event strictly before `limit`, or None:
        (time, target, origin, sequence, kind, a, b)."""
        heap = self._heap
        line = self._line
        if line and (not heap or line[0] < heap[0]):
            if line[0][0] < limit:
                return line.popleft()
            return None
        if heap and heap[0][0] < limit:
            return heapq.heappop(heap)
        return None

    def __len__(self) -> int:
        return len(self._heap) + len(self._line)
