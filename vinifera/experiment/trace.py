"""Fig. 5's trace replay: the churn trace windowed to `end_hours`, its
glitches kept or merged, metrics counted from the end of a start-up flash
crowd rounded up to the hour (Skype: 4 h), as `vinifera sim run --trace`
does by default (docs/traces.md)."""

from __future__ import annotations

import functools
import hashlib
import math
from pathlib import Path

from vinifera.churn_traces import (
    Trace,
    TraceError,
    detect_startup,
    filter_glitches,
    read_trace,
    window,
)
from vinifera.sim.replay import TraceReplay

# EXPERIMENTS.md: a pair counts when the subscriber stays alive this many rounds.
DEADLINE_ROUNDS = 5.0


class TraceInputError(ValueError):
    """The trace cannot be read or the window asked for holds nothing to measure."""


def resolve(path: str) -> str:
    """An absolute path that exists (workers on other machines need the same path)."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise TraceInputError(
            f"trace {path!r} not found: fig5 replays the Skype superpeer trace "
            "(../shared/traces/README.md); pass --trace PATH"
        )
    return str(p.resolve())


def replay(point: dict) -> TraceReplay:
    return _replay(point["trace"], point["end_hours"], point["round_seconds"], point["glitches"])


@functools.lru_cache(maxsize=8)
def _replay(path: str, end_hours: float | None, round_seconds: float, glitches: str):
    try:
        data = Path(path).read_bytes()
        full = read_trace(path)
    except TraceError as err:
        raise TraceInputError(str(err)) from None
    except OSError as err:
        raise TraceInputError(f"{path}: {err.strerror or err}") from None
    provenance = {"trace_md5": hashlib.md5(data).hexdigest(), "glitches": glitches}
    tr = full
    if glitches == "filter":  # judged on the whole trace, then windowed
        tr, report = filter_glitches(tr)
        provenance["glitch_sessions_merged"] = report.sessions_merged
    if end_hours is not None:
        end = round(end_hours * 3600)
        if end <= 0:
            raise TraceInputError(f"end_hours={end_hours}: nothing to replay")
        if end < tr.end:
            tr = window(tr, 0, end)
    provenance["end_hours"] = tr.end / 3600
    startup = detect_startup(tr)
    measure_from = None if startup is None else math.ceil(startup.time / 3600) * 3600
    if measure_from is not None and measure_from >= tr.end:
        measure_from = None
    rounds = math.ceil(tr.end / round_seconds)
    first = 0 if measure_from is None else math.ceil(measure_from / round_seconds)
    if first >= rounds - DEADLINE_ROUNDS:
        raise TraceInputError(
            f"end_hours={end_hours}: the replay ({tr.end / 3600:.2f} h) ends before anything "
            f"can be measured (events count from {first * round_seconds / 3600:g} h and need "
            f"{DEADLINE_ROUNDS:g} rounds after them)"
        )
    return TraceReplay(
        tr,
        round_seconds=round_seconds,
        measure_from=measure_from,
        provenance=tuple(provenance.items()),
    )


def time_averaged_size(tr: Trace) -> float:
    """Mean online population over the trace (Skype: ~690): the N of the
    paper's K_f = ceil(log2 N) - 2 under churn."""
    online = sum(e - s for ss in tr.sessions.values() for s, e in ss)
    return online / tr.end if tr.end else 0.0
