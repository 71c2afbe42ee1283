"""Summary statistics of a trace, as listed in shared/traces/README.md."""

from __future__ import annotations

from .artefacts import detect_glitches, detect_startup
from .formats import Trace
from .population import Population


def percentile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), q in [0, 100]."""
    if not sorted_values:
        return 0.0
    pos = (len(sorted_values) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def session_lengths(trace: Trace, uncensored: bool = False) -> list[int]:
    """Sorted session lengths in seconds.

    With `uncensored`, sessions cut by the end of the trace are left out (their
    true length is unknown); sessions up at time 0 are kept.
    """
    return sorted(
        e - s
        for ss in trace.sessions.values()
        for s, e in ss
        if not (uncensored and e >= trace.end)
    )


def daily_profile(trace: Trace, probe_seconds: int = 1800) -> list[float]:
    """Mean online population for each hour of the day (hour 0 = trace time 0)."""
    pop = Population(trace)
    sums = [0.0] * 24
    counts = [0] * 24
    for t in range(0, trace.end, probe_seconds):
        h = (t % 86400) // 3600
        sums[h] += pop.at(t)
        counts[h] += 1
    return [s / c if c else 0.0 for s, c in zip(sums, counts, strict=True)]


def trace_stats(trace: Trace, probe_seconds: int = 1800) -> dict:
    """Nodes, sessions, session lengths (h), online population, churn rates, artefacts.

    The population is sampled every `probe_seconds` from 0 (the probes of the
    README); ``population_*_exact`` are the extremes over all instants, which
    catch dips between two probes (Skype's minimum of 97 lies at 3.53 h, between
    probes that are only 131 s apart).
    """
    if probe_seconds < 1:
        raise ValueError("probe_seconds must be at least 1")
    lengths = session_lengths(trace)
    hours = [x / 3600 for x in lengths]
    pop = Population(trace)
    samples = [pop.at(t) for t in range(0, max(trace.end, 1), probe_seconds)]
    instants = [pop.at(t) for t in pop.change_points() if t < trace.end] or [0]
    duration_h = trace.end / 3600
    joins = sum(1 for s in pop.starts if s > 0)  # up at time 0 is not a join
    leaves = sum(1 for e in pop.ends if e < trace.end)  # up at the end is not a leave
    profile = daily_profile(trace, probe_seconds)
    mean_pop = sum(samples) / len(samples)
    busy = [p for p in profile if p > 0]
    amplitude = (max(busy) - min(busy)) / 2 / mean_pop if busy and mean_pop else 0.0
    startup = detect_startup(trace, probe_seconds)
    return {
        "nodes": len(trace),
        "sessions": len(lengths),
        "start": pop.starts[0] if pop.starts else 0,
        "end": trace.end,
        "duration_hours": round(duration_h, 3),
        "session_median_h": round(percentile(hours, 50), 3),
        "session_mean_h": round(sum(hours) / len(hours), 3) if hours else 0.0,
        "session_p10_h": round(percentile(hours, 10), 3),
        "session_p90_h": round(percentile(hours, 90), 3),
        "censored_sessions": sum(1 for e in pop.ends if e >= trace.end),
        "probe_seconds": probe_seconds,
        "population_min": min(samples),
        "population_mean": round(mean_pop, 1),
        "population_max": max(samples),
        "population_min_exact": min(instants),
        "population_max_exact": max(instants),
        "daily_amplitude": round(amplitude, 3),
        "joins_per_hour": round(joins / duration_h, 2) if duration_h else 0.0,
        "leaves_per_hour": round(leaves / duration_h, 2) if duration_h else 0.0,
        "glitches": [g.to_dict() for g in detect_glitches(trace, probe_seconds)],
        "startup": startup.to_dict() if startup else None,
    }
