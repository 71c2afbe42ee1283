"""The docs/experiments.md metrics computed with DuckDB straight from the JSON
logs: a yardstick for `vinifera analyze` (Spark), not part of the product.

Same definitions as the analysis (docs/metrics.md): the measurement window,
the deadline, lives with crashes inferred for logs that stop without a
leave, subscriptions in force, expected pairs, first deliveries, traffic,
load. Written for the benchmark's logs: one numeric attribute, well-formed
lines (malformed lines are skipped, not classified). Needs the `bench`
extra (`pip install -e '.[bench]'`).
"""

from __future__ import annotations

import math

INF = "'Infinity'::DOUBLE"


def _sql(start: float, end: float, deadline: float, infer: bool) -> str:
    ended = (
        "coalesce(closed, CASE WHEN next_t IS NULL THEN last_t ELSE earlier_last END, " + INF + ")"
        if infer
        else f"coalesce(closed, {INF})"
    )
    return f"""
CREATE TEMP TABLE ev AS
  SELECT eid, t, v FROM (
    SELECT eid, t, CAST("values"->>'$[0][1]' AS DOUBLE) AS v,
           row_number() OVER (PARTITION BY eid ORDER BY t DESC, seq DESC) AS k
    FROM r WHERE ev = 'publish' AND t >= {start!r} AND t < {end!r}
  ) WHERE k = 1;
CREATE TEMP TABLE marks AS
  SELECT node, t, seq, ev = 'join' AS is_join,
         sum(CAST(ev = 'join' AS INT)) OVER (PARTITION BY node ORDER BY t, seq
                                          ROWS UNBOUNDED PRECEDING) AS life
  FROM r WHERE ev IN ('join', 'leave', 'crash');
CREATE TEMP TABLE life0 AS
  SELECT node, life, min(t) FILTER (WHERE is_join) AS joined,
         min(seq) FILTER (WHERE is_join) AS join_seq,
         min(t) FILTER (WHERE NOT is_join) AS closed
  FROM marks WHERE life > 0 GROUP BY node, life;
CREATE TEMP TABLE life1 AS
  SELECT *, lead(joined) OVER (PARTITION BY node ORDER BY life) AS next_t,
            lead(join_seq) OVER (PARTITION BY node ORDER BY life) AS next_seq
  FROM life0;
CREATE TEMP TABLE last_seen AS SELECT node, max(t) AS last_t FROM r GROUP BY node;
CREATE TEMP TABLE earlier AS
  SELECT l.node, l.life, max(r.t) AS earlier_last
  FROM life1 l JOIN r ON r.node = l.node
   AND (r.t > l.joined OR (r.t = l.joined AND r.seq >= l.join_seq))
   AND (r.t < l.next_t OR (r.t = l.next_t AND r.seq < l.next_seq))
  WHERE l.closed IS NULL AND l.next_t IS NOT NULL
  GROUP BY l.node, l.life;
CREATE TEMP TABLE lives AS
  SELECT l.node, l.joined, {ended} AS ended
  FROM life1 l LEFT JOIN last_seen USING (node) LEFT JOIN earlier USING (node, life);
CREATE TEMP TABLE subs AS
  SELECT node, t AS since,
         coalesce(lead(t) OVER (PARTITION BY node ORDER BY t, seq), {INF}) AS until,
         CAST(sub->>'$[0][1]' AS DOUBLE) AS lo, CAST(sub->>'$[0][2]' AS DOUBLE) AS hi
  FROM r WHERE ev IN ('join', 'subscribe');
CREATE TEMP TABLE expected AS
  SELECT DISTINCT e.eid, s.node, e.t
  FROM ev e JOIN subs s ON s.since <= e.t AND e.t < s.until AND s.lo <= e.v AND e.v <= s.hi
  JOIN lives l ON l.node = s.node AND l.joined <= e.t AND l.ended >= e.t + {deadline!r};
CREATE TEMP TABLE dl AS
  SELECT d.eid, d.node, d.t, d.seq, d.hops FROM r d SEMI JOIN ev USING (eid)
  WHERE d.ev = 'deliver';
CREATE TEMP TABLE firsts AS
  SELECT eid, node, arg_min(t, (t, seq)) AS t, arg_min(hops, (t, seq)) AS hops,
         count(*) AS n
  FROM dl GROUP BY eid, node;
"""


def metrics(
    logdir: str, start: float, end: float, deadline: float, infer: bool = True, threads: int = 2
) -> dict:
    """The 12 Ledger figures over the logs in logdir (*.jsonl)."""
    import duckdb

    con = duckdb.connect(config={"threads": threads})
    con.execute(
        f"""
        CREATE TEMP TABLE r AS
        SELECT row_number() OVER () AS seq, *
        FROM read_json('{logdir}/**/*.jsonl', format = 'newline_delimited',
             columns = {{v: 'BIGINT', t: 'DOUBLE', node: 'VARCHAR', ev: 'VARCHAR',
                         sub: 'JSON', eid: 'BIGINT', "values": 'JSON', hops: 'BIGINT',
                         match: 'BOOLEAN', fwd: 'BIGINT'}},
             ignore_errors = true)
        WHERE v = 1 AND t IS NOT NULL AND isfinite(t) AND node IS NOT NULL AND ev IS NOT NULL
        """
    )
    con.execute(_sql(start, end, deadline, infer))
    one = lambda q: con.execute(q).fetchone()  # noqa: E731
    (n_events,) = one("SELECT count(*) FROM ev")
    expected, delivered, hops_total = one(
        f"""SELECT count(*), count(f.t), coalesce(sum(f.hops), 0)
            FROM expected x LEFT JOIN firsts f
              ON f.eid = x.eid AND f.node = x.node AND f.t <= x.t + {deadline!r}"""
    )
    (duplicates,) = one("SELECT coalesce(sum(n - 1), 0) FROM firsts")
    (false_pos,) = one(
        """SELECT count(*) FROM dl d JOIN ev e USING (eid)
           LEFT JOIN subs s ON s.node = d.node AND s.since <= d.t AND d.t < s.until
           WHERE NOT coalesce(s.lo <= e.v AND e.v <= s.hi, false)"""
    )
    msgs, uninterested, dropped = one(
        """SELECT count(*), coalesce(sum(CAST(NOT match AS BIGINT)), 0),
                  coalesce(sum(CAST(ev = 'drop' AS BIGINT)), 0)
           FROM r SEMI JOIN ev USING (eid) WHERE ev IN ('recv', 'drop')"""
    )
    loads = [
        row[0]
        for row in con.execute(
            f"""WITH alive AS (SELECT DISTINCT node FROM lives
                               WHERE joined < {end!r} AND ended > {start!r}),
                 fw AS (SELECT node, count(DISTINCT eid) AS n FROM r SEMI JOIN ev USING (eid)
                        WHERE ev = 'recv' AND fwd > 0 GROUP BY node)
                SELECT coalesce(fw.n, 0) FROM alive LEFT JOIN fw USING (node) ORDER BY 1"""
        ).fetchall()
    ]
    con.close()
    r6 = lambda a, b: round(a / b, 6) if b else None  # noqa: E731
    load_max = round(loads[-1] / n_events, 6) if loads and n_events else None
    k = max(0, math.ceil(0.95 * len(loads)) - 1)
    load_p95 = round(loads[k] / n_events, 6) if loads and n_events else None
    return {
        "events_published": n_events,
        "expected_pairs": expected,
        "delivered_pairs": delivered,
        "hit_ratio": r6(delivered, expected),
        "false_positives": false_pos,
        "duplicates": duplicates,
        "traffic_overhead": r6(uninterested, msgs),
        "event_messages": msgs,
        "event_messages_dropped": dropped,
        "cost": r6(msgs, delivered),
        "path_length": r6(hops_total, delivered),
        "load_max": load_max,
        "load_p95": load_p95,
    }
