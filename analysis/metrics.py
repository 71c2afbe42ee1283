"""The metrics of docs/metrics.md over the measurement window, overall and
per time window, computed in Spark from the usable log records.

Only aggregates reach the driver: one row per time window, one row per
distinct hop count, one row per (window, distinct forward count). Overall
figures are sums of the per-window integer counts, so they are exact, and
the ratios are formed and rounded on the driver with the same float
operations as vinifera/ledger.py, so they equal the simulator's own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from vinifera import measures
from vinifera.analysis import ingest, truth, typed
from vinifera.ledger import node_overhead
from vinifera.schema import Schema

# The metrics the simulator's summary.json carries, in its order.
LEDGER_KEYS = measures.LEDGER_KEYS

DROP_KINDS = ("dropped_up", "dropped_down", "dropped_push", "dropped_redundant")
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
    "event_messages_redundant",
    "dropped_up",
    "dropped_down",
    "dropped_push",
    "dropped_redundant",
    "routes",
    "route_hops_total",
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
    node_ids: dict[str, int] | None = None,
) -> Measurements:
    """Everything, from one run's records (analysis/ingest.Records).

    `count` windows of `width` seconds cover [start, end). Call release() on
    the result when done with node_load."""
    persisted: list[DataFrame] = []

    def keep(df: DataFrame) -> DataFrame:
        persisted.append(df.persist(StorageLevel.MEMORY_AND_DISK))
        return persisted[-1]

    try:
        key = _node_key(node_ids)
        m = _measure(recs, schema, start, end, deadline, width, count, infer_crashes, last_seen,
                     keep, progress, key)  # fmt: skip
    except BaseException:
        for df in persisted:
            df.unpersist()
        raise
    m.cached = persisted
    return m


def _node_key(node_ids: dict[str, int] | None) -> str:
    """The column the large aggregations key nodes by: `nid` (a hash of the
    name) when the run's node names (node_ids: name -> nid, from the
    per-file counts) all hash apart, else the name."""
    if not node_ids:
        return "node"
    return "nid" if len(set(node_ids.values())) == len(node_ids) else "node"


def _valid(df: DataFrame) -> DataFrame:
    return df.where(F.col("problem").isNull())


def _measure(recs, schema, start, end, deadline, width, count, infer, last_seen, keep,
             progress, key) -> Measurements:  # fmt: skip
    # Joins, subscriptions, publications, leaves: few rows, read once.
    other = keep(_valid(recs.other))
    evs, publish = truth.events(other, schema, start, end, width, count)
    evs = keep(evs)
    lifes = keep(
        truth.lives(other, infer, last_seen, _valid(recs.all)).withColumn(
            "nid", ingest.node_id(F.col("node"))
        )
    )
    subs = keep(truth.subscriptions(other, schema).withColumn("nid", ingest.node_id(F.col("node"))))
    progress("ground truth: events, lives, subscriptions")
    invalid = F.count_if(~F.col("valid"))  # both counts in one query
    invalid_events, invalid_subs = publish.agg(invalid).crossJoin(subs.agg(invalid)).first()
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
    overlapping = truth.overlapping_lives(lifes)
    expected = truth.expected_pairs(
        evs, subs, lifes, schema, deadline, start, end, dedupe=overlapping > 0
    )
    add(_by_window(expected, expected_pairs=F.count(F.lit(1))))

    progress("deliveries: hits, false positives, duplicates")
    judge = dict(deadline=deadline, n_events=n_events, overlapping=overlapping, key=key)
    rows = _delivery_counts(recs, evs, subs, lifes, schema, exact=False, **judge)
    if any(r["odd"] for r in rows):  # some node logged deliveries out of time order
        rows = _delivery_counts(recs, evs, subs, lifes, schema, exact=True, **judge)
    hops_hist: dict[int, int] = {}
    for r in rows:
        c = per_w[r["w"]]
        c["duplicates"] += r["duplicates"]
        c["false_positives"] += r["false_positives"]
        if r["hit"]:
            c["delivered_pairs"] += r["pairs"]
            c["hops_total"] += r["pairs"] * r["hops"]
            hops_hist[r["hops"]] = hops_hist.get(r["hops"], 0) + r["pairs"]
    hops = sorted(hops_hist.items())

    progress("traffic and load")
    msgs = recs.msg.select("eid", key, "ev", "match", "fwd", "attr", "had", "up").join(ev_w, "eid")
    # `had` and `up` are missing from logs written before them (ledger.count_message)
    had = F.coalesce(F.col("had"), F.lit(False))
    dropped = F.col("ev") == "drop"
    tree, up = F.col("attr").isNotNull(), F.coalesce(F.col("up"), F.lit(False))

    def n(cond: Column) -> Column:
        return F.sum(cond.cast("long"))

    add(
        _by_window(
            msgs,
            event_messages=F.count(F.lit(1)),
            event_messages_uninterested=n(~F.col("match")),
            event_messages_dropped=n(dropped),
            event_messages_redundant=n(had),
            dropped_up=n(dropped & tree & up),
            dropped_down=n(dropped & tree & ~up),
            dropped_push=n(dropped & ~tree),
            dropped_redundant=n(dropped & had),
        )
    )
    # Node-based overhead: per event, the nodes whose first copy it was.
    firsts = (
        msgs.where((F.col("ev") == "recv") & ~had)
        .groupBy("eid", "w")
        .agg(F.count(F.lit(1)).alias("nodes"), n(~F.col("match")).alias("uninterested"))
        .collect()
    )
    firsts.sort(key=lambda r: r["eid"])  # the ledger's order of addition
    firsts_by_w: dict[int, list] = {}
    for r in firsts:
        firsts_by_w.setdefault(r["w"], []).append((r["nodes"], r["uninterested"]))
    # Route to the rendezvous: the first rendezvous record of each (event, attribute).
    routes = (
        other.where(F.col("ev") == "rendezvous")
        .join(ev_w, "eid")
        .groupBy("eid", "attr", "w")
        .agg(F.min_by("hops", F.struct("t", "seq")).alias("hops"))
    )
    add(_by_window(routes, routes=F.count(F.lit(1)), route_hops_total=F.sum("hops")))
    # Load: distinct events a node forwarded to at least one node.
    # (The window is given by the event: one distinct, no second join.)
    forwarded = keep(
        msgs.where((F.col("ev") == "recv") & (F.col("fwd") > 0))
        .select(key, "eid", "w")
        .distinct()
        .groupBy(key, "w")
        .agg(F.count(F.lit(1)).alias("forwarded"))
    )
    in_window = (
        lifes.where((F.col("joined") < end) & (F.col("ended") > start))
        .select(*dict.fromkeys(["node", key]))
        .distinct()
    )
    node_load = keep(
        in_window.join(
            forwarded.groupBy(key).agg(F.sum("forwarded").alias("forwarded")), key, "left"
        )
        .select("node", F.coalesce(F.col("forwarded"), F.lit(0)).alias("forwarded"))
        .withColumn(
            "load", F.col("forwarded") / F.lit(n_events) if n_events else F.lit(None).cast("double")
        )
    )
    load_hist = sorted((r[0], r[1]) for r in node_load.groupBy("forwarded").count().collect())
    progress("load per time window")
    # Per window, the loads of the nodes present in it: those that forwarded
    # something (a node logs only while alive, so it is present) and, with
    # load 0, the other present nodes. No (node, window) join needed.
    presence = _presence(lifes.collect(), start, width, count)
    hists: dict[int, list] = {}
    busy: dict[int, int] = {}
    for r in forwarded.groupBy("w", "forwarded").count().collect():
        hists.setdefault(r["w"], []).append((r["forwarded"], r["count"]))
        busy[r["w"]] = busy.get(r["w"], 0) + r["count"]
    for w, c in presence.items():
        idle = c.pop("present_nodes") - busy.get(w, 0)
        if idle > 0:
            hists.setdefault(w, []).append((0, idle))
    add(presence)

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
                **measures.ratios(c),
                "node_overhead": node_overhead(firsts_by_w.get(w, ())),
                "load_max": lmax,
                "load_p95": lp95,
            }
        )
    total = {k: sum(per_w[w][k] for w in per_w) for k in _COUNTS}
    load_max, load_p95 = _load_figures(load_hist, n_events)
    computed = {
        **total,
        **measures.ratios(total),
        "node_overhead": node_overhead((r["nodes"], r["uninterested"]) for r in firsts),
        "load_max": load_max,
        "load_p95": load_p95,
    }
    summary = {k: computed[k] for k in LEDGER_KEYS}
    extra = {
        "nodes_in_window": sum(n for _, n in load_hist),
        "invalid_events": invalid_events,
        "invalid_subscriptions": invalid_subs,
    }
    return Measurements(summary, windows, hops, load_hist, node_load, extra)


def _delivery_counts(recs, evs, subs, lifes, schema: Schema, deadline: float, n_events: int,
                     overlapping: int, key: str, exact: bool) -> list:  # fmt: skip
    """Rows (w, hops, hit, pairs, duplicates, false_positives, odd): the
    deliveries of counted events, in one shuffle and one aggregation.

    Each delivery is judged where it is read, against the small, broadcast
    events, subscriptions and lives: a false positive when the node's
    subscription at the delivery does not match; in time when it is logged
    by the event's deadline and the pair is expected (the node's
    subscription at the publication matches and one of its lives covers the
    deadline). Then per (event, node): n deliveries, the false positives,
    whether one was in time (the first one is, if any is), and the first
    delivery's hops. The first delivery is taken by min_by on the line (a
    hash aggregate on primitive columns), which is the first by time
    whenever a node logs in time order; `odd` counts the pairs where it is
    not, and `exact` redoes them by (time, line)."""
    e_cols = [typed.e_col(i) for i in range(len(schema))]
    ev = evs.select("eid", F.col("t").alias("te"), "w", *e_cols)
    ev = F.broadcast(ev) if n_events <= BROADCAST_EVENTS else ev
    d = recs.deliver.select("eid", key, "t", "seq", "hops").join(ev, "eid").alias("d")
    te, node = F.col("d.te"), F.col(f"d.{key}")

    def sub_at(alias: str, t) -> tuple[DataFrame, Column]:
        s = F.broadcast(subs).alias(alias)
        at = (node == F.col(f"{alias}.{key}")) & (F.col(f"{alias}.since") <= t)
        return s, at & (t < F.col(f"{alias}.until"))

    def matching(alias: str) -> Column:
        return typed.matches(
            schema, sub=lambda c: F.col(f"{alias}.{c}"), event=lambda c: F.col(f"d.{c}")
        )

    # A node's subscription versions cover disjoint times: at most one matches.
    s_now, at_now = sub_at("s", F.col("d.t"))
    s_pub, at_pub = sub_at("p", te)
    judged = d.join(s_now, at_now, "left").join(s_pub, at_pub, "left")
    end = te + F.lit(deadline)
    if overlapping == 0 and deadline > 0:
        # Disjoint lives: at most one covers [te, te + deadline].
        lv = F.broadcast(lifes.select(key, "joined", "ended")).alias("l")
        cover = (node == F.col(f"l.{key}")) & (F.col("l.joined") <= te) & (F.col("l.ended") >= end)
        judged = judged.join(lv, cover, "left")
        covered = F.col(f"l.{key}").isNotNull()
    else:
        lv = F.broadcast(
            lifes.groupBy(key).agg(F.collect_list(F.struct("joined", "ended")).alias("lives"))
        ).alias("l")
        judged = judged.join(lv, node == F.col(f"l.{key}"), "left")
        covered = F.coalesce(
            F.exists("l.lives", lambda x: (x["joined"] <= te) & (x["ended"] >= end)), F.lit(False)
        )
    in_time = (F.col("d.t") <= end) & matching("p") & covered
    if exact:
        first = F.min(F.struct("d.t", "d.seq", "d.hops"))
        firsts = [first["t"].alias("t1"), first["hops"].alias("hops")]
    else:
        firsts = [F.min_by("d.t", "d.seq").alias("t1"), F.min_by("d.hops", "d.seq").alias("hops")]
    # Grouped by (eid, node) and the event's window (given by the eid).
    pairs = judged.groupBy("d.eid", f"d.{key}", "d.w").agg(
        F.count(F.lit(1)).alias("n"),
        F.sum((~matching("s")).cast("long")).alias("fp"),
        F.min("d.t").alias("ft"),
        F.max(in_time).alias("hit"),
        *firsts,
    )
    return (
        pairs.groupBy("w", "hops", "hit")
        .agg(
            F.count(F.lit(1)).alias("pairs"),
            F.sum(F.col("n") - 1).alias("duplicates"),
            F.sum("fp").alias("false_positives"),
            F.sum((F.col("t1") != F.col("ft")).cast("long")).alias("odd"),
        )
        .collect()
    )


def _window_index(t: float, start: float, width: float, count: int) -> int:
    """truth.window_index on the driver: the same float operations."""
    if t == math.inf:
        return count - 1
    return math.floor(min(max((t - start) / width, 0.0), count - 1.0))


def _presence(lives, start: float, width: float, count: int) -> dict[int, dict]:
    """Per window: alive_nodes (alive at its start), joins and departures
    (lives starting or ending in it) and present_nodes (nodes alive at some
    time in it). From the lives (few: one row per join), on the driver, with
    the comparisons Spark would make on the windows each life touches."""
    zeros = dict.fromkeys(("alive_nodes", "joins", "departures", "present_nodes"), 0)
    if count == 0:
        return {}
    w_all = np.arange(count, dtype=np.float64)
    los = start + w_all * width
    his = start + (w_all + 1) * width
    alive = np.zeros(count, np.int64)
    joins = np.zeros(count, np.int64)
    departures = np.zeros(count, np.int64)
    present = np.zeros(count, np.int64)
    by_node: dict[str, list] = {}
    for row in lives:
        by_node.setdefault(row["node"], []).append((row["joined"], row["ended"]))
    for spans in by_node.values():
        seen = np.zeros(0, np.int64)
        for joined, ended in spans:
            a = _window_index(joined, start, width, count)
            b = _window_index(ended, start, width, count)
            if b < a:
                continue
            lo, hi = los[a : b + 1], his[a : b + 1]
            alive[a : b + 1] += (joined <= lo) & (ended > lo)
            joins[a : b + 1] += (joined >= lo) & (joined < hi)
            departures[a : b + 1] += (ended >= lo) & (ended < hi)
            overlaps = np.nonzero((joined < hi) & (ended > lo))[0] + a
            seen = np.union1d(seen, overlaps)  # a node counts once per window
        present[seen] += 1
    return {
        w: {**zeros, "alive_nodes": int(alive[w]), "joins": int(joins[w]),
            "departures": int(departures[w]), "present_nodes": int(present[w])}
        for w in range(count)
    }  # fmt: skip
