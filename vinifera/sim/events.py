"""The simulator's event queue. Events run in (time, target, origin,
sequence) order: simultaneous events run by the node they happen at, then
by the node that caused them, then in the order that node caused them (the
driver's own joins, departures and publications, origin DRIVER, first and
in the order scheduled). No part of the key depends on what other nodes did
in between, so the order stays the same if the nodes are split between
processes, and determinism never depends on comparing payloads."""

from __future__ import annotations

import heapq
from bisect import insort

# The origin (and target) of the driver's own events.
DRIVER = -1


class EventQueue:
    """A calendar of buckets of `width` time units each: an event goes to
    the bucket its time falls in (the index grows with the time), and a
    bucket is sorted by the key above only when its turn comes, then read
    in order. A heap of every event compares entries scattered over
    memory that the rest of the simulation keeps evicting, at every push
    and pop; a bucket is sorted in one pass, while it sits in the cache
    (fewer instructions too: docs/decisions/simulator-speed.md, "The event
    queue as sorted buckets"). The order is exactly one heap's: buckets go
    in index order, and an event for the bucket being read (or one before
    it) is inserted in its place among what is left of it."""

    __slots__ = (
        "_per_unit",
        "_buckets",
        "_indices",
        "_current",
        "_index",
        "_next",
        "_size",
        "_seq",
    )

    def __init__(self, width: float = 1 / 64) -> None:
        if not width > 0:
            raise ValueError("width must be > 0")
        self._per_unit = 1 / width
        self._buckets: dict[int, list] = {}  # index -> its events, unsorted
        self._indices: list[int] = []  # heap of the indices in _buckets
        self._current: list = []  # sorted: the bucket being read, and any before it
        self._index = -1  # the index of _current (or below every event's)
        self._next = 0  # position of the next event to read in _current
        self._size = 0
        self._seq: dict[int, int] = {}  # origin -> events it has scheduled

    def push(self, time: float, kind: int, a, b=None, origin: int = DRIVER) -> None:
        """Schedule an event of `kind` about `a` (a node's address, or None)
        caused by `origin` (a node's address, or DRIVER)."""
        self.push_entry(self.entry(time, kind, a, b, origin))

    def entry(self, time: float, kind: int, a, b=None, origin: int = DRIVER) -> tuple:
        """The queue entry `push` would make (and number), without queueing
        it: for an event another process will run (sim/parallel.py)."""
        seq = self._seq.get(origin, 0) + 1
        self._seq[origin] = seq
        target = DRIVER if origin == DRIVER else a
        return (time, target, origin, seq, kind, a, b)

    def push_entry(self, entry: tuple) -> None:
        """Queue an entry made by `entry` (here or in another process)."""
        self._size += 1
        time: float = entry[0]  # (typed: compiled, float arithmetic)
        index = int(time * self._per_unit)
        if index <= self._index:
            insort(self._current, entry, self._next)
            return
        bucket = self._buckets.get(index)
        if bucket is None:
            self._buckets[index] = [entry]
            heapq.heappush(self._indices, index)
        else:
            bucket.append(entry)

    def restart_origin(self, origin: int, incarnation: int) -> None:
        """A new incarnation of node `origin` numbers its events afresh,
        above any the previous one left in the queue: the numbering depends
        on the incarnation alone, not on what the previous one did."""
        self._seq[origin] = incarnation << 40

    def pop_until(self, limit: float):
        """Pop the next event strictly before `limit`, or None:
        (time, target, origin, sequence, kind, a, b)."""
        current = self._current
        at = self._next
        if at == len(current):
            if not self._indices:
                return None
            self._index = index = heapq.heappop(self._indices)
            current = self._buckets.pop(index)
            current.sort()
            self._current = current
            self._next = at = 0
        entry = current[at]
        time: float = entry[0]
        if time < limit:
            self._next = at + 1
            self._size -= 1
            return entry
        return None

    def __len__(self) -> int:
        return self._size
