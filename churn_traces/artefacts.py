"""Monitoring artefacts in measured traces: one-probe glitches and the start-up flash crowd.

A replay should be able to keep or remove them and say which it did, so each
detector returns what it found and each filter returns a report beside the new
trace. The rules and their thresholds are explained in docs/traces.md.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from .formats import Session, Trace
from .population import Population
from .transform import window

# One-probe glitch: the gap between a node's two sessions is at most this many
# probe intervals (1.5 absorbs the monitor's jitter of 30-130 s per probe).
GLITCH_MAX_GAP_PROBES = 1.5
# ... and at one instant enough nodes do it: normally ~4 nodes per probe leave
# and return one probe later (p99 ~55); the Skype glitches take 31-48% of the
# online nodes, the largest other such event 23% (145 nodes at 18.1 h); two
# events of 40-44 nodes inside the start-up mess reach 27-30%.
GLITCH_MIN_FRACTION = 0.25
GLITCH_MIN_NODES = 50

# Flash crowd: within the first hours, one probe interval in which the joins
# reach this many times the population up before it and this share of all nodes
# (Skype: 1,111 joins onto 147 up, 53% of the nodes; steady churn is ~1%).
STARTUP_HORIZON_HOURS = 12.0
STARTUP_MIN_FACTOR = 2.0
STARTUP_MIN_FRACTION = 0.10


@dataclass(frozen=True)
class Glitch:
    """Nodes whose session ended at `time` and resumed within about one probe."""

    time: int
    nodes: tuple[str, ...]
    population_before: int

    @property
    def fraction(self) -> float:
        return len(self.nodes) / self.population_before if self.population_before else 0.0

    def to_dict(self) -> dict:
        return {
            "time": self.time,
            "time_h": round(self.time / 3600, 2),
            "nodes": len(self.nodes),
            "population_before": self.population_before,
            "fraction": round(self.fraction, 3),
        }


@dataclass(frozen=True)
class GlitchReport:
    """What `filter_glitches` did: which glitches, how many sessions were merged."""

    glitches: tuple[Glitch, ...]
    sessions_merged: int

    def describe(self) -> str:
        if not self.glitches:
            return "glitches: none found, trace unchanged"
        times = ", ".join(f"{g.time / 3600:.1f} h ({len(g.nodes)} nodes)" for g in self.glitches)
        return (
            f"glitches: filtered {len(self.glitches)} at {times}; "
            f"merged {self.sessions_merged} session gaps"
        )


@dataclass(frozen=True)
class StartupArtefact:
    """A mass join in one probe interval near the start; `time` is when it completes."""

    time: int
    joins: int
    population_before: int
    population_after: int

    def to_dict(self) -> dict:
        return {
            "time": self.time,
            "time_h": round(self.time / 3600, 2),
            "joins": self.joins,
            "population_before": self.population_before,
            "population_after": self.population_after,
        }

    def describe(self) -> str:
        return (
            f"start-up flash crowd: {self.joins} joins by {self.time / 3600:.2f} h "
            f"(population {self.population_before} -> {self.population_after})"
        )


def detect_glitches(
    trace: Trace,
    probe_seconds: int = 1800,
    min_fraction: float = GLITCH_MIN_FRACTION,
    min_nodes: int = GLITCH_MIN_NODES,
) -> list[Glitch]:
    """Instants where many nodes end a session and start the next about one probe later."""
    max_gap = int(GLITCH_MAX_GAP_PROBES * probe_seconds)
    by_time: dict[int, list[str]] = defaultdict(list)
    for node, ss in trace.sessions.items():
        for (_, e1), (s2, _) in zip(ss, ss[1:], strict=False):
            if s2 - e1 <= max_gap:
                by_time[e1].append(node)
    pop = Population(trace)
    found = []
    for t in sorted(by_time):
        nodes = by_time[t]
        before = pop.just_before(t)
        if len(nodes) >= min_nodes and len(nodes) >= min_fraction * before:
            found.append(Glitch(t, tuple(sorted(nodes)), before))
    return found


def filter_glitches(
    trace: Trace,
    glitches: list[Glitch] | None = None,
    probe_seconds: int = 1800,
    min_fraction: float = GLITCH_MIN_FRACTION,
    min_nodes: int = GLITCH_MIN_NODES,
) -> tuple[Trace, GlitchReport]:
    """Merge each glitch node's two sessions around the glitch back into one."""
    if glitches is None:
        glitches = detect_glitches(trace, probe_seconds, min_fraction, min_nodes)
    cut: dict[str, set[int]] = defaultdict(set)  # node -> session ends to bridge
    for g in glitches:
        for node in g.nodes:
            cut[node].add(g.time)
    merged = 0
    out: dict[str, list[Session]] = {}
    for node, ss in trace.sessions.items():
        ends = cut.get(node)
        if not ends:
            out[node] = list(ss)
            continue
        acc: list[Session] = []
        for s, e in ss:
            if acc and acc[-1][1] in ends:
                acc[-1] = (acc[-1][0], e)
                merged += 1
            else:
                acc.append((s, e))
        out[node] = acc
    return Trace(out, trace.end), GlitchReport(tuple(glitches), merged)


def detect_startup(
    trace: Trace,
    probe_seconds: int = 1800,
    horizon_hours: float = STARTUP_HORIZON_HOURS,
    min_factor: float = STARTUP_MIN_FACTOR,
    min_fraction: float = STARTUP_MIN_FRACTION,
) -> StartupArtefact | None:
    """The largest qualifying mass join within `horizon_hours` of the start, if any."""
    pop = Population(trace)
    horizon = int(horizon_hours * 3600)
    best: StartupArtefact | None = None
    for t in sorted({s for s in pop.starts if 0 < s <= horizon}):
        lo = max(t - probe_seconds, 0)
        joins = pop.joins_in(lo, t)  # starts at 0 are the initial population, not joins
        before = pop.at(lo)
        if joins < min_factor * before or joins < min_fraction * len(trace):
            continue
        if best is None or joins > best.joins:
            best = StartupArtefact(t, joins, before, pop.at(t))
    return best


def skip_startup(
    trace: Trace, artefact: StartupArtefact | None = None, **detect_kwargs
) -> tuple[Trace, StartupArtefact | None]:
    """Drop the time before the flash crowd completes (times re-based to 0)."""
    if artefact is None:
        artefact = detect_startup(trace, **detect_kwargs)
    if artefact is None:
        return trace, None
    return window(trace, artefact.time, trace.end), artefact
