"""Analysis throughput: log records per second of `vinifera analyze` (the
whole job: reading, ground truth, metrics, tables, plots, report) on at
least 10 million records with Spark local[2].

    .venv/bin/python benchmarks/analyze_throughput.py                   # 10M records, local[2]
    .venv/bin/python benchmarks/analyze_throughput.py --records 2000000 --no-record

The records come from one simulator run (1,000 nodes, 60 rounds, 10 events
per round; simulated once into runs/bench/base), replicated: copy k runs
later in time (k x 70 s), with its own node names and event ids, and every
node leaving at the end of its copy, so the copies are independent swarms
one after the other. One file per copy, like a swarm's per-node files. The
replicas are written once into runs/bench/logs-<copies> and reused.
Prints the figures and appends them to benchmarks/results.jsonl.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from record import record  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BASE_ARGS = ["--nodes", "1000", "--rounds", "60", "--events-per-round", "10", "--seed", "3"]
GAP = 10.0  # seconds between the end of one copy and the start of the next


def simulate_base(base: Path) -> None:
    if (base / "summary.json").is_file():
        return
    print(f"simulating the base run into {base} (a few minutes) ...", file=sys.stderr)
    cli = ROOT / ".venv" / "bin" / "vinifera"
    subprocess.run(
        [str(cli), "sim", "run", *BASE_ARGS, "--log-dir", str(base), "--json"],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def replicate(base: Path, copies: int, out: Path, span: float) -> int:
    """Write `copies` shifted copies of base's log into out; returns records."""
    done = out / "DONE"
    if done.is_file():
        return int(done.read_text())
    out.mkdir(parents=True, exist_ok=True)
    records = [json.loads(line) for line in (base / "sim.jsonl").open()]
    nodes = sorted({r["node"] for r in records if r["ev"] == "join"})
    dumps = json.JSONEncoder(separators=(",", ":")).encode
    total = 0
    for k in range(copies):
        shift = k * (span + GAP)
        with (out / f"copy-{k:03d}.jsonl").open("w", encoding="utf-8") as fh:
            for r in records:
                c = dict(r)
                c["t"] = r["t"] + shift
                c["node"] = f"{k}-{r['node']}"
                if "eid" in c:
                    c["eid"] = r["eid"] ^ (k << 52)  # distinct per copy, still < 2^63
                fh.write(dumps(c))
                fh.write("\n")
            for n in nodes:
                fh.write(dumps({"v": 1, "t": shift + span, "node": f"{k}-{n}", "ev": "leave"}))
                fh.write("\n")
        total += len(records) + len(nodes)
        print(f"  copy {k + 1}/{copies} written", file=sys.stderr, end="\r")
    manifest = json.loads((base / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps(manifest))
    done.write_text(str(total))
    print(file=sys.stderr)
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10_000_000, help="at least this many")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--work", type=Path, default=ROOT / "runs" / "bench")
    ap.add_argument("--no-record", action="store_true", help="print only")
    args = ap.parse_args()

    base = args.work / "base"
    simulate_base(base)
    manifest = json.loads((base / "manifest.json").read_text())
    cfg = manifest["config"]
    period = cfg["overlay"]["period"]
    span = cfg["rounds"] * period
    base_records = sum(1 for _ in (base / "sim.jsonl").open()) + cfg["nodes"]
    copies = math.ceil(args.records / base_records)
    logs = args.work / f"logs-{copies}"
    print(f"writing {copies} copies into {logs} ...", file=sys.stderr)
    records = replicate(base, copies, logs, span)

    from vinifera.analysis import inputs, job, session

    warmup = (
        cfg["warmup_rounds"] if cfg["warmup_rounds"] is not None else min(50, cfg["rounds"] // 2)
    )
    spec = inputs.resolve(
        str(logs),
        start=warmup * period,
        end=(copies - 1) * (span + GAP) + (cfg["rounds"] - cfg["deadline_rounds"]) * period,
        window=span + GAP,  # one window per copy
    )
    t0 = time.perf_counter()
    spark, _ = session.start(args.master)
    started = time.perf_counter() - t0
    t1 = time.perf_counter()
    report, results = job.analyze(
        spark, [spec], args.work / "analysis", progress=lambda m: print(m, file=sys.stderr)
    )
    wall = time.perf_counter() - t1
    spark.stop()
    s = results[0].summary
    figures = {
        "records": records,
        "files": copies,
        "analysis_seconds": round(wall, 1),
        "spark_start_seconds": round(started, 1),
        "records_per_second": round(records / wall, 1),
        "events_published": s["events_published"],
        "expected_pairs": s["expected_pairs"],
        "hit_ratio": s["hit_ratio"],
        "traffic_overhead": s["traffic_overhead"],
    }
    print(
        f"{records} records in {copies} files: {wall:.1f} s with {args.master} "
        f"-> {figures['records_per_second']:.0f} records/s "
        f"(+ {started:.1f} s Spark start); report {report}"
    )
    if not args.no_record:
        params = {"master": args.master, "base": " ".join(BASE_ARGS), "copies": copies}
        record("analyze_throughput", figures, params)


if __name__ == "__main__":
    main()
