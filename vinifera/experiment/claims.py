"""The paper's reported values (docs/experiments.md, "The paper's
numbers"), as data: marked on each PNG beside ours and compared in
docs/evaluation.md.

A claim is about one system on one workload (or both), at one x of the
figure or at every x. Its value is absolute, or, with `of_baseline`, a
factor of our own baseline's value at the same point (the paper gives
"about a third of the baseline" rather than a number). A claim without a
value is the paper's words only: the doc shows ours beside them.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

# Metrics where less is better (the rest: more is better).
LOWER_IS_BETTER = {"traffic_overhead", "path_length", "load_max", "cost"}
# "matches" within this relative distance (or 0.02 absolute for fractions).
TOLERANCE = 0.10


@dataclass(frozen=True)
class Claim:
    metric: str
    system: str  # "vinifera" or "baseline"
    text: str  # the paper's words
    value: float | None = None
    relation: str = "≈"  # "≈", "<", "≤", ">", "≥"
    subscriptions: str | None = None  # None: both workloads
    # The figure's x (Fig. 4e: the load at which the CDF is read); None: every x.
    x: float | None = None
    of_baseline: bool = False


def _c(metric, system, text, value=None, relation="≈", subs=None, x=None, of_baseline=False):
    return Claim(metric, system, text, value, relation, subs, x, of_baseline)


OH, PATH, HIT = "traffic_overhead", "path_length", "hit_ratio"
CLAIMS: dict[str, tuple[Claim, ...]] = {
    "fig3": (
        _c(OH, "baseline", "skewed: overhead > 32%", 0.32, ">", "skewed"),
        _c(PATH, "baseline", "skewed: path ≈ 7", 7.0, "≈", "skewed"),
        _c(OH, "vinifera", "skewed: overhead 22% at K_f = 0", 0.22, "≈", "skewed", 0),
        _c(OH, "vinifera", "skewed: overhead < 10% at K_f = 8", 0.10, "<", "skewed", 8),
        _c(PATH, "vinifera", "skewed: path → ≈ 3 at K_f = 8", 3.0, "≈", "skewed", 8),
        _c(
            OH,
            "vinifera",
            "random, K_f = 0: ≈ the baseline's overhead",
            1.0,
            "≈",
            "random",
            0,
            True,
        ),
        _c(PATH, "vinifera", "random, K_f = 0: shorter paths already", 1.0, "<", "random", 0, True),
    ),
    "fig4a": (
        _c(OH, "baseline", "random: > 80%", 0.80, ">", "random"),
        _c(OH, "vinifera", "random: ≈ 60%", 0.60, "≈", "random"),
        _c(OH, "baseline", "skewed: ≈ half of its random value (≈ 40%)", 0.40, "≈", "skewed"),
        _c(OH, "vinifera", "skewed: ≈ 1/6 of its random value (≈ 10%)", 0.10, "≈", "skewed"),
    ),
    "fig4b": (_c(PATH, "vinifera", "≈ 1/3 of the baseline's path", 1 / 3, of_baseline=True),),
    "fig4c": (
        _c(OH, "baseline", "random: ≈ 80%", 0.80, "≈", "random"),
        _c(OH, "vinifera", "random, d = 1: 58%", 0.58, "≈", "random", 1),
        _c(
            OH,
            "vinifera",
            "random: rising with d, below the baseline",
            1.0,
            "<",
            "random",
            of_baseline=True,
        ),
        _c(OH, "baseline", "skewed: improves with d", subs="skewed"),
        _c(OH, "vinifera", "skewed: ≈ 1/3 of the baseline", 1 / 3, "≈", "skewed", of_baseline=True),
    ),
    "fig4d": (
        _c(PATH, "baseline", "slightly shorter with d"),
        _c(
            PATH,
            "vinifera",
            "far shorter than the baseline up to d = 5",
            1.0,
            "<",
            of_baseline=True,
        ),
    ),
    "fig4e": (
        _c("load_cdf", "baseline", "≈ 40% of the nodes at load 0", 0.40, "≈", x=0.0),
        _c("load_cdf", "baseline", "10% of the nodes above 60%", 0.90, "≈", x=0.6),
        _c("load_max", "baseline", "the rendezvous ≈ 100%", 1.0, "≈"),
        _c("load_cdf", "vinifera", "95% of the nodes below 20%", 0.95, "≥", x=0.2),
        _c("load_max", "vinifera", "max ≤ 30%", 0.30, "≤"),
    ),
    "fig4f": (
        _c(HIT, "baseline", "drops sharply past X"),
        _c(HIT, "vinifera", "stays high up to 5X"),
    ),
    "fig5": (
        _c(HIT, "baseline", "5a: degrades, rarely repaired"),
        _c(HIT, "vinifera", "5a: dips at the flash crowd (≈ 100 h), back to 100%"),
        _c(OH, "vinifera", "5b: ≈ 1/4 of the baseline", 0.25, "≈", of_baseline=True),
        _c(PATH, "vinifera", "5c: ≈ 4x shorter than the baseline", 0.25, "≈", of_baseline=True),
    ),
}


def verdict(claim: Claim, ours: float | None) -> str:
    """How our value (absolute, or our ratio to our baseline) stands against the claim."""
    if ours is None or claim.value is None:
        return ""
    v = claim.value
    tol = max(TOLERANCE * abs(v), 0.02 if v <= 1.0 else 0.0)
    lower = claim.metric in LOWER_IS_BETTER
    if claim.relation in ("<", "≤", ">", "≥"):
        holds = {
            "<": ours < v,
            "≤": ours <= v,
            ">": ours > v,
            "≥": ours >= v,
        }[claim.relation]
        if claim.system == "baseline":
            return "as in the paper" if holds else "unlike the paper"
        return "meets it" if holds else "misses it"
    if abs(ours - v) <= tol:
        return "matches"
    if claim.system == "baseline":
        return "higher than the paper's" if ours > v else "lower than the paper's"
    better = ours < v if lower else ours > v
    return "beats it" if better else "misses it"


def mean(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None
