"""Fig. 5's trace replay: the churn trace windowed to `end_hours`, its
glitches kept or merged, metrics counted from the end of a start-up flash
crowd rounded up to the hour (Skype: 4 h), as `vinifera sim run --trace`
does by default (docs/traces.md)."""

from __future__ import annotations

import functools
from pathlib import Path

from vinifera.churn_traces import Trace
from vinifera.sim.replay import TraceInputError, TraceReplay, load_replay

# docs/experiments.md: a pair counts when the subscriber stays alive this many rounds.
DEADLINE_ROUNDS = 5.0


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
    if end_hours is not None and round(end_hours * 3600) <= 0:
        raise TraceInputError(f"end_hours={end_hours}: nothing to replay")
    return load_replay(
        path,
        round_seconds=round_seconds,
        end_hours=end_hours,
        glitches=glitches,
        deadline_rounds=DEADLINE_ROUNDS,
    )


def time_averaged_size(tr: Trace) -> float:
    """Mean online population over the trace (Skype: ~690): the N of the
    paper's K_f = ceil(log2 N) - 2 under churn."""
    online = sum(e - s for ss in tr.sessions.values() for s, e in ss)
    return online / tr.end if tr.end else 0.0
