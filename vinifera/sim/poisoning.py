"""Gossip poisoning, staged in the simulator: an attacker (an address that is
not a node) pushes fake profiles at one target, and we watch how much of
the target's Cyclon view and routing links, and of other nodes' links, the
fakes take. Used by tests/test_vetting.py and benchmarks/gossip_poisoning.py.

Every round of the attack the target gets a Shuffle and a T-Man request,
each carrying all the fakes: made-up addresses nobody listens at, fresh
(age 0), identifiers right next to the target's and the target's own
subscription, so they are the best candidates for its ring and friend links.
"""

from __future__ import annotations

from vinifera.protocol import messages as m
from vinifera.protocol.profile import Profile
from vinifera.ring import RING_SIZE
from vinifera.sim import metrics
from vinifera.sim.config import SimConfig
from vinifera.sim.driver import MESSAGE, Simulation

ATTACKER = 1_000_000  # far above any node's address


def poison(
    config: SimConfig, fakes: int = 64, warmup: int = 30, attack: int = 10, after: int = 20
) -> dict:
    """Run `config` (its node count; rounds = warmup + attack + after) under
    the attack; the most fakes at once in the target's view and links, and
    how many other nodes ever linked to a fake."""
    rounds = warmup + attack + after
    sim = Simulation(config)
    period = sim.overlay_config.period
    sim._schedule_joins(config.nodes, 0.0, config.join_spread_rounds * period)
    target_addr = config.nodes // 2
    fake_addrs = set(range(ATTACKER + 1, ATTACKER + 1 + fakes))
    worst = {"view": 0, "links": 0}
    others = set()
    for r in range(rounds):
        t = r * period
        if warmup <= r < warmup + attack:
            target = sim.alive[target_addr]
            me, sub = target.ident, target.subscription
            step = RING_SIZE >> 20
            profiles = [Profile(a, (me + (i - fakes // 2) * step) % RING_SIZE, sub)
                        for i, a in enumerate(sorted(fake_addrs))]  # fmt: skip
            gossip = (tuple(profiles), (0.0,) * len(profiles))
            attacker = Profile(ATTACKER, (me + 7) % RING_SIZE, sub)
            sim.queue.push(t + 0.3 * period, MESSAGE, target_addr, m.Shuffle(attacker, *gossip))
            sim.queue.push(t + 0.6 * period, MESSAGE, target_addr, m.TmanRequest(attacker, *gossip))
        sim._run_until((r + 1) * period)
        if r >= warmup:
            target = sim.alive[target_addr]
            view = target.view()
            worst["view"] = max(worst["view"], len(fake_addrs.intersection(view)))
            links = target.link_addresses()
            worst["links"] = max(worst["links"], len(fake_addrs.intersection(links)))
            for addr, node in sim.alive.items():
                if addr != target_addr and fake_addrs.intersection(node.link_addresses()):
                    others.add(addr)
    return {
        "view_max": worst["view"],
        "links_max": worst["links"],
        "other_nodes_with_fake_links": len(others),
        "ring_correct_after": round(metrics.ring_correct_fraction(list(sim.alive.values())), 4),
    }
