"""Pure transforms of a `Trace`: time window, time compression, mapping onto N slots."""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from fractions import Fraction

from .formats import Session, Trace, TraceError


def window(trace: Trace, start: int, end: int | None = None) -> Trace:
    """Keep ``[start, end)``: sessions clipped to it, times re-based so `start` is 0.

    Nodes with no session left are dropped; the new end is ``min(end, trace.end) - start``.
    """
    stop = trace.end if end is None else min(int(end), trace.end)
    start = int(start)
    if start < 0 or start >= stop:
        raise ValueError(f"empty window [{start}, {stop}) of a trace ending at {trace.end}")
    out: dict[str, list[Session]] = {}
    for node, ss in trace.sessions.items():
        kept = [
            (max(s, start) - start, min(e, stop) - start) for s, e in ss if s < stop and e > start
        ]
        if kept:
            out[node] = kept
    return Trace(out, stop - start)


@dataclass(frozen=True)
class CompressReport:
    """What `compress` changed besides dividing: sessions lengthened or pushed later."""

    factor: float
    stretched: int  # sessions that rounded to zero length, kept as 1 s
    shifted: int  # sessions whose start moved later to stay after the previous one

    def describe(self) -> str:
        return (
            f"compress: times divided by {self.factor:g} and rounded to the nearest "
            f"second; {self.stretched} sessions stretched to 1 s, "
            f"{self.shifted} shifted to keep order"
        )


def _rounder(factor: float):
    f = Fraction(factor)

    def r(t: int) -> int:
        return math.floor(Fraction(t) / f + Fraction(1, 2))  # nearest, halves up

    return r


def compress(trace: Trace, factor: float) -> tuple[Trace, CompressReport]:
    """Divide every time by `factor` (> 1 speeds the trace up), rounding to the nearest second.

    Rounding is monotone, so order is kept; no session vanishes: one that rounds
    to zero length is kept as 1 s, and if that would reach into the next session
    the next one starts (and, if needed, ends) later. The report counts both.
    """
    if not (math.isfinite(factor) and factor > 0):
        raise ValueError(f"compression factor must be a positive number, not {factor}")
    r = _rounder(factor)
    stretched = shifted = 0
    out: dict[str, list[Session]] = {}
    last = 0
    for node, ss in trace.sessions.items():
        acc: list[Session] = []
        prev_end = 0
        for s, e in ss:
            s2, e2 = r(s), r(e)
            if s2 < prev_end:
                s2 = prev_end
                shifted += 1
            if e2 <= s2:
                e2 = s2 + 1
                stretched += 1
            acc.append((s2, e2))
            prev_end = e2
        out[node] = acc
        last = max(last, prev_end)
    return Trace(out, max(r(trace.end), last)), CompressReport(factor, stretched, shifted)


@dataclass(frozen=True)
class SlotAssignment:
    node: str
    start: int
    end: int
    slot: int


@dataclass(frozen=True)
class SlotMapping:
    """Trace sessions placed on at most `max_slots` concurrent slots.

    `trace` has one node per slot, named "0", "1", ...; `assignments` says which
    trace node each slot session stands for; `dropped` lists sessions that found
    no free slot.
    """

    trace: Trace
    max_slots: int
    peak_concurrency: int
    assignments: tuple[SlotAssignment, ...]
    dropped: tuple[tuple[str, int, int], ...]

    def describe(self) -> str:
        used = len(self.trace)
        msg = (
            f"slots: {used} of {self.max_slots} used, peak concurrency "
            f"{self.peak_concurrency}, {len(self.assignments)} sessions placed"
        )
        if self.dropped:
            msg += f", {len(self.dropped)} dropped (no free slot)"
        return msg


def map_to_slots(trace: Trace, max_slots: int, on_overflow: str = "drop") -> SlotMapping:
    """Place sessions on at most `max_slots` slots, reusing a slot once it is free.

    A returning node gets its previous slot back when that is free (so a driver
    can keep its identity), else the lowest free slot. When all slots are busy
    at a session's start, the session is dropped and listed (``on_overflow="drop"``)
    or a `TraceError` tells the peak concurrency (``on_overflow="error"``).
    """
    if max_slots < 1:
        raise ValueError(f"max_slots must be at least 1, not {max_slots}")
    if on_overflow not in ("drop", "error"):
        raise ValueError(f"on_overflow must be 'drop' or 'error', not {on_overflow!r}")
    # Ends before starts at equal times: a slot freed at t can be reused at t.
    events = sorted(
        [(s, 1, node, e) for node, ss in trace.sessions.items() for s, e in ss]
        + [(e, 0, node, s) for node, ss in trace.sessions.items() for s, e in ss]
    )
    peak = online = 0
    for _, kind, _, _ in events:
        online += 1 if kind else -1
        peak = max(peak, online)
    if peak > max_slots and on_overflow == "error":
        raise TraceError(f"{peak} nodes are up at once, more than the {max_slots} slots")
    free = list(range(max_slots))  # min-heap; entries may be stale (lazy deletion)
    is_free = [True] * max_slots
    holding: dict[tuple[str, int], int] = {}  # (node, session start) -> slot
    last_slot: dict[str, int] = {}
    slot_sessions: dict[int, list[Session]] = {}
    assignments: list[SlotAssignment] = []
    dropped: list[tuple[str, int, int]] = []
    for t, kind, node, other in events:
        if kind == 0:
            slot = holding.pop((node, other), None)
            if slot is not None:
                is_free[slot] = True
                heapq.heappush(free, slot)
            continue
        slot = last_slot.get(node)
        if slot is None or not is_free[slot]:
            while free and not is_free[free[0]]:
                heapq.heappop(free)
            if not free:
                dropped.append((node, t, other))
                continue
            slot = heapq.heappop(free)
        is_free[slot] = False
        holding[(node, t)] = slot
        last_slot[node] = slot
        slot_sessions.setdefault(slot, []).append((t, other))
        assignments.append(SlotAssignment(node, t, other, slot))
    slot_trace = Trace({str(k): slot_sessions[k] for k in sorted(slot_sessions)}, trace.end)
    return SlotMapping(slot_trace, max_slots, peak, tuple(assignments), tuple(dropped))
