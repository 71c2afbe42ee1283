"""What each attribute costs the simulator: node-rounds per CPU-second of
the full stack (default mix, skewed, 10 events per round) for d = 1 ... D
attributes, each in a fresh process. With one attribute a CRT row folds
into one filter; with several, rows hold up to `max_filters_per_row`
boxes and the approximate merge does the work
(docs/decisions/simulator-speed.md, "The approximate merge without the
quadratic cost"). CPU seconds, not wall time: the machine is shared.

    .venv/bin/python benchmarks/attributes_cost.py                 # N = 300, 40 rounds, d = 1, 2, 3
    .venv/bin/python benchmarks/attributes_cost.py --nodes 600 --max-attributes 5

Prints the figures and appends them to benchmarks/results.jsonl.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from record import record  # noqa: E402

# One run, in a fresh process: its CPU seconds and a few figures.
CHILD = """
import json, sys, time
from vinifera import native
from vinifera.protocol.config import profile
from vinifera.sim.config import SimConfig
from vinifera.sim.driver import Simulation
nodes, rounds, attributes, seed = map(int, sys.argv[1:5])
ours = profile("vinifera")
cfg = SimConfig(nodes=nodes, rounds=rounds, seed=seed, subscriptions="skewed",
                attributes=attributes, events_per_round=10.0, content=ours.content,
                overlay=ours.overlay)
sim = Simulation(cfg)
t = time.process_time()
s = sim.run()
cpu = time.process_time() - t
print(json.dumps({"compiled": native.in_use(), "cpu": cpu, "node_rounds": sim.node_rounds,
                  "messages": s["messages_sent"], "hit_ratio": s["hit_ratio"],
                  "traffic_overhead": s["traffic_overhead"]}))
"""


def run_one(nodes: int, rounds: int, attributes: int, seed: int) -> dict:
    args = [sys.executable, "-c", CHILD, str(nodes), str(rounds), str(attributes), str(seed)]
    out = subprocess.run(args, capture_output=True, text=True)  # the parent's environment
    if out.returncode != 0:
        raise SystemExit(f"d = {attributes} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--max-attributes", type=int, default=3, help="d = 1 ... this")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-record", action="store_true", help="print only")
    args = ap.parse_args()
    if not 1 <= args.max_attributes <= 8:
        ap.error("--max-attributes must be 1 ... 8")
    per_d = {}
    compiled = False
    for d in range(1, args.max_attributes + 1):
        r = run_one(args.nodes, args.rounds, d, args.seed)
        compiled = r["compiled"]
        rate = r["node_rounds"] / r["cpu"]
        per_d[str(d)] = {
            "cpu_seconds": round(r["cpu"], 2),
            "node_rounds_per_cpu_second": round(rate, 1),
            "messages_per_node_round": round(r["messages"] / r["node_rounds"], 2),
            "hit_ratio": r["hit_ratio"],
            "traffic_overhead": r["traffic_overhead"],
        }
        print(f"d = {d}: {r['cpu']:.1f} CPU-s, {rate:,.0f} node-rounds per CPU-second, "
              f"{r['messages'] / r['node_rounds']:.1f} messages per node-round, "
              f"hit ratio {r['hit_ratio']}", flush=True)  # fmt: skip
    if not args.no_record:
        params = {"nodes": args.nodes, "rounds": args.rounds, "seed": args.seed,
                  "subscriptions": "skewed", "compiled": compiled}  # fmt: skip
        record("attributes_cost", {"by_attributes": per_d}, params)


if __name__ == "__main__":
    main()
