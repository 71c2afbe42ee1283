"""Our value for each of the paper's claims, per configuration and workload."""

from __future__ import annotations

from dataclasses import dataclass

from vinifera.experiment import table
from vinifera.experiment.claims import CLAIMS, Claim, verdict
from vinifera.experiment.figures import Figure, variant
from vinifera.experiment.series import LOAD_GRID

# Parameters that tell Vinifera's lines from the baseline's at the same point.
SYSTEM_PARAMS = ("system", "profile", "friends")


@dataclass(frozen=True)
class Comparison:
    claim: Claim
    variant: str
    workload: str
    ours: str  # our value, formatted
    verdict: str


def compare(fig: Figure, rows: list[dict]) -> list[Comparison]:
    groups = table.groups(fig, rows)
    out = []
    for claim in CLAIMS.get(fig.name, ()):
        workloads = list(dict.fromkeys(p["subscriptions"] for p, _ in groups))
        for workload in workloads:
            if claim.subscriptions not in (None, workload):
                continue
            mine = [(p, runs) for p, runs in groups if p["subscriptions"] == workload]
            names = list(dict.fromkeys(variant(p) for p, _ in mine if p["system"] == claim.system))
            for name in names:
                selected = [(p, runs) for p, runs in mine if variant(p) == name]
                ours, value = _ours(fig, claim, selected, mine)
                out.append(Comparison(claim, name, workload, ours, verdict(claim, value)))
    return out


def _metric(claim: Claim, run: dict):
    if claim.metric == "load_cdf":
        return run["load_cdf"][LOAD_GRID.index(claim.x)]
    return run.get(claim.metric)


def _mean_of(claim: Claim, runs: list[dict]) -> float | None:
    return table.stats([_metric(claim, r) for r in runs])["mean"]


def _at_x(fig: Figure, claim: Claim, params: dict) -> bool:
    if claim.x is None or fig.kind != "lines":
        return True
    return params.get(fig.x) in (None, claim.x)


def _ours(fig: Figure, claim: Claim, selected, workload_groups) -> tuple[str, float | None]:
    """(formatted, value compared with the claim): the mean over seeds, or its
    ratio to our baseline's at the same point; over several x, their mean."""
    values = []  # (x, value, sd)
    for params, runs in selected:
        if not _at_x(fig, claim, params):
            continue
        s = table.stats([_metric(claim, r) for r in runs])
        x = params.get(fig.x) if fig.kind == "lines" else None
        if claim.of_baseline:
            base = _baseline(params, workload_groups)
            b = None if base is None else _mean_of(claim, base)
            if s["mean"] is None or not b:
                continue
            values.append((x, s["mean"] / b, None))
        elif s["mean"] is not None:
            values.append((x, s["mean"], s["sd"]))
    if not values:
        return "—", None
    if claim.value is None:  # the paper's words only: show the trend or the dip
        return _describe(fig, claim, selected, values), None
    ratio = " × baseline" if claim.of_baseline else ""
    if len(values) == 1:
        _, v, sd = values[0]
        return f"{_fmt(v)}{ratio}" + (f" ± {_fmt(sd)}" if sd else ""), v
    mean = sum(v for _, v, _ in values) / len(values)
    lo, hi = min(v for _, v, _ in values), max(v for _, v, _ in values)
    swept = [
        k
        for k in selected[0][0]
        if k not in SYSTEM_PARAMS and len({str(p[k]) for p, _ in selected}) > 1
    ]
    where = "; ".join(_swept(k, selected) for k in swept) or "points"
    return f"{_fmt(mean)}{ratio} (mean over {where}; {_fmt(lo)}–{_fmt(hi)})", mean


def _swept(key: str, selected) -> str:
    """The values a claim's mean is over, e.g. `nodes = 1000, 2000, 5000`
    (the bare name read as if averaged over a network's nodes)."""
    values = dict.fromkeys(_fmt(p[key]) if isinstance(p[key], float) else str(p[key])
                           for p, _ in selected)  # fmt: skip
    return f"{key} = {', '.join(values)}"


def _baseline(params: dict, groups) -> list[dict] | None:
    same = {k: v for k, v in params.items() if k not in SYSTEM_PARAMS}
    for p, runs in groups:
        if p["system"] == "baseline" and {k: p[k] for k in same} == same:
            return runs
    return None


def _describe(fig: Figure, claim: Claim, selected, values) -> str:
    if fig.kind == "series":
        runs = [r for _, rs in selected for r in rs]
        lows = [
            (w[claim.metric], w["start_hours"])
            for r in runs
            for w in r["series"]
            if w[claim.metric] is not None
        ]
        overall = sum(v for _, v, _ in values) / len(values)
        text = f"overall {_fmt(overall)}"
        if lows:
            low, at = min(lows)
            text += f"; lowest window {_fmt(low)} (the one from {at:g} h)"
        return text
    if fig.kind == "lines" and len(values) > 1:
        ordered = sorted(values, key=lambda t: t[0])
        return " → ".join(f"{fig.x} {x:g}: {_fmt(v)}" for x, v, _ in ordered)
    return ", ".join(_fmt(v) for _, v, _ in values)


def _fmt(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v:.3g}" if abs(v) < 100 else f"{v:,.0f}"
