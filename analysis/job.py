"""One `vinifera analyze`: read each run's logs, measure, write the tables,
plots and the report."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from vinifera.analysis import metrics, plots, report, tables
from vinifera.analysis.inputs import InputError, RunSpec
from vinifera.analysis.reading import PROBLEMS, malformed_examples, read_records

# More windows than this is a mistyped --window, not an analysis.
MAX_WINDOWS = 100_000


@dataclass
class RunResult:
    spec: RunSpec
    start: float
    end: float
    count: int  # time windows
    summary: dict  # the simulator's metric names, plus what the analysis adds
    windows: list[dict]
    hops: list[tuple[int, int]]
    load_hist: list[tuple[int, int]]
    inputs: dict = field(default_factory=dict)
    tables: dict = field(default_factory=dict)  # table name -> {"parquet": path, "csv": path}


def analyze_run(
    spark: SparkSession, spec: RunSpec, out: Path, progress: Callable[[str], None]
) -> RunResult:
    say = lambda msg: progress(f"{spec.label}: {msg}")  # noqa: E731
    say(f"reading {spec.logdir}")
    records = read_records(spark, spec.logdir).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        return _analyze(spark, spec, records, out, say)
    finally:
        records.unpersist()


def _analyze(spark, spec, records, out, say) -> RunResult:
    # One pass over the logs: counts per file, kind and problem, and the time span.
    stats = (
        records.groupBy("file", "ev", "problem")
        .agg(F.count(F.lit(1)).alias("n"), F.min("t").alias("t0"), F.max("t").alias("t1"))
        .collect()
    )
    if not stats:
        raise InputError(f"{spec.logdir}: the log files hold no records")
    problems: dict[str, int] = {}
    kinds: dict[str, int] = {}
    files: dict[str, list[int]] = {}
    t0 = t1 = None
    for r in stats:
        per_file = files.setdefault(r["file"], [0, 0])
        per_file[0] += r["n"]
        if r["problem"] is not None:
            problems[r["problem"]] = problems.get(r["problem"], 0) + r["n"]
            per_file[1] += r["n"]
            continue
        kinds[r["ev"]] = kinds.get(r["ev"], 0) + r["n"]
        t0 = r["t0"] if t0 is None else min(t0, r["t0"])
        t1 = r["t1"] if t1 is None else max(t1, r["t1"])
    usable = sum(kinds.values())
    if not usable:
        raise InputError(f"{spec.logdir}: none of the {sum(problems.values())} log lines is usable")
    start = spec.window_start if spec.window_start is not None else t0
    end = spec.window_end if spec.window_end is not None else t1 - spec.deadline
    if not end > start:
        raise InputError(
            f"{spec.logdir}: empty measurement window [{start}, {end}): the logs span "
            f"[{t0}, {t1}] and the deadline is {spec.deadline} s"
        )
    count = math.ceil((end - start) / spec.window)
    if count > MAX_WINDOWS:
        raise InputError(f"--window {spec.window} cuts [{start}, {end}) into {count} windows")
    say(f"{usable} records in {len(files)} files; {sum(problems.values())} malformed")

    valid = records.where(F.col("problem").isNull())
    m = metrics.measure(
        valid, spec.schema, start, end, spec.deadline, spec.window, count, progress=say
    )
    problems["invalid_event"] = m.extra["invalid_events"]
    problems["invalid_subscription"] = m.extra["invalid_subscriptions"]
    problems = {k: v for k, v in problems.items() if v}
    # A line with an invalid subscription still counts as a join (with no
    # subscription), but it is malformed all the same.
    malformed_lines = sum(problems.values())
    inputs = {
        "logdir": spec.logdir,
        "files": [
            {"file": f, "records": n, "malformed": bad} for f, (n, bad) in sorted(files.items())
        ],
        "records": sum(n for n, _ in files.values()),
        "records_by_kind": dict(sorted(kinds.items())),
        "problems": problems,
        "examples": malformed_examples(spark, spec.logdir) if problems else [],
        "logs_span": [t0, t1],
    }
    summary = {
        "label": spec.label,
        **m.summary,
        "nodes_in_window": m.extra["nodes_in_window"],
        "records": inputs["records"],
        "malformed_lines": malformed_lines,
        "window_start": start,
        "window_end": end,
        "deadline": spec.deadline,
        "window": spec.window,
    }
    result = RunResult(spec, start, end, count, summary, m.windows, m.hops, m.load_hist, inputs)
    say("writing tables")
    try:
        result.tables = tables.write_run(spark, result, m.node_load, out / spec.label)
    finally:
        m.release()
    return result


def analyze(
    spark: SparkSession,
    specs: list[RunSpec],
    out: Path,
    progress: Callable[[str], None] = lambda msg: None,
    master: str | None = None,
) -> tuple[Path, list[RunResult]]:
    """Analyze every run into `out`; returns (report path, results)."""
    out.mkdir(parents=True, exist_ok=True)
    results = [analyze_run(spark, spec, out, progress) for spec in specs]
    progress("plotting")
    figures = plots.draw(results, out / "plots")
    (out / "summary.json").write_text(
        json.dumps({r.spec.label: r.summary for r in results}, indent=2) + "\n", encoding="utf-8"
    )
    spark_info = {
        "version": spark.version,
        "master": spark.sparkContext.master,
        "requested_master": master,
    }
    summary = tables.write_summary(spark, results, out)
    path = report.write(out, results, figures, summary, spark_info, PROBLEMS)
    return path, results
