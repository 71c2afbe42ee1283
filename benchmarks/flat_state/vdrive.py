"""benchmarks/flat_state.py's two loops, compiled with what they drive: n
nodes with views of 20, each starting one shuffle of 8 per round with the
partner answering at once (no network, no other layer)."""

from __future__ import annotations

import random

from mypy_extensions import i64
from ocyc import Cyclon
from vcyc import Batch, VCyclon
from vprofile import Entry, Profile


def setup_profiles(n: int, seed: int) -> tuple[list[Profile], list[list[int]]]:
    """Every node's profile, and the 20 random addresses its view starts with."""
    rng = random.Random(seed)
    profiles = [Profile(a, rng.getrandbits(64), None) for a in range(n)]
    init = [rng.sample([x for x in range(n) if x != a], 20) for a in range(n)]
    return profiles, init


def run_objects(n: int, rounds: int, profiles: list[Profile], init: list[list[int]]) -> float:
    """Rounds of shuffles over Cyclon as the project has it; the mean view size."""
    nodes = [Cyclon(a, 20, 8, random.Random(a)) for a in range(n)]
    for a in range(n):
        for b in init[a]:
            nodes[a].view[b] = Entry(profiles[b], 0.0)
    for r in range(rounds):
        now = float(r + 1)
        for a in range(n):
            c = nodes[a]
            s = c.start_shuffle()
            if s is None:
                continue
            target, sent = s
            t: int = target  # type: ignore[assignment]
            out = [Entry(profiles[a], now)] + sent
            reply = nodes[t].answer_shuffle(a, out)
            c.finish_shuffle(target, reply)
    return sum(len(c.view) for c in nodes) / n


def run_vecs(n: int, rounds: int, profiles: list[Profile], init: list[list[int]]) -> float:
    """The same rounds over the vector prototype; the mean view size."""
    nodes = [VCyclon(a, 20, 8, random.Random(a)) for a in range(n)]
    for a in range(n):
        for b in init[a]:
            nodes[a].add(b, 0.0, 0, profiles[b])
    for r in range(rounds):
        now = float(r + 1)
        for a in range(n):
            c = nodes[a]
            if len(c.addrs) == 0:
                continue
            target, sent = c.start_shuffle()
            out = Batch()
            out.add(a, now, 0, profiles[a])
            for j in range(len(sent.addrs)):
                out.add(sent.addrs[j], sent.heard[j], sent.seqs[j], sent.profiles[j])
            reply = nodes[target].answer_shuffle(a, out)
            c.finish_shuffle(target, reply)
    total: i64 = 0
    for c in nodes:
        held = set(c.addrs)
        if len(held) != len(c.addrs) or c.address in held:
            raise AssertionError(f"node {c.address}: a view with duplicates or itself")
        total += len(c.addrs)
    return total / n
