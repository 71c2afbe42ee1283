"""`ChurnSchedule`: a trace as the time-ordered up/down events a driver replays."""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import Literal, NamedTuple

from .formats import Trace


class ChurnEvent(NamedTuple):
    time: int
    node: str
    kind: Literal["up", "down"]


# At equal times downs sort before ups: a node whose session ends when the next
# begins goes down then up, and the population never counts a node twice.
_KIND_ORDER = {"down": 0, "up": 1}


class ChurnSchedule:
    """Sorted ``(time, node, "up"|"down")`` events of a trace; iterable and indexable."""

    __slots__ = ("events", "end", "_times")

    def __init__(self, events: list[ChurnEvent], end: int):
        self.events = tuple(sorted(events, key=lambda e: (e.time, _KIND_ORDER[e.kind], e.node)))
        self.end = end
        self._times = [e.time for e in self.events]

    @classmethod
    def from_trace(cls, trace: Trace) -> ChurnSchedule:
        events = []
        for node, sessions in trace.sessions.items():
            for s, e in sessions:
                events.append(ChurnEvent(s, node, "up"))
                events.append(ChurnEvent(e, node, "down"))
        return cls(events, trace.end)

    def to_trace(self) -> Trace:
        sessions: dict[str, list[tuple[int, int]]] = {}
        up: dict[str, int] = {}
        for ev in self.events:
            if ev.kind == "up":
                up[ev.node] = ev.time
            else:
                sessions.setdefault(ev.node, []).append((up.pop(ev.node), ev.time))
        return Trace(sessions, self.end)

    def between(self, start: int, stop: int) -> tuple[ChurnEvent, ...]:
        """Events with ``start <= time < stop``: what a driver applies in one tick."""
        lo = bisect.bisect_left(self._times, start)
        hi = bisect.bisect_left(self._times, stop)
        return self.events[lo:hi]

    def __iter__(self) -> Iterator[ChurnEvent]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def __getitem__(self, i):
        return self.events[i]

    def __repr__(self) -> str:
        return f"ChurnSchedule(events={len(self.events)}, end={self.end})"
