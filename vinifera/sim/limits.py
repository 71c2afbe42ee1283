"""The limits of a run's own final graph, beside what the run measured
(docs/experiments.md, "Delivery path length"): what no routing over
the same links could beat.

The graph is the routing links of the alive nodes at the end of the run,
directed (what a node can send an up copy or a push over); in runs without
churn the links barely change after the warm-up. Over the ledger's counted
events:

- `limit_route_hops`: per (event, attribute) that reached a rendezvous, the
  shortest path from the publisher to the node that took the key for its
  own, beside the measured `route_hops`;
- `limit_direct_path`: per delivered pair, the shortest path from the
  publisher to the subscriber, beside `path_length`;
- `limit_rendezvous_path`: per delivered pair, the shortest path from the
  publisher to a rendezvous of the event and on from there to the
  subscriber (the least over the event's attributes): what rendezvous
  routing could do if the event turned back only at the rendezvous.

Pairs whose nodes are gone, or that the graph does not connect, are left
out and counted (`limit_pairs_left_out`). One breadth-first search per
publisher and per rendezvous node: cheap up to a few thousand nodes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable

Graph = dict[str, list[str]]


def link_graph(sim) -> Graph:
    """Each alive node's name -> its routing links' names."""
    return {
        str(addr): [str(a) for a in node.links().by_address] for addr, node in sim.alive.items()
    }


def bfs(graph: Graph, source: Hashable) -> dict[str, int]:
    """Hop distance from `source` to every node it reaches."""
    dist = {source: 0}
    queue = deque([source])
    while queue:
        cur = queue.popleft()
        d = dist[cur] + 1
        for nxt in graph.get(cur, ()):
            if nxt not in dist:
                dist[nxt] = d
                queue.append(nxt)
    return dist  # type: ignore[return-value]


def _mean(values: list[int]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None


def path_limits(sim) -> dict:
    """The three limits of the module docstring, from a finished one-process
    Simulation (its ledger and its alive nodes)."""
    ledger = sim.ledger
    graph = link_graph(sim)
    trees: dict[str, dict[str, int]] = {}

    def dist(a: str, b: str) -> int | None:
        if a not in graph or b not in graph:
            return None
        tree = trees.get(a)
        if tree is None:
            tree = trees[a] = bfs(graph, a)
        return tree.get(b)

    publishers = ledger.publishers
    rendezvous: dict[int, list[str]] = {}
    routes: list[int] = []
    left_out = 0
    for (eid, _attr), (_t, _hops, node) in ledger.rendezvous.items():
        rendezvous.setdefault(eid, []).append(node)
        d = dist(publishers[eid], node)
        if d is None:
            left_out += 1
        else:
            routes.append(d)
    direct: list[int] = []
    through: list[int] = []
    for (eid, name), (t, _hops) in ledger.delivered.items():
        if t > ledger.events[eid][0] + ledger.deadline:
            continue  # late: not a delivered pair of the summary
        pub = publishers[eid]
        d = dist(pub, name)
        if d is None:
            left_out += 1
            continue
        direct.append(d)
        legs = [
            (up, down)
            for rv in rendezvous.get(eid, ())
            if (up := dist(pub, rv)) is not None and (down := dist(rv, name)) is not None
        ]
        if legs:
            through.append(min(up + down for up, down in legs))
    return {
        "limit_route_hops": _mean(routes),
        "limit_direct_path": _mean(direct),
        "limit_rendezvous_path": _mean(through),
        "limit_pairs_left_out": left_out,
    }
