"""Ground truth from the logs: who was alive, with which subscription, when;
which events count; and the expected pairs (e, s) of docs/metrics.md.

The rules are those of the reference implementation, vinifera/ledger.py:

- a node's lives: each `join` opens one; the first `leave` or `crash` after
  it (and before the next join) closes it; a life never closed lasts forever
  in the simulator, and in daemon logs ends at its last record (an inferred
  crash: vinifera/swarm/window.py, docs/metrics.md);
- a node's subscription at time t: the `sub` of its last `join` or
  `subscribe` record at or before t (records at equal times: the later line
  wins); none before its first one;
- events: valid `publish` records with window_start <= t < window_end (one
  per eid: the last one logged if an eid repeats);
- expected pair (e, s): s has a life with join <= t_e and end >= t_e +
  deadline, and its subscription at t_e matches e.

Records of one node are ordered by (t, seq): seq follows the line order of
a file, and a node's records are all in one file (the simulator's single
file, or the daemon's file per node).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from vinifera.analysis import typed
from vinifera.schema import Schema

INF = float("inf")


def events(
    records: DataFrame, schema: Schema, start: float, end: float, width: float, count: int
) -> tuple[DataFrame, DataFrame]:
    """(events, publish): the events counted, (eid, t, node, w, e0, ...) with
    w the index of their time window of `width` seconds from `start`, and
    every publish record with a `valid` flag (to count invalid ones)."""
    cols, ok = typed.event_columns(F.col("values"), schema)
    publish = records.where(F.col("ev") == "publish").select(
        "eid", "t", "seq", "node", ok.alias("valid"), *cols
    )
    in_window = publish.where(F.col("valid") & (F.col("t") >= start) & (F.col("t") < end))
    # An eid logged twice: the last line wins, as a dict assignment does.
    last = in_window.groupBy("eid").agg(
        F.max_by(
            F.struct(*[c for c in in_window.columns if c != "eid"]), F.struct("t", "seq")
        ).alias("r")
    )
    w = window_index(F.col("t"), start, width, count)
    evs = last.select("eid", "r.*").select(
        "eid",
        "t",
        "node",
        w.alias("w"),
        *[typed.e_col(i) for i in range(len(schema))],
    )
    return evs, publish


def window_index(t: Column, start: float, width: float, count: int) -> Column:
    """floor((t - start) / width) within [0, count - 1], clamped before the
    cast to int (Spark's ANSI mode refuses overflowing casts)."""
    x = (t - F.lit(start)) / F.lit(width)
    return F.floor(F.least(F.greatest(x, F.lit(0.0)), F.lit(max(count - 1, 0) * 1.0))).cast("int")


def lives(
    marks: DataFrame,
    infer_crashes: bool = False,
    last_seen: DataFrame | None = None,
    records: DataFrame | None = None,
) -> DataFrame:
    """(node, joined, ended): one row per life; ended is +inf when open.

    `marks` holds (at least) the node's join, leave and crash records. With
    `infer_crashes` (docs/metrics.md, vinifera/swarm/window.py) a life that
    ends without a leave or crash record ends at its last record instead:
    for a node's last life, its last record overall (`last_seen`: node,
    last_t); for an earlier one, its last record before the next join
    (looked up in `records`, only when there is such a life)."""
    kinds = marks.where(F.col("ev").isin("join", "leave", "crash")).select(
        "node", "t", "seq", (F.col("ev") == "join").cast("int").alias("is_join")
    )
    order = Window.partitionBy("node").orderBy("t", "seq")
    numbered = kinds.withColumn(
        "life", F.sum("is_join").over(order.rowsBetween(Window.unboundedPreceding, 0))
    )
    joined = F.col("is_join") == 1
    per_life = (
        numbered.where(F.col("life") > 0)
        .groupBy("node", "life")
        .agg(
            F.min(F.when(joined, F.col("t"))).alias("joined"),
            F.min(F.when(joined, F.col("seq"))).alias("join_seq"),
            # Rows of a life come after its join: the earliest end closes it.
            F.min(F.when(~joined, F.col("t"))).alias("closed"),
        )
    )
    if not infer_crashes:
        return per_life.select(
            "node", "joined", F.coalesce(F.col("closed"), F.lit(INF)).alias("ended")
        )
    by_life = Window.partitionBy("node").orderBy("life")
    per_life = per_life.select(
        "*",
        F.lead("joined").over(by_life).alias("next_t"),
        F.lead("join_seq").over(by_life).alias("next_seq"),
    )
    silent_earlier = per_life.where(F.col("closed").isNull() & F.col("next_t").isNotNull())
    if records is not None and silent_earlier.count():
        # A rejoin without a recorded end (rare): the last record in between.
        s = F.broadcast(silent_earlier.select("node", "life", "joined", "join_seq",
                                              "next_t", "next_seq")).alias("s")  # fmt: skip
        r = records.select("node", "t", "seq").alias("r")
        after_join = (F.col("r.t") > F.col("s.joined")) | (
            (F.col("r.t") == F.col("s.joined")) & (F.col("r.seq") >= F.col("s.join_seq"))
        )
        before_next = (F.col("r.t") < F.col("s.next_t")) | (
            (F.col("r.t") == F.col("s.next_t")) & (F.col("r.seq") < F.col("s.next_seq"))
        )
        earlier = (
            r.join(s, (F.col("r.node") == F.col("s.node")) & after_join & before_next)
            .groupBy("s.node", "s.life")
            .agg(F.max("r.t").alias("earlier_last"))
        )
        per_life = per_life.join(earlier, ["node", "life"], "left")
    else:
        per_life = per_life.withColumn("earlier_last", F.lit(None).cast("double"))
    last = (
        last_seen
        if last_seen is not None
        else marks.groupBy("node").agg(F.max("t").alias("last_t"))
    )
    return per_life.join(last, "node", "left").select(
        "node",
        "joined",
        F.coalesce(
            F.col("closed"),
            F.when(F.col("next_t").isNull(), F.col("last_t")).otherwise(F.col("earlier_last")),
            F.lit(INF),
        ).alias("ended"),
    )


def subscriptions(records: DataFrame, schema: Schema) -> DataFrame:
    """(node, since, until, valid, lo0, hi0, ...): the subscription in force
    at times [since, until); bounds all null for none (or an invalid one)."""
    cols, ok = typed.subscription_columns(F.col("sub"), schema)
    rows = records.where(F.col("ev").isin("join", "subscribe")).select(
        "node", "t", "seq", ok.alias("valid"), *cols
    )
    order = Window.partitionBy("node").orderBy("t", "seq")
    bounds = [c for i in range(len(schema)) for c in (typed.lo_col(i), typed.hi_col(i))]
    return rows.select(
        "node",
        F.col("t").alias("since"),
        F.coalesce(F.lead("t").over(order), F.lit(INF)).alias("until"),
        "valid",
        *[F.when(F.col("valid"), F.col(b)).alias(b) for b in bounds],
    )


# The expected-pairs join: an event meets the (subscription version, life)
# intervals that cover its time. Intervals spanning at most SHORT of the
# TIME_BUCKETS slices of the measurement window join on (value bucket, time
# slice), so a long log of short-lived nodes does not pair every event with
# every node that ever lived; longer ones (a simulator's nodes live through
# the whole run) join on the value bucket alone, without being multiplied.
TIME_BUCKETS = 64
SHORT = 4


def expected_pairs(
    evs: DataFrame,
    subs: DataFrame,
    lifes: DataFrame,
    schema: Schema,
    deadline: float,
    start: float,
    end: float,
    dedupe: bool = False,
) -> DataFrame:
    """(eid, node, t, w) for every expected pair."""
    d = len(schema)
    has_sub = F.lit(False)
    for i in range(d):
        has_sub = has_sub | F.col(typed.lo_col(i)).isNotNull()
    bounds = [c for i in range(d) for c in (typed.lo_col(i), typed.hi_col(i))]
    v, lv = subs.where(has_sub).alias("v"), lifes.alias("l")
    # Event times t that count: since <= t < until, joined <= t <= ended - deadline.
    spans = (
        v.join(lv, F.col("v.node") == F.col("l.node"))
        .select(
            "v.node",
            F.greatest("v.since", "l.joined").alias("t_from"),
            F.col("v.until").alias("t_until"),
            "l.ended",
            # For slicing only, with slack: the exact test is t + deadline <= ended.
            (F.col("l.ended") - F.lit(deadline) + F.lit(1e-6 * (end - start) / TIME_BUCKETS)).alias(
                "t_last"
            ),
            *[F.col(f"v.{b}") for b in bounds],
        )
        .where(
            (F.col("t_from") < F.col("t_until"))
            & (F.col("t_from") + F.lit(deadline) <= F.col("ended"))
            & (F.col("t_from") < end)
            & (F.col("t_until") > start)
            & (F.col("t_last") >= start)
        )
    )
    ix, blo, bhi = typed.index_attribute(schema)
    slice_width = (end - start) / TIME_BUCKETS
    first = window_index(F.col("t_from"), start, slice_width, TIME_BUCKETS)
    last = window_index(F.least("t_until", "t_last"), start, slice_width, TIME_BUCKETS)
    spans = spans.select("*", ix.alias("ix"), blo.alias("blo"), bhi.alias("bhi"),
                         first.alias("s0"), last.alias("s1"))  # fmt: skip
    keep = ["node", "t_from", "t_until", "ended", *bounds, "ix"]
    short = (
        spans.where(F.col("s1") - F.col("s0") < SHORT)
        .select(*keep, F.explode(F.sequence("blo", "bhi")).alias("b"), "s0", "s1")
        .select(*keep, "b", F.explode(F.sequence("s0", "s1")).alias("ts"))
    )
    long = spans.where(F.col("s1") - F.col("s0") >= SHORT).select(
        *keep, F.explode(F.sequence("blo", "bhi")).alias("b")
    )
    ev_b = evs.select(
        "*",
        F.explode(typed.event_buckets(schema)).alias("k"),
        window_index(F.col("t"), start, slice_width, TIME_BUCKETS).alias("ts"),
    ).select("*", F.col("k.ix").alias("ix"), F.col("k.b").alias("b"))

    def candidates(side: DataFrame, keys: list[str]) -> DataFrame:
        s, e = side.alias("s"), ev_b.alias("e")
        on = [F.col(f"e.{k}") == F.col(f"s.{k}") for k in keys]
        cond = on[0]
        for c in on[1:]:
            cond = cond & c
        return (
            e.join(s, cond)
            .where(
                (F.col("s.t_from") <= F.col("e.t"))
                & (F.col("e.t") < F.col("s.t_until"))
                & (F.col("s.ended") >= F.col("e.t") + F.lit(deadline))
            )
            .where(
                typed.matches(
                    schema, sub=lambda c: F.col(f"s.{c}"), event=lambda c: F.col(f"e.{c}")
                )
            )
            .select(F.col("e.eid").alias("eid"), F.col("s.node").alias("node"), "e.t", "e.w")
        )

    pairs = candidates(short, ["ix", "b", "ts"]).unionByName(candidates(long, ["ix", "b"]))
    # Overlapping lives (a second join without a leave) could find a pair twice.
    return pairs.dropDuplicates(["eid", "node"]) if dedupe else pairs


def overlapping_lives(lifes: DataFrame) -> int:
    """How many lives overlap the node's next one."""
    order = Window.partitionBy("node").orderBy("joined")
    nxt = lifes.select("ended", F.lead("joined").over(order).alias("next"))
    return nxt.where(F.col("ended") > F.col("next")).count()
