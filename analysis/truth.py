"""Ground truth from the logs: who was alive, with which subscription, when;
which events count; and the expected pairs (e, s) of EXPERIMENTS.md.

The rules are those of the reference implementation, vinifera/sim/ledger.py:

- a node's lives: each `join` opens one; the first `leave` or `crash` after
  it (and before the next join) closes it; a life never closed lasts forever;
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


def lives(records: DataFrame) -> DataFrame:
    """(node, joined, ended): one row per life; ended is +inf when open."""
    kinds = records.where(F.col("ev").isin("join", "leave", "crash")).select(
        "node", "t", "seq", (F.col("ev") == "join").cast("int").alias("is_join")
    )
    order = Window.partitionBy("node").orderBy("t", "seq")
    numbered = kinds.withColumn(
        "life", F.sum("is_join").over(order.rowsBetween(Window.unboundedPreceding, 0))
    )
    return (
        numbered.where(F.col("life") > 0)
        .groupBy("node", "life")
        .agg(
            F.min(F.when(F.col("is_join") == 1, F.col("t"))).alias("joined"),
            # Rows of a life come after its join: the earliest end closes it.
            F.coalesce(F.min(F.when(F.col("is_join") == 0, F.col("t"))), F.lit(INF)).alias("ended"),
        )
        .drop("life")
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


def expected_pairs(
    evs: DataFrame, subs: DataFrame, lifes: DataFrame, schema: Schema, deadline: float
) -> DataFrame:
    """(eid, node, t, w) for every expected pair."""
    has_sub = F.lit(False)
    for i in range(len(schema)):
        has_sub = has_sub | F.col(typed.lo_col(i)).isNotNull()
    # Versions never in force (a later record at the same time) match nothing.
    versions = subs.where(has_sub & (F.col("since") < F.col("until")))
    ix, blo, bhi = typed.index_attribute(schema)
    sub_b = versions.select(
        "node",
        "since",
        "until",
        *[c for i in range(len(schema)) for c in (typed.lo_col(i), typed.hi_col(i))],
        ix.alias("ix"),
        F.explode(F.sequence(blo, bhi)).alias("b"),
    )
    ev_b = evs.select("*", F.explode(typed.event_buckets(schema)).alias("k")).select(
        "*", F.col("k.ix").alias("ix"), F.col("k.b").alias("b")
    )
    s, e = sub_b.alias("s"), ev_b.alias("e")
    cand = (
        e.join(s, (F.col("e.ix") == F.col("s.ix")) & (F.col("e.b") == F.col("s.b")))
        .where((F.col("s.since") <= F.col("e.t")) & (F.col("e.t") < F.col("s.until")))
        .where(
            typed.matches(schema, sub=lambda c: F.col(f"s.{c}"), event=lambda c: F.col(f"e.{c}"))
        )
        .select(F.col("e.eid").alias("eid"), F.col("s.node").alias("node"), "e.t", "e.w")
    )
    c, lv = cand.alias("c"), lifes.alias("l")
    return c.join(
        lv,
        (F.col("c.node") == F.col("l.node"))
        & (F.col("l.joined") <= F.col("c.t"))
        & (F.col("l.ended") >= F.col("c.t") + F.lit(deadline)),
        "left_semi",
    )
