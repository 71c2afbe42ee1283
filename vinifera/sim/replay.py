"""Trace-driven churn for the simulator: nodes join and depart as a churn
trace (`vinifera.churn_traces`) says.

Mapping (docs/traces.md, "Replaying a trace in the simulator"):

- one simulated address per trace node, in the trace's node order; the log's
  `node` field is that address, and `TraceReplay.node_names` maps it back;
- trace time t seconds is virtual time t / round_seconds (one round = one
  gossip period = round_seconds of trace time); joins and departures happen
  at those exact instants, not at round boundaries;
- a returning trace node rejoins at the same address with fresh protocol
  state (a new `Node`: new identifier, empty tables, like a restarted
  daemon on the same host:port) and the same subscription (the user's
  interest outlives the session); each rejoin logs `join` with it;
- a departure is a crash by default (the monitor only saw the node gone;
  nobody was told) or, with departures="leave", a graceful leave.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

from vinifera.churn_traces import (
    ChurnSchedule,
    Trace,
    TraceError,
    detect_startup,
    filter_glitches,
    read_trace,
    window,
)

DEPARTURES = ("crash", "leave")


@dataclass(frozen=True, eq=False)
class TraceReplay:
    """A trace to replay (already windowed and filtered: times from 0) and how."""

    trace: Trace
    # Trace seconds per round (one gossip period).
    round_seconds: float
    # "crash": departed nodes vanish silently; "leave": they say goodbye.
    departures: str = "crash"
    # Events count from this trace time on (seconds from the replay's 0);
    # None leaves the simulator's usual warm-up.
    measure_from: float | None = None
    # Where the trace came from and what was done to it (for the manifest only).
    provenance: tuple[tuple[str, object], ...] = ()

    def __post_init__(self) -> None:
        if not (math.isfinite(self.round_seconds) and self.round_seconds > 0):
            raise ValueError(f"round_seconds must be positive, not {self.round_seconds}")
        if self.departures not in DEPARTURES:
            raise ValueError(f"departures must be 'crash' or 'leave', not {self.departures!r}")
        if len(self.trace) == 0:
            raise ValueError("the trace has no nodes")
        if self.trace.end <= 0:
            raise ValueError("the trace is empty (it ends at 0 s)")
        if self.measure_from is not None and not 0 <= self.measure_from < self.trace.end:
            raise ValueError(
                f"measure_from {self.measure_from} s is outside the replay "
                f"(0 .. {self.trace.end} s)"
            )

    @property
    def node_names(self) -> list[str]:
        """Trace node id of each simulated address (index = address)."""
        return self.trace.nodes

    @property
    def rounds(self) -> int:
        """Rounds that cover the whole trace."""
        return max(1, math.ceil(self.trace.end / self.round_seconds))

    @property
    def warmup_rounds(self) -> int | None:
        """First round whose events count (the measurement window starts there)."""
        if self.measure_from is None:
            return None
        return math.ceil(self.measure_from / self.round_seconds)

    def churn(self) -> list[tuple[float, int, str]]:
        """(virtual time, address, "up"|"down") in trace order (downs first at equal times)."""
        address = {name: i for i, name in enumerate(self.trace.nodes)}
        s = self.round_seconds
        end = self.trace.end
        # A session still up when the trace (or its window) ends does not
        # depart: the last round may reach past the end.
        return [
            (ev.time / s, address[ev.node], ev.kind)
            for ev in ChurnSchedule.from_trace(self.trace)
            if ev.kind == "up" or ev.time < end
        ]

    def online_at(self, t: float) -> int:
        """Trace nodes up at trace time t (seconds): what the replay must show."""
        return sum(1 for ss in self.trace.sessions.values() for a, b in ss if a <= t < b)

    def to_dict(self) -> dict:
        return {
            "round_seconds": self.round_seconds,
            "departures": self.departures,
            "measure_from_seconds": self.measure_from,
            "measure_from_hours": None if self.measure_from is None else self.measure_from / 3600,
            "warmup_rounds": self.warmup_rounds,
            "rounds": self.rounds,
            "trace_nodes": len(self.trace),
            "trace_sessions": self.trace.session_count,
            "trace_seconds": self.trace.end,
            **dict(self.provenance),
        }


class TraceInputError(ValueError):
    """The trace cannot be read, or the window asked for holds nothing to measure."""

    def __init__(self, message: str, *, unreadable: bool = False) -> None:
        super().__init__(message)
        # True when the file itself is at fault (not the window asked of it).
        self.unreadable = unreadable


def load_replay(
    path: str | Path,
    *,
    round_seconds: float = 120.0,
    start_hours: float | None = None,
    end_hours: float | None = None,
    glitches: str = "keep",
    departures: str = "crash",
    measure_from_hours: float | None = None,
    deadline_rounds: float = 5.0,
    publishing: bool = True,
) -> TraceReplay:
    """A trace file -> the TraceReplay of its [start, end) window (times re-based to 0).

    Glitches are judged on the whole trace (as `vinifera trace filter` does),
    then the window is cut. Events count from `measure_from_hours`, by default
    from the end of a start-up flash crowd rounded up to the hour (Skype:
    complete at 3.87 h, so 4 h: its newcomers are still installing their
    subscriptions), else from the simulator's usual warm-up. Raises
    TraceInputError when the file cannot be read or, when `publishing`,
    no event published in the window could be judged.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
        tr = read_trace(path)
    except TraceError as err:
        raise TraceInputError(str(err), unreadable=True) from None
    except OSError as err:
        raise TraceInputError(f"{path}: {err.strerror or err}", unreadable=True) from None
    provenance: dict[str, object] = {
        "trace": str(path),
        "trace_md5": hashlib.md5(data).hexdigest(),
        "trace_seconds_full": tr.end,
        "glitches": glitches,
    }
    if glitches == "filter":
        tr, report = filter_glitches(tr)
        provenance["glitches_filtered"] = [g.to_dict() for g in report.glitches]
        provenance["glitch_sessions_merged"] = report.sessions_merged
    start = round(start_hours * 3600) if start_hours is not None else 0
    end = round(end_hours * 3600) if end_hours is not None else tr.end
    if start >= min(end, tr.end):
        raise TraceInputError(
            f"--start {start / 3600:g} h must be before --end {end / 3600:g} h and before the "
            f"trace ends ({tr.end / 3600:.2f} h)"
        )
    if start or end < tr.end:
        tr = window(tr, start, end)
    if len(tr) == 0:
        raise TraceInputError(
            f"no trace node is up between {start / 3600:g} h and {(start + tr.end) / 3600:g} h"
        )
    provenance["start_hours"] = start / 3600
    provenance["end_hours"] = (start + tr.end) / 3600
    startup = detect_startup(tr)
    provenance["startup"] = None if startup is None else startup.to_dict()
    measure_from: float | None
    if measure_from_hours is not None:
        measure_from = measure_from_hours * 3600
        provenance["measure_from_source"] = "--measure-from"
        if measure_from >= tr.end:
            raise TraceInputError(
                f"--measure-from {measure_from_hours:g} h is not inside the replay "
                f"(0 .. {tr.end / 3600:.2f} h)"
            )
    elif startup is not None and math.ceil(startup.time / 3600) * 3600 < tr.end:
        measure_from = math.ceil(startup.time / 3600) * 3600
        provenance["measure_from_source"] = "start-up flash crowd, rounded up to the hour"
    else:
        measure_from = None
        provenance["measure_from_source"] = "warm-up"
    last = math.ceil(tr.end / round_seconds) - deadline_rounds  # events from here on: unjudged
    if publishing and math.ceil((measure_from or 0) / round_seconds) >= last:
        raise TraceInputError(
            f"nothing to measure: events count from {(measure_from or 0) / 3600:g} h, but only "
            f"those published {deadline_rounds:g} rounds before the replay's end "
            f"({tr.end / 3600:.2f} h) can be judged; use a longer window or an earlier "
            "--measure-from"
        )
    try:
        return TraceReplay(
            tr,
            round_seconds=round_seconds,
            departures=departures,
            measure_from=measure_from,
            provenance=tuple(provenance.items()),
        )
    except ValueError as err:
        raise TraceInputError(str(err)) from None
