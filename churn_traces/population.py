"""How many nodes are up at a time: counted with two sorted arrays and bisection."""

from __future__ import annotations

import bisect

from .formats import Trace


class Population:
    """Online counts of a trace at any instant, O(log sessions) per query."""

    __slots__ = ("starts", "ends")

    def __init__(self, trace: Trace):
        self.starts = sorted(s for ss in trace.sessions.values() for s, _ in ss)
        self.ends = sorted(e for ss in trace.sessions.values() for _, e in ss)

    def at(self, t: int) -> int:
        """Nodes up at instant t (sessions are half-open: start <= t < end)."""
        return bisect.bisect_right(self.starts, t) - bisect.bisect_right(self.ends, t)

    def just_before(self, t: int) -> int:
        """Nodes up an instant before t (start < t <= end)."""
        return bisect.bisect_left(self.starts, t) - bisect.bisect_left(self.ends, t)

    def joins_in(self, lo: int, hi: int) -> int:
        """Session starts with lo < start <= hi."""
        return bisect.bisect_right(self.starts, hi) - bisect.bisect_right(self.starts, lo)

    def change_points(self) -> list[int]:
        return sorted(set(self.starts) | set(self.ends))
