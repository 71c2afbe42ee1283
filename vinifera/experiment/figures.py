"""Each figure of the paper as a declared grid of independent simulations.

A grid maps every parameter the figure uses to the values it takes: a
parameter with several values is swept (the cartesian product of all of
them, seeds included, is the set of points), one with a single value is
fixed. `--set` replaces any of them; a name the figure does not use is an
error. Points that do not depend on a parameter (the baseline has no
profile and no friend links) are merged.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from vinifera.churn_traces import skype_trace_path
from vinifera.experiment.params import PARAMS, GridError
from vinifera.protocol.config import SYSTEMS

# Where docs/experiments.md says the Skype trace lives beside a checkout
# (or VINIFERA_SKYPE_TRACE); it is not redistributed, so users point
# --trace at their own copy.
DEFAULT_TRACE = str(skype_trace_path())
SEEDS = (1, 2, 3)
PROFILES = ("ours", "paper")
WORKLOADS = ("random", "skewed")
# docs/experiments.md: 50 warm-up rounds, then 50 measured; 10 events per round.
STEADY = {"rounds": 100, "events_per_round": 10.0}


@dataclass(frozen=True)
class Figure:
    name: str
    title: str
    # What the paper's figure shows (for `list` and the docs).
    shows: str
    # Parameter -> its declared values, in table order (seed last).
    grid: dict[str, tuple] = field(default_factory=dict)
    # The x axis of the plot ("lines": a parameter; "cdf": the load; "series": time).
    x: str | None = None
    # Plotted metrics, one row of panels each (a column per workload).
    metrics: tuple[str, ...] = ()
    kind: str = "lines"
    log_x: bool = False
    # How to read it (printed in its section of docs/evaluation.md).
    notes: str = ""

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(self.grid)


def _grid(axis: dict, **fixed) -> dict[str, tuple]:
    grid = {"system": SYSTEMS, "profile": PROFILES, "subscriptions": WORKLOADS}
    grid.update(axis)
    grid.update({k: (v,) for k, v in fixed.items()})
    grid["seed"] = SEEDS
    return grid


FIGURES: dict[str, Figure] = {
    f.name: f
    for f in (
        Figure(
            "fig3",
            "Friend links: K_f = 0 ... 8 with K_sw = 8 - K_f",
            "traffic overhead and delivery path length against K_f, N = 1,000",
            _grid(
                {"subscriptions": ("skewed", "random"), "friends": (0, 2, 4, 6, 8)},
                nodes=1000,
                attributes=1,
                **STEADY,
            ),
            x="friends",
            metrics=("traffic_overhead", "path_length"),
            notes="The baseline has no friend links (2 ring + 8 small-world links): it is one "
            "value per workload, drawn as a line with its min-max band. Both Vinifera lines "
            "use K_f and K_sw = 8 - K_f; they differ in the identifiers only.",
        ),
        Figure(
            "fig4a",
            "Traffic overhead against the network size",
            "traffic overhead against N = 1,000 ... 10,000",
            _grid({"nodes": (1000, 2000, 5000, 10000)}, attributes=1, **STEADY),
            x="nodes",
            metrics=("traffic_overhead",),
            log_x=True,
        ),
        Figure(
            "fig4b",
            "Delivery path length against the network size",
            "delivery path length against N = 1,000 ... 10,000",
            _grid({"nodes": (1000, 2000, 5000, 10000)}, attributes=1, **STEADY),
            x="nodes",
            metrics=("path_length",),
            log_x=True,
        ),
        Figure(
            "fig4c",
            "Traffic overhead against the number of attributes",
            "traffic overhead against d = 1 ... 5 attributes, N = 1,000",
            _grid({"attributes": (1, 2, 3, 4, 5)}, nodes=1000, **STEADY),
            x="attributes",
            metrics=("traffic_overhead",),
        ),
        Figure(
            "fig4d",
            "Delivery path length against the number of attributes",
            "delivery path length against d = 1 ... 5 attributes, N = 1,000",
            _grid({"attributes": (1, 2, 3, 4, 5)}, nodes=1000, **STEADY),
            x="attributes",
            metrics=("path_length",),
        ),
        Figure(
            "fig4e",
            "Load distribution",
            "CDF of the node load (events forwarded / events published), d = 1, 2, 3",
            _grid({"attributes": (1, 2, 3)}, nodes=1000, **STEADY),
            x="load",
            metrics=("load_cdf",),
            kind="cdf",
            notes="Load of a node = events it forwarded to at least one node / events "
            "published in the measurement window, over the nodes alive in it; each curve is "
            "the mean CDF over seeds with its min-max band.",
        ),
        Figure(
            "fig4f",
            "Hit ratio under congestion",
            "hit ratio against the publication rate 1X ... 5X, each node handling at most "
            "X event messages per round",
            _grid(
                {"rate": (1.0, 2.0, 3.0, 4.0, 5.0)},
                capacity=10,
                nodes=1000,
                attributes=1,
                rounds=100,
            ),
            x="rate",
            metrics=("hit_ratio",),
            notes="X = `capacity` event messages a node handles per round (the rest are "
            "dropped); rate r publishes r * X events per round.",
        ),
        Figure(
            "fig5",
            "The Skype superpeer churn trace",
            "hit ratio (a), traffic overhead (b) and path length (c) over time, "
            "with the network size",
            _grid(
                {},
                trace=DEFAULT_TRACE,
                end_hours=None,
                # A 4-minute gossip period, as in the 48 h and month replays
                # that the scalable core's bars are judged on
                # (docs/decisions/churn.md, "Trace replays at 240 s per
                # round"): 120 s would double each simulation's cost.
                round_seconds=240.0,
                window_hours=2.0,
                glitches="keep",
                events_per_round=10.0,
                attributes=1,
            ),
            x="hours",
            metrics=("hit_ratio", "traffic_overhead", "path_length"),
            kind="series",
            notes="One node per trace node, joining and crashing when the trace says "
            "(glitches kept unless glitches=filter); one round = `round_seconds` of the trace. "
            "The series covers the whole replay in windows of `window_hours`, each counting "
            "the events published in it; the overall numbers in the tables count from the end "
            "of the start-up flash crowd, rounded up to the hour (Skype: 4 h). The paper's "
            "K_f = ceil(log2 N) - 2 takes N = the time-averaged online population (Skype: "
            "about 690, so K_f = 8).",
        ),
    )
}


def figure(name: str) -> Figure:
    try:
        return FIGURES[name]
    except KeyError:
        raise GridError(f"unknown figure {name!r}; choose from {', '.join(FIGURES)}") from None


def override(fig: Figure, changes: dict[str, tuple]) -> dict[str, tuple]:
    """The figure's grid with some parameters' values replaced."""
    grid = dict(fig.grid)
    for name, values in changes.items():
        if name not in grid:
            known = ", ".join(grid)
            hint = "" if name in PARAMS else " (not a parameter of any figure)"
            raise GridError(f"{fig.name} has no parameter {name!r}{hint}; its parameters: {known}")
        for v in values:
            PARAMS[name].check(v)
        grid[name] = tuple(values)
    return grid


def changes_from_declared(fig: Figure, grid: dict[str, tuple]) -> dict[str, tuple]:
    """Parameters whose values differ from the figure's declaration."""
    return {k: v for k, v in grid.items() if fig.grid[k] != v}


def normalize(point: dict) -> dict:
    """Parameters that do not apply to a point set to None: the baseline has
    neither profile nor friend links (it is 2 ring + 8 small-world links)."""
    if point["system"] == "baseline":
        point = dict(point, profile=None)
        if "friends" in point:
            point["friends"] = None
    return point


def points(grid: dict[str, tuple]) -> list[dict]:
    """Every distinct point of the grid, in grid order."""
    names = list(grid)
    seen: set = set()
    out = []
    for combo in itertools.product(*(grid[n] for n in names)):
        point = normalize(dict(zip(names, combo, strict=True)))
        ident = tuple(point.items())
        if ident not in seen:
            seen.add(ident)
            out.append(point)
    return out


def variant(point: dict) -> str:
    """The line a point belongs to: "vinifera (ours)", "vinifera (paper)" or "baseline"."""
    if point["system"] == "baseline":
        return "baseline"
    return f"vinifera ({point['profile']})"
