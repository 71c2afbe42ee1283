"""Where delivery hops and relay load come from (a diagnostic, not a figure).

    .venv/bin/python benchmarks/path_breakdown.py --system vinifera --nodes 300 --rounds 60

Runs one simulation in-process with the same configuration as
`vinifera sim run --system ...` (same seed, same workload, same numbers) and
prints, besides the summary metrics:

- the delivery path split into hops made by `up` copies (on the way to the
  rendezvous), by `down` copies (down CRT branches) and by pushes, over
  the delivered pairs of the measurement window: each delivery's copy is
  traced back through the copies its senders received;
- the routing in-degree (how many nodes hold a node as a link) and, for the
  node with the most in-links, what kind of link they hold it as;
- the busiest relays (the load of docs/experiments.md) with their in-degree;
- a lower bound for any routing over our links: on the same delivered
  pairs, the shortest-path (BFS) hop distance from the event's publisher to
  the subscriber, beside the measured path, in three graphs of the alive
  nodes: `links` (every routing link, directed: ring, friends, small-world,
  which up copies and pushes use), `links+crt` (plus the CRT rows, the
  reverse edges down copies travel: what a node can actually send an event
  over) and `undirected` (any link usable both ways);
- the mean number of links (and CRT-row neighbours) per node.

The graph is the one at the end of the run, not at each event's time: in
runs without churn the links barely change after warm-up, and the share of
pairs delivered in fewer hops than the `links+crt` distance (`faster`) shows
how much they did. The publisher of each event comes from its `publish` log
record. Pairs are those of `ledger.delivered` (first delivery), which also
counts deliveries the summary's path_length leaves out (late or
unexpected), so its `measured` mean can differ slightly from path_length.

It observes the event copies sent through the simulator's tap and the log
records fed to the ledger; protocol code is unchanged.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict, deque
from collections.abc import Hashable

from vinifera.protocol import messages as m
from vinifera.protocol.config import ContentConfig, profile
from vinifera.sim.config import SimConfig
from vinifera.sim.driver import Simulation

Graph = dict[Hashable, set[Hashable]]


def link_graph(sim: Simulation) -> Graph:
    """Each alive node -> its routing links (every role: by_address)."""
    return {addr: set(node.links().by_address) for addr, node in sim.alive.items()}


def with_crt_rows(sim: Simulation, links: Graph) -> Graph:
    """The links plus each node's CRT-row neighbours: down copies go to the
    nodes that installed a row here, which need not be our links."""
    graph = {addr: set(out) for addr, out in links.items()}
    for addr, node in sim.alive.items():
        graph[addr].update(row["neighbour"] for row in node.snapshot()["crt_rows"])
    return graph


def undirected(graph: Graph) -> Graph:
    both: Graph = defaultdict(set)
    for addr, out in graph.items():
        both[addr].update(out)
        for other in out:
            both[other].add(addr)
    return dict(both)


def bfs(graph: Graph, source: Hashable) -> dict[Hashable, int]:
    """Hop distance from source to every node it reaches."""
    dist = {source: 0}
    queue = deque([source])
    while queue:
        cur = queue.popleft()
        for nxt in graph.get(cur, ()):
            if nxt not in dist:
                dist[nxt] = dist[cur] + 1
                queue.append(nxt)
    return dist


def distances(graph: Graph, pairs: list[tuple[Hashable, Hashable]]) -> list[int | None]:
    """BFS distance of each (publisher, subscriber) pair (None: unreachable);
    one BFS per publisher."""
    trees: dict[Hashable, dict[Hashable, int]] = {}
    out = []
    for source, target in pairs:
        if source not in trees:
            trees[source] = bfs(graph, source)
        out.append(trees[source].get(target))
    return out


def shares(values: list[int | None]) -> dict[str, float]:
    """Share of pairs at distance 0 (self-delivery), 1, 2, 3, 4, >=5 and
    unreachable."""
    buckets = {k: 0 for k in ("0", "1", "2", "3", "4", ">=5", "none")}
    for v in values:
        key = "none" if v is None else str(v) if v < 5 else ">=5"
        buckets[key] += 1
    return {k: round(c / len(values), 4) for k, c in buckets.items()}


def mean(values: list[int | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(sum(known) / len(known), 4) if known else None


def shortest_paths(sim: Simulation) -> dict:
    """Measured path vs shortest-path distance on the delivered pairs."""
    publishers = sim.ledger.publishers
    by_name = {str(addr): addr for addr in range(len(sim.nodes))}
    pairs, measured = [], []
    for (eid, name), (_t, hops) in sim.ledger.delivered.items():
        pairs.append((by_name[publishers[eid]], by_name[name]))
        measured.append(hops)  # first delivery, as path_length
    links = link_graph(sim)
    sendable = with_crt_rows(sim, links)
    graphs = {"links": links, "links+crt": sendable, "undirected": undirected(links)}
    dist = {kind: distances(graph, pairs) for kind, graph in graphs.items()}
    # measured < distance: the graph at the end is not the one the event used
    faster = sum(
        1 for h, d in zip(measured, dist["links+crt"], strict=True) if d is not None and h < d
    )
    alive = len(sim.alive)
    return {
        "pairs": len(pairs),
        "measured_mean": mean(measured),
        "bfs_mean": mean(dist["links"]),
        "bfs_mean_with_crt": mean(dist["links+crt"]),
        "bfs_mean_undirected": mean(dist["undirected"]),
        "faster": round(faster / len(pairs), 4),
        "links_per_node": round(sum(map(len, links.values())) / alive, 2),
        "sendable_per_node": round(sum(map(len, sendable.values())) / alive, 2),
        "shares": {"measured": shares(measured), **{k: shares(v) for k, v in dist.items()}},
    }


def print_shortest_paths(sp: dict) -> None:
    print(
        f"shortest paths over {sp['pairs']} delivered pairs: measured {sp['measured_mean']}, "
        f"BFS links {sp['bfs_mean']}, links+crt {sp['bfs_mean_with_crt']}, "
        f"undirected {sp['bfs_mean_undirected']} (measured < links+crt: {sp['faster']})"
    )
    print(
        f"links per node {sp['links_per_node']}, with CRT-row neighbours "
        f"{sp['sendable_per_node']}; share of pairs by distance:"
    )
    for kind, row in sp["shares"].items():
        print(f"  {kind:>11}: " + "  ".join(f"{k} {v:.3f}" for k, v in row.items()))
    print(json.dumps(sp))


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
    ap.add_argument("--content", default="{}", help="ContentConfig fields to change, as JSON")
    ap.add_argument("--overlay", default="{}", help="OverlayConfig fields to change, as JSON")
    a = ap.parse_args()

    # (eid, receiver address) -> [(hops, sender address, kind: up, down or push)]
    copies: dict[tuple[int, object], list] = defaultdict(list)

    def tap(now, send) -> None:
        msg = send.message
        if type(msg) is m.EventMessage:
            kind = "up" if msg.up else "down"
            copies[(msg.eid, send.dest)].append((msg.hops, msg.profile.address, kind))
        elif type(msg) is m.EventPush:
            copies[(msg.eid, send.dest)].append((msg.hops, msg.profile.address, "push"))

    base = profile(a.system)
    content = base.content
    friends = base.friends if a.friends is None else a.friends
    small_world = base.small_world if a.small_world is None else a.small_world
    if a.no_balancing:
        content = ContentConfig(**{**content.to_dict(), "balancing": False})
    content = ContentConfig(**{**content.to_dict(), **json.loads(a.content)})
    cfg = SimConfig(
        system=a.system,
        nodes=a.nodes,
        rounds=a.rounds,
        seed=a.seed,
        subscriptions=a.subscriptions,
        attributes=a.attributes,
        events_per_round=10,
        overlay=base.overlay.with_(
            **{"friends": friends, "small_world": small_world, **json.loads(a.overlay)}
        ),
        content=content,
    )
    sim = Simulation(cfg, tap=tap)
    summary = sim.run()
    keys = ("hit_ratio", "traffic_overhead", "path_length", "load_max", "load_p95")
    print(json.dumps({k: summary.get(k) for k in keys}))

    ledger = sim.ledger
    by_name = {str(addr): addr for addr in range(len(sim.nodes))}
    by_kind = dict.fromkeys(("up", "down", "push"), 0)
    total = n = untraced = 0
    for (eid, name), (_t, hops) in ledger.delivered.items():
        node = by_name[name]
        made = dict.fromkeys(by_kind, 0)
        cur, h = node, hops
        while h > 0:
            match = [c for c in copies[(eid, cur)] if c[0] == h]
            if not match:
                break
            made[match[0][2]] += 1
            cur, h = match[0][1], h - 1
        if h > 0:
            untraced += 1
            continue
        for kind, k in made.items():
            by_kind[kind] += k
        total, n = total + hops, n + 1
    print(
        f"deliveries traced: {n} (untraced {untraced}); hops per delivery: {total / n:.3f} = "
        + " + ".join(f"{kind} {k / n:.3f}" for kind, k in by_kind.items())
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
    print_shortest_paths(shortest_paths(sim))


if __name__ == "__main__":
    main()
