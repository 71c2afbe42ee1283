"""Writing the tables: Parquet, CSV beside it.

Small tables (one row per run, per time window, per hop count, per load
value) are built on the driver from aggregates and written by the driver
(pyarrow, no Spark job: a Spark write of a few rows cost about 0.2 s each)
as one Parquet file each plus a plain CSV file. The per-node load table
grows with the swarm, so Spark writes it straight from the cluster, both
formats, as directories of part files. What was read (files, malformed
lines by problem) is bookkeeping: CSV only.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame

from vinifera.measures import METRICS


def _typed(metrics) -> list[tuple[str, str]]:
    return [(m.key, "bigint" if m.kind == "count" else "double") for m in metrics]


# One row per run: every declared metric (vinifera/measures.py), then the window.
SUMMARY_COLUMNS = [
    ("label", "string"),
    *_typed(METRICS),
    ("window_start", "double"),
    ("window_end", "double"),
    ("deadline", "double"),
    ("window", "double"),
]

# One row per time window: its network, every metric of the ledger's, and
# the counts its ratios are formed of (report.collapse sums them).
WINDOW_COLUMNS = [
    ("window", "int"),
    ("start", "double"),
    ("end", "double"),
    ("alive_nodes", "bigint"),
    ("joins", "bigint"),
    ("departures", "bigint"),
    *_typed(m for m in METRICS if m.ledger),
    ("event_messages_uninterested", "bigint"),
    ("hops_total", "bigint"),
    ("routes", "bigint"),
    ("route_hops_total", "bigint"),
]

HOPS_COLUMNS = [("hops", "bigint"), ("pairs", "bigint"), ("fraction", "double")]
LOAD_CDF_COLUMNS = [
    ("forwarded", "bigint"),
    ("load", "double"),
    ("nodes", "bigint"),
    ("cumulative_fraction", "double"),
]
INPUT_COLUMNS = [("file", "string"), ("records", "bigint"), ("malformed", "bigint")]
PROBLEM_COLUMNS = [("problem", "string"), ("records", "bigint")]


_ARROW = {"bigint": pa.int64(), "int": pa.int32(), "double": pa.float64(), "string": pa.string()}


def _cast(value, kind: str):
    if value is None:
        return None
    if kind in ("bigint", "int"):
        return int(value)
    if kind == "double":
        return float(value)
    return str(value)


def write_small(rows: list[dict], columns, base: Path) -> dict:
    """rows -> base.parquet (one file) and base.csv."""
    names = [n for n, _ in columns]
    data = [tuple(_cast(r.get(n), k) for n, k in columns) for r in rows]
    schema = pa.schema([(n, _ARROW[k]) for n, k in columns])
    parquet = base.with_suffix(".parquet")
    if parquet.is_dir():  # written by Spark (a folder of part files) before
        shutil.rmtree(parquet)
    table = pa.Table.from_pylist([dict(zip(names, row, strict=True)) for row in data], schema)
    pq.write_table(table, parquet)
    csv_path = base.with_suffix(".csv")
    with csv_path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        w.writerows([_blank(v) for v in row] for row in data)
    return {"parquet": str(parquet), "csv": str(csv_path)}


def write_large(df: DataFrame, base: Path) -> dict:
    """A distributed table: Spark writes both formats as part-file folders."""
    parquet, csv_dir = base.with_suffix(".parquet"), base.with_suffix(".csv")
    df.write.mode("overwrite").parquet(str(parquet))
    df.write.mode("overwrite").option("header", True).csv(str(csv_dir))
    return {"parquet": str(parquet), "csv": str(csv_dir)}


def write_csv(rows: list[dict], columns, path: Path) -> dict:
    names = [n for n, _ in columns]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        w.writerows([_blank(r.get(n)) for n in names] for r in rows)
    return {"csv": str(path)}


def _blank(v):
    return "" if v is None else v


def write_summary(results, out: Path) -> dict:
    """One row per run: out/summary.parquet and out/summary.csv."""
    return write_small([r.summary for r in results], SUMMARY_COLUMNS, out / "summary")


def write_run(result, node_load: DataFrame, folder: Path) -> dict:
    """Every table of one run under folder/tables; returns name -> paths."""
    t = folder / "tables"
    t.mkdir(parents=True, exist_ok=True)
    delivered = sum(n for _, n in result.hops)
    hops = [
        {"hops": h, "pairs": n, "fraction": n / delivered if delivered else None}
        for h, n in result.hops
    ]
    events = result.summary["events_published"]
    nodes = sum(n for _, n in result.load_hist)
    cdf, seen = [], 0
    for fwd, n in result.load_hist:
        seen += n
        cdf.append(
            {
                "forwarded": fwd,
                "load": fwd / events if events else None,
                "nodes": n,
                "cumulative_fraction": seen / nodes,
            }
        )
    problems = [{"problem": k, "records": v} for k, v in sorted(result.inputs["problems"].items())]
    return {
        "windows": write_small(result.windows, WINDOW_COLUMNS, t / "windows"),
        "path_length": write_small(hops, HOPS_COLUMNS, t / "path_length"),
        "load_cdf": write_small(cdf, LOAD_CDF_COLUMNS, t / "load_cdf"),
        "node_load": write_large(node_load, t / "node_load"),
        "inputs": write_csv(result.inputs["files"], INPUT_COLUMNS, t / "inputs.csv"),
        "problems": write_csv(problems, PROBLEM_COLUMNS, t / "problems.csv"),
    }
