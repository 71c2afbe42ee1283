"""Measurements of the overlay taken by the simulator at round boundaries,
with global knowledge the nodes do not have (the true ring, who is dead)."""

from __future__ import annotations

import random
from collections.abc import Sequence

from vinifera.protocol.node import Node
from vinifera.protocol.tman import friend_utility


def ring_correct_fraction(alive: Sequence[Node]) -> float:
    """Alive nodes whose successor and predecessor links are the true ones
    in the alive set, as a fraction of alive nodes."""
    n = len(alive)
    if n == 0:
        return 1.0
    if n == 1:
        links = alive[0].links()
        return 1.0 if links.succ is None and links.pred is None else 0.0
    order = sorted(alive, key=_ident)
    correct = 0
    for i, node in enumerate(order):
        true_succ = order[(i + 1) % n].address
        true_pred = order[i - 1].address
        links = node.links()
        if links.succ == true_succ and links.pred == true_pred:
            correct += 1
    return correct / n


def _ident(node: Node) -> int:
    return node.ident


def max_degree(alive: Sequence[Node]) -> int:
    return max((len(n.link_addresses()) for n in alive), default=0)


def mean_friend_utility(alive: Sequence[Node], by_address: dict) -> float:
    """Mean utility over all (node, friend) links, measured with the friend's
    current subscription (not the node's possibly stale copy)."""
    total = 0.0
    count = 0
    for node in alive:
        primary = node.primary
        for addr in node.links().friends:
            peer = by_address.get(addr)
            if peer is None:
                continue
            total += friend_utility(node.subscription, peer.subscription, primary)
            count += 1
    return total / count if count else 0.0


def random_pair_utility(alive: Sequence[Node], rng: random.Random, pairs: int) -> float:
    """The same measure for random pairs: what friends must beat."""
    if len(alive) < 2:
        return 0.0
    total = 0.0
    for _ in range(pairs):
        p, q = rng.sample(alive, 2)
        total += friend_utility(p.subscription, q.subscription, p.primary)
    return total / pairs


def dead_links(alive: Sequence[Node], death_time: dict) -> list[tuple]:
    """(node address, dead neighbour address, time of death) for every
    routing link of an alive node that points at a dead node."""
    found = []
    for node in alive:
        for addr in node.link_addresses():
            t = death_time.get(addr)
            if t is not None:
                found.append((node.address, addr, t))
    return found
