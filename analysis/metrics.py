"""The metrics of EXPERIMENTS.md over the measurement window, overall and
per time window, computed in Spark from the usable log records.

Only aggregates reach the driver: one row per time window, one row per
distinct hop count, one row per (window, distinct forward count). Overall
figures are sums of the per-window integer counts, so they are exact, and
the ratios are formed and rounded on the driver with the same float
operations as vinifera/sim/ledger.py, so they equal the simulator's own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from vinifera.analysis import truth, typed
from vinifera.schema import Schema

# The metrics the simulator's summary.json carries, in its order.
LEDGER_KEYS = (
    "events_published",
    "expected_pairs",
    "delivered_pairs",
    "hit_ratio",
    "false_positives",
    "duplicates",
    "traffic_overhead",
    "event_messages",
    "event_messages_dropped",
    "path_length",
    "load_max",
    "load_p95",
)

_COUNTS = (
    "events_published",
    "expected_pairs",
    "delivered_pairs",
    "hops_total",
    "false_positives",
    "duplicates",
    "event_messages",
    "event_messages_uninterested",
    "event_messages_dropped",
)


@dataclass
class Measurements:
    summary: dict
    windows: list[dict]  # one per time window, in order
    hops: list[tuple[int, int]]  # (hops, delivered pairs), ascending
    load_hist: list[tuple[int, int]]  # (events forwarded, nodes), ascending
    node_load: DataFrame  # node, forwarded, load: nodes alive in the window (cached)
    extra: dict = field(default_factory=dict)
    cached: list = field(default_factory=list)

    def release(self) -> None:
        """Drop the cached DataFrames (once the tables are written)."""
        for df in self.cached:
            df.unpersist()
        self.cached.clear()


def ratio(num: int, den: int) -> float | None:
    return round(num / den, 6) if den else None


def percentile(hist: list[tuple[int, int]], q: float) -> int:
    """Nearest-rank percentile of a histogram [(value, count)] sorted by
    value: the ledger's _percentile over the expanded sorted list."""
    total = sum(n for _, n in hist)
    k = max(0, math.ceil(q * total) - 1)
    seen = 0
    for value, n in hist:
        seen += n
        if seen > k:
            return value
    raise ValueError("empty histogram")


def _load_figures(hist: list[tuple[int, int]], events: int) -> tuple[float | None, float | None]:
    """(load_max, load_p95) as the ledger rounds them."""
    if not events or not hist:
        return None, None
    return round(hist[-1][0] / events, 6), round(percentile(hist, 0.95) / events, 6)


def _by_window(df: DataFrame, **aggs) -> dict[int, dict]:
    rows = df.groupBy("w").agg(*[a.alias(k) for k, a in aggs.items()]).collect()
    return {r["w"]: {k: r[k] or 0 for k in aggs} for r in rows}


# Events beyond this many are joined by shuffling rather than broadcast.
BROADCAST_EVENTS = 2_000_000


def measure(
    recs,
    schema: Schema,
    start: float,
    end: float,
    deadline: float,
    width: float,
    count: int,
    infer_crashes: bool = False,
    last_seen: DataFrame | None = None,
    progress=lambda msg: None,
) -> Measurements:
    """Everything, from one run's records (analysis/ingest.Records).

    `count` windows of `width` seconds cover [start, end). Call release() on
    the result when done with node_load."""
    persisted: list[DataFrame] = []

    def keep(df: DataFrame) -> DataFrame:
        persisted.append(df.persist(StorageLevel.MEMORY_AND_DISK))
        return persisted[-1]

    try:
        m = _measure(recs, schema, start, end, deadline, width, count, infer_crashes, last_seen,
                     keep, progress)  # fmt: skip
    except BaseException:
        for df in persisted:
            df.unpersist()
        raise
    m.cached = persisted
    return m


def _valid(df: DataFrame) -> DataFrame:
    return df.where(F.col("problem").isNull())


def _measure(recs, schema, start, end, deadline, width, count, infer, last_seen, keep,
             progress) -> Measurements:  # fmt: skip
    other = _valid(recs.other)
    evs, publish = truth.events(other, schema, start, end, width, count)
    evs = keep(evs)
    lifes = keep(truth.lives(other, infer, last_seen, _valid(recs.all)))
    subs = keep(truth.subscriptions(other, schema))
    progress("ground truth: events, lives, subscriptions")
    invalid_events = publish.where(~F.col("valid")).count()
    invalid_subs = subs.where(~F.col("valid")).count()
    per_w: dict[int, dict] = {w: dict.fromkeys(_COUNTS, 0) for w in range(count)}

    def add(table: dict[int, dict]) -> None:
        for w, figures in table.items():
            per_w[w].update(figures)

    add(_by_window(evs, events_published=F.count(F.lit(1))))
    n_events = sum(per_w[w]["events_published"] for w in per_w)
    ev_w = evs.select("eid", "w")
    if n_events <= BROADCAST_EVENTS:
        ev_w = F.broadcast(ev_w)  # small: every copy looks its event up locally
    progress("expected pairs")
    deliveries = _valid(recs.deliver).select("eid", "node", "t", "seq", "hops").join(ev_w, "eid")
    first = keep(
        deliveries.groupBy("eid", "node", "w").agg(
            F.min(F.struct("t", "seq", "hops")).alias("first"), F.count(F.lit(1)).alias("n")
        )
    )
    overlapping = truth.overlapping_lives(lifes)
    expected = truth.expected_pairs(
        evs, subs, lifes, schema, deadline, start, end, dedupe=overlapping > 0
    )
    got = expected.join(first.drop("w"), ["eid", "node"], "left").select(
        "w",
        F.coalesce(F.col("first.t") <= F.col("t") + F.lit(deadline), F.lit(False)).alias("hit"),
        F.col("first.hops").alias("hops"),
    )
    # One pass: pairs per (window, hit, hops); totals and the hop histogram follow.
    hops_hist: dict[int, int] = {}
    expected_w: dict[int, dict] = {}
    for r in got.groupBy("w", "hit", "hops").count().collect():
        c = expected_w.setdefault(
            r["w"], {"expected_pairs": 0, "delivered_pairs": 0, "hops_total": 0}
        )
        c["expected_pairs"] += r["count"]
        if r["hit"]:
            c["delivered_pairs"] += r["count"]
            c["hops_total"] += r["count"] * r["hops"]
            hops_hist[r["hops"]] = hops_hist.get(r["hops"], 0) + r["count"]
    add(expected_w)
    hops = sorted(hops_hist.items())

    progress("false positives and duplicates")
    add(_by_window(first, duplicates=F.sum(F.col("n") - 1)))
    ev_values = evs.drop("t", "node", "w")
    if n_events <= BROADCAST_EVENTS:
        ev_values = F.broadcast(ev_values)
    d = deliveries.join(ev_values, "eid").alias("d")
    s = F.broadcast(subs).alias("s")
    placed = d.join(
        s,
        (F.col("d.node") == F.col("s.node"))
        & (F.col("s.since") <= F.col("d.t"))
        & (F.col("d.t") < F.col("s.until")),
        "left",
    )
    ok = typed.matches(schema, sub=lambda c: F.col(f"s.{c}"), event=lambda c: F.col(f"d.{c}"))
    add(
        _by_window(
            placed.select("d.w", ok.alias("ok")), false_positives=F.sum((~F.col("ok")).cast("long"))
        )
    )

    progress("traffic and load")
    msgs = _valid(recs.msg).select("eid", "node", "ev", "match", "fwd").join(ev_w, "eid")
    add(
        _by_window(
            msgs,
            event_messages=F.count(F.lit(1)),
            event_messages_uninterested=F.sum((~F.col("match")).cast("long")),
            event_messages_dropped=F.sum((F.col("ev") == "drop").cast("long")),
        )
    )
    # Load: distinct events a node forwarded to at least one node.
    forwarded = keep(
        msgs.where((F.col("ev") == "recv") & (F.col("fwd") > 0))
        .select("node", "eid", "w")
        .distinct()
        .groupBy("node", "w")
        .agg(F.count(F.lit(1)).alias("forwarded"))
    )
    in_window = (
        lifes.where((F.col("joined") < end) & (F.col("ended") > start)).select("node").distinct()
    )
    node_load = keep(
        in_window.join(
            forwarded.groupBy("node").agg(F.sum("forwarded").alias("forwarded")), "node", "left"
        )
        .select("node", F.coalesce(F.col("forwarded"), F.lit(0)).alias("forwarded"))
        .withColumn(
            "load", F.col("forwarded") / F.lit(n_events) if n_events else F.lit(None).cast("double")
        )
    )
    load_hist = sorted((r[0], r[1]) for r in node_load.groupBy("forwarded").count().collect())
    progress("load per time window")
    present = _presence(lifes, start, width, count)
    window_load = (
        present.where("overlaps")
        .select("node", "w")
        .distinct()
        .join(forwarded, ["node", "w"], "left")
        .select("w", F.coalesce(F.col("forwarded"), F.lit(0)).alias("forwarded"))
        .groupBy("w", "forwarded")
        .count()
        .collect()
    )
    hists: dict[int, list] = {}
    for r in window_load:
        hists.setdefault(r["w"], []).append((r["forwarded"], r["count"]))
    add(
        _by_window(
            present,
            alive_nodes=F.sum(F.col("alive_at_start").cast("long")),
            joins=F.sum(F.col("joined_here").cast("long")),
            departures=F.sum(F.col("ended_here").cast("long")),
        )
    )

    windows = []
    for w in range(count):
        c = per_w[w]
        lmax, lp95 = _load_figures(sorted(hists.get(w, [])), c["events_published"])
        windows.append(
            {
                "window": w,
                "start": start + w * width,
                "end": min(start + (w + 1) * width, end),
                "alive_nodes": c.get("alive_nodes", 0),
                "joins": c.get("joins", 0),
                "departures": c.get("departures", 0),
                **{k: c[k] for k in _COUNTS},
                "hit_ratio": ratio(c["delivered_pairs"], c["expected_pairs"]),
                "traffic_overhead": ratio(c["event_messages_uninterested"], c["event_messages"]),
                "path_length": ratio(c["hops_total"], c["delivered_pairs"]),
                "load_max": lmax,
                "load_p95": lp95,
            }
        )
    total = {k: sum(per_w[w][k] for w in per_w) for k in _COUNTS}
    load_max, load_p95 = _load_figures(load_hist, n_events)
    summary = {
        "events_published": total["events_published"],
        "expected_pairs": total["expected_pairs"],
        "delivered_pairs": total["delivered_pairs"],
        "hit_ratio": ratio(total["delivered_pairs"], total["expected_pairs"]),
        "false_positives": total["false_positives"],
        "duplicates": total["duplicates"],
        "traffic_overhead": ratio(total["event_messages_uninterested"], total["event_messages"]),
        "event_messages": total["event_messages"],
        "event_messages_dropped": total["event_messages_dropped"],
        "path_length": ratio(total["hops_total"], total["delivered_pairs"]),
        "load_max": load_max,
        "load_p95": load_p95,
    }
    extra = {
        "nodes_in_window": sum(n for _, n in load_hist),
        "invalid_events": invalid_events,
        "invalid_subscriptions": invalid_subs,
    }
    return Measurements(summary, windows, hops, load_hist, node_load, extra)


def _presence(lifes: DataFrame, start: float, width: float, count: int) -> DataFrame:
    """(node, w, overlaps, alive_at_start, joined_here, ended_here): one row
    per life and time window it touches."""
    if count == 0:
        return lifes.select("node", F.lit(0).alias("w")).where(F.lit(False))
    first_w = truth.window_index(F.col("joined"), start, width, count)
    last_w = F.when(F.col("ended") == float("inf"), F.lit(count - 1)).otherwise(
        truth.window_index(F.col("ended"), start, width, count)
    )
    spread = lifes.where(last_w >= first_w).select(
        "node", "joined", "ended", F.explode(F.sequence(first_w, last_w)).alias("w")
    )
    lo = F.lit(start) + F.col("w") * F.lit(width)
    hi = F.lit(start) + (F.col("w") + 1) * F.lit(width)
    return spread.select(
        "node",
        "w",
        ((F.col("joined") < hi) & (F.col("ended") > lo)).alias("overlaps"),
        ((F.col("joined") <= lo) & (F.col("ended") > lo)).alias("alive_at_start"),
        ((F.col("joined") >= lo) & (F.col("joined") < hi)).alias("joined_here"),
        ((F.col("ended") >= lo) & (F.col("ended") < hi)).alias("ended_here"),
    )
