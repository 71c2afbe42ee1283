"""The compiled build (scripts/build_compiled.sh) against pure Python:
node-rounds per CPU-second of the full stack (default mix, 10 events per
round, seed 1), the two run in turn in subprocesses (VINIFERA_PURE=1 runs
the .py files despite the build). CPU seconds, not wall time: the machine
is shared. Both must produce the same summary.

    bash scripts/build_compiled.sh
    .venv/bin/python benchmarks/compiled_speedup.py       # N = 1,000, 100 rounds, skewed, 2 pairs
    .venv/bin/python benchmarks/compiled_speedup.py --subscriptions random --repeat 1

Prints the figures and appends them to benchmarks/results.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from record import record  # noqa: E402

from vinifera import native  # noqa: E402

# One run, in a fresh process: its CPU seconds and its summary.
CHILD = """
import json, sys, time
from vinifera import native
from vinifera.protocol.config import profile
from vinifera.sim.config import SimConfig
from vinifera.sim.driver import Simulation
nodes, rounds, subscriptions = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ours = profile("vinifera")
cfg = SimConfig(nodes=nodes, rounds=rounds, seed=1, subscriptions=subscriptions,
                overlay=ours.overlay, content=ours.content, events_per_round=10.0)
sim = Simulation(cfg)
t = time.process_time()
summary = sim.run()
cpu = time.process_time() - t
for key in ("wall_seconds", "node_rounds_per_second"):
    summary.pop(key)
print(json.dumps({"compiled": native.in_use(), "cpu": cpu, "node_rounds": sim.node_rounds,
                  "summary": summary}))
"""


def run_one(pure: bool, nodes: int, rounds: int, subscriptions: str) -> dict:
    env = {**os.environ, "VINIFERA_PURE": "1" if pure else "0"}
    args = [sys.executable, "-c", CHILD, str(nodes), str(rounds), subscriptions]
    out = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
    result = json.loads(out.stdout)
    if result["compiled"] == pure:
        raise SystemExit(f"expected {'pure' if pure else 'compiled'} modules in the child")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--subscriptions", default="skewed", choices=["skewed", "random"])
    ap.add_argument("--repeat", type=int, default=2, help="pure/compiled pairs, run in turn")
    ap.add_argument("--no-record", action="store_true", help="print only")
    args = ap.parse_args()
    if not native.in_use():
        ap.error("no compiled build: run scripts/build_compiled.sh first")
    rates: dict[str, list[float]] = {"pure": [], "compiled": []}
    summaries = []
    load = os.getloadavg()[0]
    for i in range(args.repeat):
        for variant in ("pure", "compiled"):
            r = run_one(variant == "pure", args.nodes, args.rounds, args.subscriptions)
            rate = r["node_rounds"] / r["cpu"]
            rates[variant].append(round(rate))
            summaries.append(r["summary"])
            print(f"pair {i + 1} {variant:>8}: {rate:7.0f} node-rounds/CPU-s ({r['cpu']:.1f} s)")
    if any(s != summaries[0] for s in summaries):
        raise SystemExit("pure and compiled runs disagree: not the same simulation")
    pure, compiled = statistics.median(rates["pure"]), statistics.median(rates["compiled"])
    figures = {
        "pure_node_rounds_per_cpu_second": rates["pure"],
        "compiled_node_rounds_per_cpu_second": rates["compiled"],
        "speedup_median": round(compiled / pure, 2),
        "speedups_per_pair": [
            round(c / p, 2) for p, c in zip(rates["pure"], rates["compiled"], strict=True)
        ],
        "hit_ratio": summaries[0].get("hit_ratio"),
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }
    print(
        f"N={args.nodes} rounds={args.rounds} {args.subscriptions}: pure {pure:.0f}, "
        f"compiled {compiled:.0f} node-rounds/CPU-s: {figures['speedup_median']}x "
        f"(load {figures['load_before']} -> {figures['load_after']})"
    )
    if not args.no_record:
        params = {
            "nodes": args.nodes,
            "rounds": args.rounds,
            "subscriptions": args.subscriptions,
            "seed": 1,
            "events_per_round": 10.0,
            "repeat": args.repeat,
        }
        record("compiled_speedup", figures, params)


if __name__ == "__main__":
    main()
