"""The best hit ratio any system can reach under the congestion model (Fig. 4f),
from the workload alone.

    .venv/bin/python benchmarks/congestion_bound.py [--nodes 1000] [--seeds 1 2 3]

The simulator's congestion model (`--capacity X`) lets a node handle at
most X event messages per round and drops the rest. A subscriber gets an
event only by handling a message that carries it (unless it published the
event itself), so a node whose subscription matches a share p of the
events, at r * X events per round, can get at most min(X, r * X * p) of
its r * X * p per round, whatever the routing: relays, pushes and uneven
arrivals only lower that. Summed over the nodes this bounds the hit ratio
from above; self-deliveries can add at most 1/N.

The subscriptions are the simulation's own (`vinifera sim run --nodes N
--seed S --subscriptions W` draws the same ones); p is measured on
--events events drawn from the same workload.
"""

from __future__ import annotations

import argparse
import random

from vinifera.sim.config import SimConfig
from vinifera.sim.driver import Simulation


def match_shares(nodes: int, seed: int, subscriptions: str, events: int) -> list[float]:
    """Per node, the share of the workload's events its subscription matches."""
    cfg = SimConfig(nodes=nodes, rounds=1, seed=seed, subscriptions=subscriptions,
                    events_per_round=0)  # fmt: skip
    sim = Simulation(cfg)
    sim.run()
    subs = [node.profile.subscription for node in sim.alive.values()]
    rng = random.Random(seed)  # events from the workload's distribution
    sample = [sim.workload.event(rng).values for _ in range(events)]
    return [sum(map(sub.matches, sample)) / events for sub in subs]


def hit_ratio_bound(shares: list[float], capacity: int, rate: int) -> float:
    demand = [rate * capacity * p for p in shares]  # deliveries due per round
    return sum(min(capacity, d) for d in demand) / sum(demand)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--capacity", type=int, default=10, help="X: event messages per round")
    ap.add_argument("--rates", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--events", type=int, default=20_000, help="events sampled per seed")
    args = ap.parse_args()
    print("| workload | seed | matches per event | busiest subscriber's share | "
          + " | ".join(f"bound at {r}X" for r in args.rates) + " |")  # fmt: skip
    print("|---" * (4 + len(args.rates)) + "|")
    for subscriptions in ("skewed", "random"):
        for seed in args.seeds:
            shares = match_shares(args.nodes, seed, subscriptions, args.events)
            bounds = [hit_ratio_bound(shares, args.capacity, r) for r in args.rates]
            print(f"| {subscriptions} | {seed} | {sum(shares):.1f} | {max(shares):.3f} | "
                  + " | ".join(f"{b:.3f}" for b in bounds) + " |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
