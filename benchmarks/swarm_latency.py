"""End-to-end delivery latency and resident memory in a process swarm on
loopback: N `vinifera-node` processes (default 50), the reference workload,
E events per second for D seconds.

    .venv/bin/python benchmarks/swarm_latency.py [--nodes 50] [--duration 60]

Latency of a delivered pair = the subscriber's `deliver` time minus the
publisher's `publish` time (both nodes' clocks are this machine's). Memory:
VmRSS of every node process near the end of the run. Prints the figures and
appends them to benchmarks/results.jsonl.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from record import record  # noqa: E402

from vinifera.swarm.backends import ProcessBackend  # noqa: E402
from vinifera.swarm.plan import make_plan  # noqa: E402
from vinifera.swarm.results import read_records, swarm_metrics  # noqa: E402
from vinifera.swarm.runner import SwarmRunner  # noqa: E402


def rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=50)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--events-per-second", type=float, default=5.0)
    ap.add_argument("--period", type=float, default=0.5)
    ap.add_argument("--log-dir", type=Path, default=None)
    ap.add_argument("--no-record", action="store_true", help="print only")
    args = ap.parse_args()
    log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="vnf-bench-"))
    backend = ProcessBackend(Path(tempfile.mkdtemp(prefix="vnf-")))
    runner = SwarmRunner(make_plan(args.nodes, seed=1), backend, log_dir, period=args.period,
                         events_per_second=args.events_per_second)  # fmt: skip
    rss: dict[int, int] = {}

    def sample_memory() -> None:
        while not runner.t0 or time.monotonic() - runner.t0 < args.duration - 5:
            time.sleep(0.5)
        for slot, proc in list(backend.procs.items()):
            kib = rss_kib(proc.pid)
            if kib is not None:
                rss[slot] = kib

    sampler = threading.Thread(target=sample_memory, daemon=True)
    sampler.start()
    runner.run(args.duration)
    sampler.join(timeout=10)
    records, _ = read_records(log_dir)
    published = {r["eid"]: r["t"] for r in records if r["ev"] == "publish"}
    latencies = [
        (r["t"] - published[r["eid"]]) * 1000
        for r in records
        if r["ev"] == "deliver" and r["hops"] > 0 and r["eid"] in published
    ]
    met = swarm_metrics(log_dir)
    figures = {
        "latency_ms_p50": round(percentile(latencies, 0.50), 2),
        "latency_ms_p99": round(percentile(latencies, 0.99), 2),
        "latency_ms_mean": round(statistics.fmean(latencies), 2),
        "delivered_remote_pairs": len(latencies),
        "rss_mib_mean": round(statistics.fmean(rss.values()) / 1024, 1),
        "rss_mib_max": round(max(rss.values()) / 1024, 1),
        "hit_ratio": met["hit_ratio"],
        "false_positives": met["false_positives"],
        "duplicates": met["duplicates"],
        "path_length": met["path_length"],
    }
    print(json.dumps(figures, indent=2))
    print(f"logs: {log_dir}", file=sys.stderr)
    if not args.no_record:
        record("swarm_latency", figures, {k: v for k, v in vars(args).items() if k != "log_dir"})


if __name__ == "__main__":
    main()
