"""Analysis throughput: log records per second of `vinifera analyze` (the
whole job: reading, ground truth, metrics, tables, plots, report) with Spark
local[2], beside the same metrics computed with DuckDB on the same JSON
logs (benchmarks/duckdb_metrics.py; `pip install -e '.[bench]'`).

    .venv/bin/python benchmarks/analyze_throughput.py                   # 10M records
    .venv/bin/python benchmarks/analyze_throughput.py --records 1000000 --no-record

The logs are synthetic swarm logs (benchmarks/synth_logs.py: 1,000 node
files, every record kind the metrics read, churn with silent deaths),
written once into runs/bench/synth-<records> and reused. Three variants,
one after the other in one run, on the same logs:

- spark-first: a fresh output folder: parse the JSON into the Parquet store,
  then analyze (what a first `vinifera analyze` of new logs costs);
- spark-again: the same command again: the store is reused (what every later
  analysis of the same logs costs: other windows, deadlines, reports);
- duckdb: the 12 metrics from the JSON with DuckDB (2 threads).

Every variant must give the same 12 figures (checked). Prints the rates,
the Spark/DuckDB time ratios and the load average, and appends them to
benchmarks/results.jsonl. Run it with nice, once: it is heavy.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from record import record  # noqa: E402
from synth_logs import write_synthetic  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def jvm_cpu_seconds(spark) -> float | None:
    """User + system CPU seconds of the Spark driver JVM so far (Linux)."""
    proc = getattr(spark.sparkContext._gateway, "proc", None)
    if proc is None:
        return None
    try:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def self_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10_000_000, help="about this many")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--work", type=Path, default=ROOT / "runs" / "bench")
    ap.add_argument("--no-duckdb", action="store_true", help="Spark only")
    ap.add_argument("--no-record", action="store_true", help="print only")
    args = ap.parse_args()

    logs = args.work / f"synth-{args.records}"
    print(f"synthetic logs in {logs} ...", file=sys.stderr)
    records = write_synthetic(logs, args.records)

    from vinifera.analysis import inputs, job, session
    from vinifera.analysis.metrics import LEDGER_KEYS

    spec = inputs.resolve(str(logs))
    out = args.work / f"analysis-{args.records}"
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    # Sized as `vinifera analyze` sizes it (the JIT policy for small logs).
    spark, _ = session.start(args.master, input_bytes=inputs.input_bytes([spec]))
    started = time.perf_counter() - t0
    say = lambda m: print(f"  {time.perf_counter() - t0:7.1f} s  {m}", file=sys.stderr)  # noqa: E731
    runs: dict[str, dict] = {}
    for name in ("spark-first", "spark-again"):
        print(f"{name} ...", file=sys.stderr)
        load = os.getloadavg()[0]
        cpu0, py0, t1 = jvm_cpu_seconds(spark), self_cpu(), time.perf_counter()
        _, results = job.analyze(spark, [spec], out, progress=say)
        wall = time.perf_counter() - t1
        cpu1 = jvm_cpu_seconds(spark)
        runs[name] = {
            "seconds": round(wall, 1),
            "records_per_second": round(records / wall),
            "cpu_seconds": None if cpu0 is None else round(cpu1 - cpu0 + self_cpu() - py0, 1),
            "load_before": round(load, 2),
            "summary": {k: results[0].summary[k] for k in LEDGER_KEYS},
        }
    spark.stop()
    if not args.no_duckdb:
        from duckdb_metrics import metrics

        print("duckdb ...", file=sys.stderr)
        load = os.getloadavg()[0]
        py0, t1 = self_cpu(), time.perf_counter()
        s = results[0].summary
        origin = s["time_origin"]
        got = metrics(str(logs), origin + s["window_start"], origin + s["window_end"],
                      s["deadline"], infer=spec.infer_crashes)  # fmt: skip
        wall = time.perf_counter() - t1
        runs["duckdb"] = {
            "seconds": round(wall, 1),
            "records_per_second": round(records / wall),
            "cpu_seconds": round(self_cpu() - py0, 1),
            "load_before": round(load, 2),
            "summary": got,
        }
    want = runs["spark-first"]["summary"]
    for name, r in runs.items():
        # DuckDB computes the 13 original figures, Spark every LEDGER_KEYS one.
        differ = {k: (v, want[k]) for k, v in r["summary"].items() if v != want[k]}
        if differ:
            raise SystemExit(f"{name} disagrees with spark-first: {differ}")
    figures = {
        "records": records,
        "spark_start_seconds": round(started, 1),
        **{f"{n}_{k}": v for n, r in runs.items() for k, v in r.items() if k != "summary"},
        "expected_pairs": want["expected_pairs"],
        "hit_ratio": want["hit_ratio"],
    }
    if "duckdb" in runs:
        d = runs["duckdb"]["seconds"]
        figures["ratio_spark_first_to_duckdb"] = round(runs["spark-first"]["seconds"] / d, 2)
        figures["ratio_spark_again_to_duckdb"] = round(runs["spark-again"]["seconds"] / d, 2)
    for name, r in runs.items():
        print(f"{name:12} {r['seconds']:7.1f} s  {r['records_per_second']:>9,} records/s  "
              f"cpu {r['cpu_seconds']} s  (load {r['load_before']})")  # fmt: skip
    if "duckdb" in runs:
        print(f"Spark / DuckDB time: first {figures['ratio_spark_first_to_duckdb']}x, "
              f"again {figures['ratio_spark_again_to_duckdb']}x; "
              f"all {len(runs['duckdb']['summary'])} DuckDB metrics equal")  # fmt: skip
    print(f"{records:,} records, {args.master}, Spark start {started:.1f} s (not counted)")
    if not args.no_record:
        params = {"master": args.master, "logs": "synth_logs.py, 1000 nodes, seed 1",
                  "cores": os.cpu_count()}  # fmt: skip
        record("analyze_throughput", figures, params)


if __name__ == "__main__":
    main()
