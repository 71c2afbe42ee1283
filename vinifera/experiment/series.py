"""Measurements the simulator's summary does not give, taken from the same
log records: the metrics per time window (Fig. 5) and the whole load
distribution (Fig. 4e).

`Windows` stands in for the simulation's Ledger (it is handed every log
record the simulator produces and passes each on): an event's records also
go to the Ledger of the window it was published in. The window Ledgers share
the main one's record of lives and subscriptions, so each event is judged
exactly as the summary judges it, over the events of its window only.
"""

from __future__ import annotations

import bisect
import math

from vinifera.ledger import Ledger

LOAD_GRID = tuple(i / 100 for i in range(101))  # the CDF is sampled at these loads


class Windows:
    def __init__(self, main: Ledger, bounds: list[tuple[float, float]]):
        self.main = main
        self.bounds = bounds
        self.starts = [a for a, _ in bounds]
        self.ledgers = []
        for a, b in bounds:
            ledger = Ledger(main.schema, a, b, main.deadline)
            ledger.lives = main.lives  # fed once, by the main Ledger
            ledger.subs = main.subs
            self.ledgers.append(ledger)
        self.owner: dict[int, Ledger] = {}  # event id -> its window's Ledger

    def feed(self, rec: dict) -> None:
        self.main.feed(rec)
        ev = rec["ev"]
        if ev == "publish":
            i = bisect.bisect_right(self.starts, rec["t"]) - 1
            if i >= 0 and rec["t"] < self.bounds[i][1]:
                self.owner[rec["eid"]] = self.ledgers[i]
                self.ledgers[i].feed(rec)
        elif ev in ("recv", "drop", "deliver", "rendezvous"):
            ledger = self.owner.get(rec["eid"])
            if ledger is not None:
                ledger.feed(rec)

    def summary(self) -> dict:
        return self.main.summary()

    def series(self) -> list[dict]:
        out = []
        for (a, b), ledger in zip(self.bounds, self.ledgers, strict=True):
            s = ledger.summary()
            out.append(
                {
                    "start": a,
                    "end": b,
                    "events_published": s["events_published"],
                    "expected_pairs": s["expected_pairs"],
                    "hit_ratio": s["hit_ratio"],
                    "traffic_overhead": s["traffic_overhead"],
                    "path_length": s["path_length"],
                    "false_positives": s["false_positives"],
                }
            )
        return out


def window_bounds(start: float, end: float, width: float) -> list[tuple[float, float]]:
    """[start, end) cut into windows of `width` (the last may be shorter)."""
    count = max(1, math.ceil((end - start) / width - 1e-9))
    return [(start + i * width, min(end, start + (i + 1) * width)) for i in range(count)]


def loads(ledger: Ledger) -> list[float]:
    """Every node's load, sorted: events it forwarded / events published in
    the window, over nodes alive at some time in it (as Ledger.summary)."""
    n_events = len(ledger.events)
    if not n_events:
        return []
    return sorted(
        len(ledger.forwarded.get(node, ())) / n_events
        for node, lives in ledger.lives.items()
        if any(j < ledger.window_end and d > ledger.window_start for j, d in lives)
    )


def cdf(values: list[float], grid: tuple[float, ...] = LOAD_GRID) -> list[float]:
    """Fraction of `values` (sorted) at or below each grid point."""
    n = len(values)
    return [round(bisect.bisect_right(values, x + 1e-12) / n, 6) if n else None for x in grid]
