"""One `vinifera analyze`: read each run's logs, measure, write the tables,
plots and the report."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import SparkSession

from vinifera.analysis import ingest, metrics, plots, reading, report, tables
from vinifera.analysis.inputs import InputError, RunSpec
from vinifera.analysis.reading import PROBLEMS

# More windows than this is a mistyped --window, not an analysis.
MAX_WINDOWS = 100_000


@dataclass
class RunResult:
    spec: RunSpec
    start: float  # the measurement window, in the logs' clock
    end: float
    count: int  # time windows
    summary: dict  # the simulator's metric names, plus what the analysis adds
    windows: list[dict]  # start/end in seconds after the origin
    hops: list[tuple[int, int]]
    load_hist: list[tuple[int, int]]
    inputs: dict = field(default_factory=dict)
    tables: dict = field(default_factory=dict)  # table name -> {"parquet": path, "csv": path}
    origin: float = 0.0  # time zero of the run, in the logs' clock


def analyze_run(
    spark: SparkSession,
    spec: RunSpec,
    out: Path,
    progress: Callable[[str], None],
    store: Path | None = None,
) -> RunResult:
    """One run. `store`: where its ingested records live (ingest.load);
    None keeps them in Spark's memory."""
    say = lambda msg: progress(f"{spec.label}: {msg}")  # noqa: E731
    recs = ingest.load(spark, spec.logdir, spec.files, store, say)
    try:
        return _analyze(spark, spec, recs, out, say)
    finally:
        recs.release()


def _analyze(spark, spec: RunSpec, recs: ingest.Records, out, say) -> RunResult:
    # One pass over the logs (or none: a store keeps them): counts per file,
    # node, kind and problem, and the time span.
    stats = recs.stats()
    if not stats:
        raise InputError(f"{spec.logdir}: the log files hold no records")
    problems: dict[str, int] = {}
    kinds: dict[str, int] = {}
    files: dict[str, list[int]] = {}
    t0 = t1 = None
    last_t: dict[str, float] = {}  # each node's last usable record
    node_ids: dict[str, int] = {}
    for r in stats:
        per_file = files.setdefault(r.file, [0, 0])
        per_file[0] += r.n
        if r.problem is not None:
            problems[r.problem] = problems.get(r.problem, 0) + r.n
            per_file[1] += r.n
            continue
        kinds[r.ev] = kinds.get(r.ev, 0) + r.n
        t0 = r.t0 if t0 is None else min(t0, r.t0)
        t1 = r.t1 if t1 is None else max(t1, r.t1)
        last_t[r.node] = max(last_t.get(r.node, r.t1), r.t1)
        node_ids[r.node] = r.nid
    usable = sum(kinds.values())
    if not usable:
        raise InputError(f"{spec.logdir}: none of the {sum(problems.values())} log lines is usable")
    origin, start, end = spec.settle(t0, t1)
    if not end > start:
        raise InputError(
            f"{spec.logdir}: empty measurement window [{start - origin:g}, {end - origin:g}) s: "
            f"the logs span [{t0 - origin:g}, {t1 - origin:g}] s and the deadline is "
            f"{spec.deadline:g} s"
        )
    count = math.ceil((end - start) / spec.window)
    if count > MAX_WINDOWS:
        raise InputError(
            f"--window {spec.window} cuts [{start - origin:g}, {end - origin:g}) s into "
            f"{count} windows"
        )
    say(f"{usable} records in {len(files)} files; {sum(problems.values())} unreadable")

    last_seen = spark.createDataFrame(sorted(last_t.items()), "node string, last_t double")
    m = metrics.measure(recs, spec.schema, start, end, spec.deadline, spec.window, count,
                        infer_crashes=spec.infer_crashes, last_seen=last_seen,
                        progress=say, node_ids=node_ids)  # fmt: skip
    invalid = m.extra["invalid_events"]
    if invalid and invalid == kinds.get("publish", 0):
        raise InputError(
            f"{spec.logdir}: the schema fits none of the {invalid} published events (its "
            f"attributes: {', '.join(spec.schema.names)}): give the schema the logs were "
            "written with (--schema)"
        )
    problems["invalid_event"] = invalid
    problems["invalid_subscription"] = m.extra["invalid_subscriptions"]
    if invalid or m.extra["invalid_subscriptions"]:
        say(f"{invalid} events and {m.extra['invalid_subscriptions']} subscriptions do not fit "
            "the schema (counted as malformed)")  # fmt: skip
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
        "examples": reading.malformed_examples(recs.other) if problems else [],
        "logs_span": [t0 - origin, t1 - origin],
        "store": None if recs.store is None else str(recs.store),
        "store_reused": recs.reused,
    }
    for w in m.windows:  # seconds after the origin, like every time shown
        w["start"] -= origin
        w["end"] -= origin
    summary = {
        "label": spec.label,
        **m.summary,
        "nodes_in_window": m.extra["nodes_in_window"],
        "records": inputs["records"],
        "malformed_lines": malformed_lines,
        "window_start": start - origin,
        "window_end": end - origin,
        "deadline": spec.deadline,
        "window": spec.window,
        "time_origin": origin,
    }
    result = RunResult(spec, start, end, count, summary, m.windows, m.hops, m.load_hist, inputs,
                       origin=origin)  # fmt: skip
    say("writing tables")
    try:
        result.tables = tables.write_run(result, m.node_load, out / spec.label)
    finally:
        m.release()
    return result


def analyze(
    spark: SparkSession,
    specs: list[RunSpec],
    out: Path,
    progress: Callable[[str], None] = lambda msg: None,
    master: str | None = None,
    ingest_to_store: bool | None = None,
) -> tuple[Path, list[RunResult]]:
    """Analyze every run into `out`; returns (report path, results).
    `ingest_to_store`: parse each run's logs once into a Parquet store in
    out/LABEL/records.parquet (default: with a local master, whose
    executors share the driver's disk)."""
    out.mkdir(parents=True, exist_ok=True)
    if ingest_to_store is None:
        ingest_to_store = spark.sparkContext.master.startswith("local")
    results = [
        analyze_run(spark, spec, out, progress,
                    store=out / spec.label / "records.parquet" if ingest_to_store else None)
        for spec in specs
    ]  # fmt: skip
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
    summary = tables.write_summary(results, out)
    path = report.write(out, results, figures, summary, spark_info, PROBLEMS)
    return path, results
