"""One simulation on one process and on several (`sim run --workers`):
wall time, CPU seconds of all its processes, and the same summary required.
Wall time is what the workers buy, so run this with the machine otherwise
idle (it prints the load average before each run; figures are only
comparable within one invocation).

    .venv/bin/python benchmarks/parallel_speedup.py                      # N = 1,000, 100 rounds
    .venv/bin/python benchmarks/parallel_speedup.py \
        --trace ../shared/traces/skype-superpeers.avt --end 48

Each run is a fresh process (compiled build if present). Prints the figures
and appends them to benchmarks/results.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from record import record  # noqa: E402

CHILD = """
import json, resource, sys, time
from vinifera import native
from vinifera.protocol.config import profile
from vinifera.sim.config import SimConfig
from vinifera.sim.parallel import run_parallel
from vinifera.sim.replay import load_replay
workers, nodes, rounds = (int(a) for a in sys.argv[1:4])
trace, end = sys.argv[4], float(sys.argv[5]) or None
ours = profile("vinifera")
common = dict(seed=1, subscriptions="skewed", overlay=ours.overlay, content=ours.content,
              events_per_round=10.0)
if trace:
    cfg = SimConfig.for_trace(load_replay(trace, round_seconds=240, end_hours=end), **common)
else:
    cfg = SimConfig(nodes=nodes, rounds=rounds, **common)
wall = time.perf_counter()
summary = run_parallel(cfg, workers)
wall = time.perf_counter() - wall
use = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
cpu = sum(u.ru_utime + u.ru_stime for u in use)
for key in ("wall_seconds", "node_rounds_per_second"):
    summary.pop(key)
print(json.dumps({"compiled": native.in_use(), "wall": wall, "cpu": cpu, "summary": summary}))
"""


def run_one(workers: int, args) -> dict:
    cmd = [sys.executable, "-c", CHILD, str(workers), str(args.nodes), str(args.rounds),
           args.trace or "", str(args.end or 0)]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--trace", help="replay this trace (240 s per round) instead")
    ap.add_argument("--end", type=float, help="with --trace: hours to replay")
    ap.add_argument("--workers", type=int, default=2, help="against one process [default: 2]")
    ap.add_argument("--no-record", action="store_true", help="print only")
    args = ap.parse_args()
    runs = {}
    for w in (1, args.workers):
        load = os.getloadavg()[0]
        runs[w] = run_one(w, args)
        r = runs[w]
        print(f"workers {w}: wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s "
              f"(load before {load:.2f}; compiled {r['compiled']})", flush=True)  # fmt: skip
        r["load_before"] = round(load, 2)
    one, many = runs[1], runs[args.workers]
    if one["summary"] != many["summary"]:
        sys.exit("the summaries differ: the parallel run is not the same run")
    speedup = one["wall"] / many["wall"]
    print(f"same summary; wall-time speedup {speedup:.2f}x, "
          f"CPU {many['cpu'] / one['cpu']:.2f}x of one process")  # fmt: skip
    if not args.no_record:
        figures = {
            "wall_one": round(one["wall"], 1),
            "wall_parallel": round(many["wall"], 1),
            "cpu_one": round(one["cpu"], 1),
            "cpu_parallel": round(many["cpu"], 1),
            "speedup": round(speedup, 3),
            "hit_ratio": one["summary"].get("hit_ratio"),
        }
        params = {"workers": args.workers, "nodes": args.nodes, "rounds": args.rounds,
                  "trace": args.trace, "end_hours": args.end, "compiled": one["compiled"],
                  "load_before": [one["load_before"], many["load_before"]]}  # fmt: skip
        record("parallel_speedup", figures, params)


if __name__ == "__main__":
    main()
