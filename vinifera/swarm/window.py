"""The measurement window of a swarm run, and the rule for node logs that
stop without a `leave`: one definition, used by `vinifera swarm up` (its
printed result and results.json) and by `vinifera analyze` (Spark), so the
two count the same events and the same expected pairs (docs/metrics.md).

The runner writes, in the swarm's manifest, in the nodes' clock (Unix
seconds):

- `origin`: when it started the first node (time zero of every plot);
- `measure_from`: when it started publishing (the overlay had formed);
- `measure_until`: when it stopped publishing (the end of the run, or Ctrl-C);
- `period` and `deadline_periods` (docs/experiments.md: 5 rounds).

Events count when published in [measure_from, measure_until - deadline):
every counted event has its whole delivery deadline inside the run, before
the runner stops the nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

# docs/experiments.md: the delivery deadline is 5 rounds (gossip periods).
DEADLINE_PERIODS = 5.0


@dataclass(frozen=True)
class MeasurementWindow:
    origin: float  # time zero of the run, in the logs' clock
    start: float  # events published from here (inclusive) ...
    end: float  # ... until here (exclusive) count
    deadline: float  # seconds an expected pair has to be delivered
    period: float  # one gossip period: the width of a time window

    @property
    def empty(self) -> bool:
        return not self.end > self.start


def is_swarm(manifest: dict | None) -> bool:
    return isinstance(manifest, dict) and manifest.get("kind") == "swarm"


def swarm_window(manifest: dict) -> MeasurementWindow | None:
    """The window of a swarm manifest, or None when the run never started
    publishing (interrupted while forming) or the manifest predates these
    fields. Raises ValueError on fields of the wrong type."""
    if not is_swarm(manifest):
        raise ValueError("not a swarm manifest (kind is not 'swarm')")
    fields = ("origin", "measure_from", "measure_until", "period")
    if any(manifest.get(f) is None for f in fields):
        return None
    try:
        origin, start, until, period = (float(manifest[f]) for f in fields)
        deadline = float(manifest.get("deadline_periods", DEADLINE_PERIODS)) * period
    except (TypeError, ValueError):
        raise ValueError(f"manifest: {', '.join(fields)} must be numbers") from None
    return MeasurementWindow(origin, start, until - deadline, deadline, period)


# ----------------------------------------------------------------- silent ends

LIFE_START = "join"
LIFE_END = ("leave", "crash")


def inferred_crashes(records_by_node: dict[str, list[dict]]) -> list[dict]:
    """Crash records for lives that end without one (docs/metrics.md).

    A daemon logs `leave` when it stops, and the swarm runner logs `crash`
    for a node it kills or sees die. A life (from a `join`) that reaches the
    next `join` of the same node, or the end of its log, without either
    ended silently: the node was killed where nobody watched. It is taken
    to have crashed at its last record (the last sign of life; what it did
    after that, if anything, is lost with its unflushed buffer).

    `records_by_node`: each node's records in log order (time, then line).
    Returns the inferred `crash` records, marked `"inferred": true`.
    """
    out = []
    for node, recs in records_by_node.items():
        open_life = False
        last_t = None
        for rec in recs:
            ev = rec["ev"]
            if ev == LIFE_START:
                if open_life:
                    out.append(_crash(node, last_t))
                open_life = True
            elif ev in LIFE_END:
                open_life = False
            last_t = rec["t"]
        if open_life:
            out.append(_crash(node, last_t))
    return out


def _crash(node: str, t: float) -> dict:
    return {"v": 1, "t": t, "node": node, "ev": "crash", "inferred": True}
