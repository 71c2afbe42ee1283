"""Gossip poisoning in the simulator: how much of a node's Cyclon view and
routing links 64 fake profiles pushed at it take (vinifera/sim/poisoning.py
stages the attack). The issue's probe on a live swarm: 64 fakes in 20
datagrams over 10 rounds filled 11 of 20 view entries and 2 of 10 links,
and 4 other nodes took fake links.

    .venv/bin/python benchmarks/gossip_poisoning.py [--nodes 300] [--seeds 1 2 3]

Prints, per seed, the most fakes seen at once in the target's view and
links, and the number of other nodes that ever held a fake link, during the
attack and the 20 rounds after it; and appends them to benchmarks/results.jsonl.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from record import record  # noqa: E402

from vinifera.sim.config import SimConfig  # noqa: E402
from vinifera.sim.poisoning import poison  # noqa: E402

FAKES = 64


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=300)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--attack", type=int, default=10)
    ap.add_argument("--after", type=int, default=20)
    ap.add_argument("--no-record", action="store_true", help="print only")
    args = ap.parse_args()
    per_seed = {}
    for seed in args.seeds:
        config = SimConfig(nodes=args.nodes, rounds=args.warmup + args.attack + args.after,
                           seed=seed)  # fmt: skip
        per_seed[seed] = poison(config, FAKES, args.warmup, args.attack, args.after)
        print(f"seed {seed}: {json.dumps(per_seed[seed])}", flush=True)
    figures = {
        "view_max": max(r["view_max"] for r in per_seed.values()),
        "links_max": max(r["links_max"] for r in per_seed.values()),
        "other_nodes_with_fake_links_max": max(
            r["other_nodes_with_fake_links"] for r in per_seed.values()
        ),
        "per_seed": per_seed,
    }
    print(json.dumps({k: v for k, v in figures.items() if k != "per_seed"}))
    if not args.no_record:
        params = {k: v for k, v in vars(args).items() if k != "no_record"}
        record("gossip_poisoning", figures, {**params, "fakes": FAKES})


if __name__ == "__main__":
    main()
