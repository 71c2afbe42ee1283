"""A figure's tables: every run, and the mean, standard deviation, minimum
and maximum over seeds of each point; for Fig. 4e the load CDF and for
Fig. 5 the time series, in long form. Each written as CSV and Parquet."""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

from vinifera.experiment.figures import Figure, variant
from vinifera.experiment.series import LOAD_GRID

# Aggregated in every figure's table.
METRICS = (
    "hit_ratio",
    "traffic_overhead",
    "path_length",
    "cost",
    "load_max",
    "load_p95",
    "false_positives",
    "duplicates",
    "event_messages_dropped",
)
SERIES_METRICS = ("hit_ratio", "traffic_overhead", "path_length", "alive_nodes")
STATS = ("mean", "sd", "min", "max")


def stats(values: list) -> dict[str, float | None]:
    """mean, sample standard deviation (0 for one value), min and max of the non-None values."""
    vs = [v for v in values if v is not None]
    if not vs:
        return dict.fromkeys(STATS)
    return {
        "mean": round(statistics.fmean(vs), 6),
        "sd": round(statistics.stdev(vs), 6) if len(vs) > 1 else 0.0,
        "min": min(vs),
        "max": max(vs),
    }


def group_params(fig: Figure) -> list[str]:
    return [p for p in fig.params if p != "seed"]


def groups(fig: Figure, rows: list[dict]) -> list[tuple[dict, list[dict]]]:
    """(parameters, the rows of its seeds), in grid order."""
    names = group_params(fig)
    out: dict[tuple, tuple[dict, list]] = {}
    for row in rows:
        params = {n: row[n] for n in names}
        out.setdefault(tuple(params.values()), (params, []))[1].append(row)
    return list(out.values())


def summary(fig: Figure, rows: list[dict]) -> list[dict]:
    table = []
    for params, runs in groups(fig, rows):
        row = {"variant": variant(params), **params, "seeds": len(runs)}
        for metric in METRICS:
            for stat, value in stats([r.get(metric) for r in runs]).items():
                row[f"{metric}_{stat}"] = value
        table.append(row)
    return table


def load_cdf(fig: Figure, rows: list[dict]) -> list[dict]:
    table = []
    for params, runs in groups(fig, rows):
        for i, load in enumerate(LOAD_GRID):
            s = stats([r["load_cdf"][i] for r in runs])
            table.append(
                {"variant": variant(params), **params, "load": load, **_prefixed("cdf", s)}
            )
    return table


def time_series(fig: Figure, rows: list[dict]) -> list[dict]:
    table = []
    for params, runs in groups(fig, rows):
        for i, window in enumerate(runs[0]["series"]):
            row = {
                "variant": variant(params),
                **params,
                "start_hours": window["start_hours"],
                "end_hours": window["end_hours"],
            }
            for metric in SERIES_METRICS:
                row.update(_prefixed(metric, stats([r["series"][i][metric] for r in runs])))
            table.append(row)
    return table


def _prefixed(prefix: str, s: dict) -> dict:
    return {f"{prefix}_{k}": v for k, v in s.items()}


def write(table: list[dict], base: Path) -> dict[str, Path]:
    """base.csv and base.parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    base.parent.mkdir(parents=True, exist_ok=True)
    columns = list(dict.fromkeys(k for row in table for k in row))
    csv_path = base.with_suffix(".csv")
    with csv_path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        for row in table:  # lists (the CDF, the series) as JSON text
            writer.writerow(
                {k: json.dumps(v) if isinstance(v, list | dict) else v for k, v in row.items()}
            )
    parquet = base.with_suffix(".parquet")
    arrow = pa.Table.from_pylist([{c: row.get(c) for c in columns} for row in table])
    pq.write_table(arrow, parquet)
    return {"csv": csv_path, "parquet": parquet}


def write_all(fig: Figure, rows: list[dict], out: Path) -> dict[str, dict[str, Path]]:
    written = {
        "summary": write(summary(fig, rows), out / fig.name),
        "runs": write(rows, out / f"{fig.name}-runs"),
    }
    if fig.kind == "cdf":
        written["cdf"] = write(load_cdf(fig, rows), out / f"{fig.name}-cdf")
    if fig.kind == "series":
        written["series"] = write(time_series(fig, rows), out / f"{fig.name}-series")
    return written
