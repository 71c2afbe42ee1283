"""Every metric a run reports, declared once (docs/metrics.md defines each in
full; a test checks that page names every key here).

From this table come the ledger's summary keys and their order (the
simulator's summary.json, which the Spark analysis must equal key for
key), the Spark analysis' ratios and table column types, the report's
rows, findings and digits, `vinifera analyze`'s table and the experiment
tables' labels. Each of those picks which metrics it shows; what a metric
is called, how it is rounded, which way is better and how it combines
across time windows is said here and nowhere else.

Adding a metric: one `Metric` below, its computation in vinifera/ledger.py
and in analysis/metrics.py (a ratio of two counts needs neither: `of`
says it, and both compute it from the counts), and its definition in
docs/metrics.md. tests/test_measures.py fails until all four agree.
"""

from __future__ import annotations

from typing import NamedTuple


class Metric(NamedTuple):
    key: str
    label: str  # how reports name it
    short: str  # a narrow table's column header
    kind: str  # "count" (an integer) or "ratio" (a float, rounded to 6 decimals)
    better: str | None  # "lower", "higher", or None: it explains, it is not a goal
    # Across time windows (report.collapse): "sum" for counts, "ratio" of
    # the summed counts `of`, "max", or "none" (not additive: left blank).
    across: str
    of: tuple[str, str] | None = None  # (numerator, denominator) counts of a ratio
    unit: str = ""  # said after the label in the report's results table
    digits: int = 3  # decimals shown
    ledger: bool = True  # in the simulator's summary (and Spark's, equal to it)


METRICS: tuple[Metric, ...] = (
    Metric("events_published", "events published", "events", "count", None, "sum"),
    Metric("expected_pairs", "expected pairs", "expected", "count", None, "sum"),
    Metric("delivered_pairs", "delivered pairs", "delivered", "count", None, "sum"),
    Metric(
        "hit_ratio",
        "hit ratio",
        "hit ratio",
        "ratio",
        "higher",
        "ratio",
        of=("delivered_pairs", "expected_pairs"),
    ),  # fmt: skip
    Metric("false_positives", "false positives", "FP", "count", "lower", "sum"),
    Metric("duplicates", "duplicates", "dup", "count", "lower", "sum"),
    Metric(
        "traffic_overhead",
        "traffic overhead",
        "overhead",
        "ratio",
        "lower",
        "ratio",
        of=("event_messages_uninterested", "event_messages"),
    ),  # fmt: skip
    # a mean over events, of per-event ratios: not a ratio of window sums
    Metric(
        "node_overhead", "node-based traffic overhead", "node overhead", "ratio", "lower", "none"
    ),  # fmt: skip
    Metric("event_messages", "event messages", "messages", "count", None, "sum"),
    Metric("event_messages_dropped", "event messages dropped", "dropped", "count", None, "sum"),
    Metric(
        "event_messages_redundant", "redundant event messages", "redundant", "count", None, "sum"
    ),  # fmt: skip
    Metric(
        "redundancy",
        "redundancy",
        "redundancy",
        "ratio",
        "lower",
        "ratio",
        of=("event_messages_redundant", "event_messages"),
    ),  # fmt: skip
    Metric("dropped_up", "up copies dropped", "drop up", "count", None, "sum"),
    Metric("dropped_down", "tree copies dropped", "drop down", "count", None, "sum"),
    Metric("dropped_push", "pushes dropped", "drop push", "count", None, "sum"),
    Metric("dropped_redundant", "redundant copies dropped", "drop red", "count", None, "sum"),
    Metric(
        "cost",
        "cost",
        "cost",
        "ratio",
        "lower",
        "ratio",
        of=("event_messages", "delivered_pairs"),
        unit="event messages per delivered pair",
    ),  # fmt: skip
    Metric(
        "path_length",
        "path length",
        "path",
        "ratio",
        "lower",
        "ratio",
        of=("hops_total", "delivered_pairs"),
        unit="hops",
        digits=2,
    ),  # fmt: skip
    Metric(
        "route_hops",
        "route to the rendezvous",
        "route",
        "ratio",
        "lower",
        "ratio",
        of=("route_hops_total", "routes"),
        unit="hops",
        digits=2,
    ),  # fmt: skip
    Metric("load_max", "load max", "load max", "ratio", "lower", "max"),
    Metric("load_p95", "load 95th percentile", "load p95", "ratio", "lower", "none"),
    # the analysis' own counts: what it read
    Metric(
        "nodes_in_window", "nodes alive in the window", "nodes", "count", None, "none", ledger=False
    ),  # fmt: skip
    Metric("records", "log records", "records", "count", None, "none", ledger=False),
    Metric(
        "malformed_lines", "malformed lines", "malformed", "count", None, "none", ledger=False
    ),  # fmt: skip
)

BY_KEY: dict[str, Metric] = {m.key: m for m in METRICS}
# The simulator's summary carries these, in this order; Spark's equals it.
LEDGER_KEYS: tuple[str, ...] = tuple(m.key for m in METRICS if m.ledger)


def metric(key: str) -> Metric:
    """The declaration of `key` (KeyError names it if there is none)."""
    try:
        return BY_KEY[key]
    except KeyError:
        raise KeyError(f"no metric {key!r} is declared in vinifera/measures.py") from None


def digits(key: str) -> int:
    """Decimals `key` is shown with; 3 for what is not a metric."""
    m = BY_KEY.get(key)
    return m.digits if m is not None else 3


def titled(key: str) -> str:
    """`key`'s label with its unit, as a table row or a plot axis says it."""
    m = metric(key)
    return f"{m.label} ({m.unit})" if m.unit else m.label


def ratio(num: int, den: int) -> float | None:
    """A ratio metric from its counts, as every implementation rounds it."""
    return round(num / den, 6) if den else None


def ratios(counts: dict) -> dict[str, float | None]:
    """Every ratio metric declared with `of`, from `counts`."""
    return {m.key: ratio(counts[m.of[0]], counts[m.of[1]]) for m in METRICS if m.of is not None}
