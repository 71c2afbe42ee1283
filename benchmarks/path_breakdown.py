"""Where delivery hops and relay load come from (a diagnostic, not a figure).

    .venv/bin/python benchmarks/path_breakdown.py --system vinifera --nodes 300 --rounds 60

Runs one simulation in-process with the same configuration as
`vinifera sim run --system ...` (same seed, same workload, same numbers) and
prints, besides the summary metrics:

- the delivery path split into hops made by `up` copies (on the way to the
  rendezvous) and by `down` copies (down CRT branches), over the delivered
  pairs of the measurement window: each delivery's copy is traced back
  through the copies its senders received;
- the routing in-degree (how many nodes hold a node as a link) and, for the
  node with the most in-links, what kind of link they hold it as;
- the busiest relays (the load of EXPERIMENTS.md) with their in-degree.

It observes the event copies sent through the simulator's tap; protocol
code is unchanged.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

from vinifera.protocol import messages as m
from vinifera.protocol.config import ContentConfig, OverlayConfig, system_defaults
from vinifera.sim.config import SimConfig
from vinifera.sim.driver import Simulation


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--system", choices=("vinifera", "baseline"), default="vinifera")
    ap.add_argument("--subscriptions", choices=("skewed", "random"), default="skewed")
    ap.add_argument("--nodes", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--attributes", type=int, default=1)
    ap.add_argument("--friends", type=int, default=None)
    ap.add_argument("--small-world", type=int, default=None)
    ap.add_argument("--no-balancing", action="store_true")
    a = ap.parse_args()

    # (eid, receiver address) -> [(hops, sender address, up)]; pushes count as down
    copies: dict[tuple[int, object], list] = defaultdict(list)

    def tap(now, send) -> None:
        msg = send.message
        if type(msg) is m.EventMessage:
            copies[(msg.eid, send.dest)].append((msg.hops, msg.profile.address, msg.up))
        elif type(msg) is m.EventPush:
            copies[(msg.eid, send.dest)].append((msg.hops, msg.profile.address, False))

    friends, small_world, content = system_defaults(a.system)
    friends = friends if a.friends is None else a.friends
    small_world = small_world if a.small_world is None else a.small_world
    if a.no_balancing:
        content = ContentConfig(**{**content.to_dict(), "balancing": False})
    cfg = SimConfig(
        system=a.system,
        nodes=a.nodes,
        rounds=a.rounds,
        seed=a.seed,
        subscriptions=a.subscriptions,
        attributes=a.attributes,
        events_per_round=10,
        overlay=OverlayConfig(friends=friends, small_world=small_world),
        content=content,
    )
    sim = Simulation(cfg, tap=tap)
    summary = sim.run()
    keys = ("hit_ratio", "traffic_overhead", "path_length", "load_max", "load_p95")
    print(json.dumps({k: summary.get(k) for k in keys}))

    ledger = sim.ledger
    by_name = {str(addr): addr for addr in range(len(sim.nodes))}
    up = down = total = n = untraced = 0
    for (eid, name), deliveries in ledger.delivered.items():
        node, hops = by_name[name], deliveries[0][1]
        u = d = 0
        cur, h = node, hops
        while h > 0:
            match = [c for c in copies[(eid, cur)] if c[0] == h]
            if not match:
                break
            u, d = (u + 1, d) if match[0][2] else (u, d + 1)
            cur, h = match[0][1], h - 1
        if h > 0:
            untraced += 1
            continue
        up, down, total, n = up + u, down + d, total + hops, n + 1
    print(
        f"deliveries traced: {n} (untraced {untraced}); hops per delivery: "
        f"{total / n:.3f} = up {up / n:.3f} + down {down / n:.3f}"
    )

    indeg: dict[object, int] = defaultdict(int)
    roles: dict[object, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for node in sim.alive.values():
        links = node.links()
        for addr in links.by_address:
            indeg[addr] += 1
        for role, addrs in (
            ("ring", (links.succ, links.pred)),
            ("friend", links.friends),
            ("small_world", links.small_world),
        ):
            for addr in addrs:
                if addr is not None:
                    roles[addr][role] += 1
    degrees = sorted(indeg.values())
    hub = max(indeg, key=indeg.__getitem__)
    print(
        f"in-degree: mean {sum(degrees) / len(degrees):.1f}, "
        f"p99 {degrees[int(0.99 * (len(degrees) - 1))]}, max {degrees[-1]} "
        f"(node {hub}, joined #{hub + 1}: {dict(roles[hub])})"
    )
    events = len(ledger.events)
    busiest = sorted(ledger.forwarded.items(), key=lambda kv: -len(kv[1]))[:8]
    print(
        "busiest relays (node, load, in-degree): "
        + ", ".join(f"({k}, {len(v) / events:.3f}, {indeg.get(by_name[k], 0)})" for k, v in busiest)
    )


if __name__ == "__main__":
    main()
