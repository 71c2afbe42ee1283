"""Simulator throughput: node-rounds per second of the overlay layer
(Cyclon + T-Man + liveness), for N nodes over R rounds.

    .venv/bin/python benchmarks/sim_throughput.py             # N = 1,000 and 10,000, 100 rounds
    .venv/bin/python benchmarks/sim_throughput.py --nodes 1000 --rounds 20

Prints the figures and appends them to benchmarks/results.jsonl.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from record import record  # noqa: E402

from vinifera.sim.config import SimConfig  # noqa: E402
from vinifera.sim.driver import Simulation  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, action="append", help="repeatable; default 1000, 10000")
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-record", action="store_true", help="print only")
    args = ap.parse_args()
    for n in args.nodes or [1000, 10000]:
        cfg = SimConfig(nodes=n, rounds=args.rounds, seed=args.seed)
        sim = Simulation(cfg)
        t0 = time.perf_counter()
        summary = sim.run()
        wall = time.perf_counter() - t0
        figures = {
            "node_rounds": sim.node_rounds,
            "wall_seconds": round(wall, 2),
            "node_rounds_per_second": round(sim.node_rounds / wall, 1),
            "messages_per_second": round(summary["messages_sent"] / wall, 1),
            "ring_correct_fraction": summary["ring_correct_fraction"],
            "ring_converged_round": summary["ring_converged_round"],
        }
        print(
            f"N={n:>6} rounds={args.rounds}:"
            f" {figures['node_rounds_per_second']:>9.0f} node-rounds/s"
            f"  ({figures['messages_per_second']:.0f} msg/s, {wall:.1f} s,"
            f" ring {figures['ring_correct_fraction']:.3f}"
            f" converged at round {figures['ring_converged_round']})",
            flush=True,
        )
        if not args.no_record:
            record(
                "sim_throughput", figures, {"nodes": n, "rounds": args.rounds, "seed": args.seed}
            )


if __name__ == "__main__":
    main()
