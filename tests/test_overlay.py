"""The overlay of a few nodes driven by hand: synthetic time, no simulator."""

import itertools
import random
from dataclasses import replace

from pump import Pump

from vinifera.protocol import messages as m
from vinifera.protocol.actions import Log, Send
from vinifera.protocol.config import OverlayConfig
from vinifera.protocol.node import Node
from vinifera.schema import Schema
from vinifera.subscription import Subscription

SCHEMA = Schema.numeric(1)
CFG = OverlayConfig(friends=2, small_world=0, failure_timeout=5.0, probe_after=2.0)


def node(addr, ident, lo=0.0, hi=100.0, seed=None, cfg=CFG):
    sub = Subscription.build(SCHEMA, {"a0": (lo, hi)})
    return Node(addr, SCHEMA, cfg, random.Random(seed if seed is not None else addr), sub, ident)


def deliver_all(nodes, actions, now, drop=()):
    """Deliver sends breadth-first among `nodes` (dict addr -> Node) at `now`."""
    Pump(nodes, now, drop).run(actions)


def sends(actions, kind=None):
    return [
        a for a in actions if isinstance(a, Send) and (kind is None or isinstance(a.message, kind))
    ]


def test_join_contacts_bootstrap_and_links_both_ways():
    a, b = node(1, 100), node(2, 200)
    nodes = {1: a, 2: b}
    a.start(0.0)
    out = b.start(0.0, [1])
    assert [s.dest for s in sends(out, m.Join)] == [1]
    assert any(isinstance(x, Log) and x.record["ev"] == "join" for x in out)
    deliver_all(nodes, out, 0.1)
    assert b.overlay.links.succ == 1
    deliver_all(nodes, b.tick(1.0), 1.0)
    deliver_all(nodes, a.tick(1.0), 1.0)
    assert a.overlay.links.succ == 2
    assert a.overlay.links.pred == 2


def ring_of_five():
    """Five nodes joined in a chain (each through the previous one), then
    14 periods of gossip; addresses 1-5, identifiers 500, 100, 900, 300, 700."""
    idents = [500, 100, 900, 300, 700]
    nodes = {i + 1: node(i + 1, ident) for i, ident in enumerate(idents)}
    nodes[1].start(0.0)
    for addr in range(2, 6):
        deliver_all(nodes, nodes[addr].start(0.0, [addr - 1]), 0.0)
    for r in range(1, 15):
        for n in nodes.values():
            deliver_all(nodes, n.tick(float(r)), float(r))
    return nodes


def test_ring_of_five_converges_from_a_chain_of_joins():
    nodes = ring_of_five()
    order = sorted(nodes.values(), key=lambda n: n.ident)
    for i, n in enumerate(order):
        assert n.overlay.links.succ == order[(i + 1) % 5].address
        assert n.overlay.links.pred == order[i - 1].address


def test_a_ring_neighbour_back_under_a_new_identifier_is_reselected_at_once():
    """The predecessor leaves and comes back (same address) with an
    identifier on our other side. Kept as predecessor until the next
    period, it would make our arc (pred, me] almost the whole ring."""
    nodes = ring_of_five()
    me = nodes[1]
    assert (me.overlay.links.pred, me.overlay.links.succ) == (4, 5)
    assert me.content.view().pred == 300
    back = node(4, 600)  # addr 4 again, now between 500 and 700
    back.start(15.2, [1])
    me.receive(15.3, m.Ping(back.profile))
    assert me.counters()["ring_link_moved"] == 1
    assert (me.overlay.links.pred, me.overlay.links.succ) == (2, 4)
    view = me.content.view()
    assert (view.pred, view.succ) == (100, 600)


def test_tman_backs_off_while_links_hold_and_resumes_when_they_change():
    cfg = replace(CFG, tman_backoff_max=8)
    idents = [500, 100, 900, 300, 700]
    nodes = {i + 1: node(i + 1, ident, cfg=cfg) for i, ident in enumerate(idents)}
    nodes[1].start(0.0)
    for addr in range(2, 6):
        deliver_all(nodes, nodes[addr].start(0.0, [addr - 1]), 0.0)

    def run(rounds):
        """The periods in which each node's tick sent a TmanRequest."""
        sent = {addr: [] for addr in nodes}
        for r in rounds:
            for addr, n in list(nodes.items()):
                out = n.tick(float(r))
                if sends(out, m.TmanRequest):
                    sent[addr].append(r)
                deliver_all(nodes, out, float(r))
        return sent

    run(range(1, 15))
    steady = run(range(15, 47))  # 32 periods: an exchange in each without backoff
    assert all(1 <= len(periods) <= 8 for periods in steady.values()), steady
    # 900's node crashes: once its ring neighbours (700 and 100) give it up,
    # a ring link changes and they exchange in consecutive periods again
    del nodes[3]
    after = run(range(47, 47 + 12))

    def consecutive(periods):
        return any(b == a + 1 for a, b in itertools.pairwise(periods))

    assert consecutive(after[5]) and consecutive(after[2]), after
    order = sorted(nodes.values(), key=lambda n: n.ident)
    for i, n in enumerate(order):
        assert n.overlay.links.succ == order[(i + 1) % 4].address


def test_silent_link_is_probed_then_dropped_after_the_timeout():
    a, b, c = node(1, 100), node(2, 200), node(3, 300)
    nodes = {1: a, 2: b, 3: c}
    a.start(0.0)
    deliver_all(nodes, b.start(0.0, [1]), 0.0)
    deliver_all(nodes, c.start(0.0, [1]), 0.0)
    for r in range(1, 6):
        for n in nodes.values():
            deliver_all(nodes, n.tick(float(r)), float(r))
    assert 3 in a.overlay.link_addresses()
    # c goes silent (crash) at t=5: a probes it, then drops it past the timeout.
    del nodes[3]
    pinged = suspected_at = None
    for r in range(6, 14):
        out = a.tick(float(r))
        if pinged is None and any(s.dest == 3 for s in sends(out, m.Ping)):
            pinged = r
        if suspected_at is None and any(
            isinstance(x, Log) and x.record["ev"] == "suspect" for x in out
        ):
            suspected_at = r
        deliver_all(nodes, out, float(r))
        deliver_all(nodes, b.tick(float(r)), float(r))
        if 3 not in a.overlay.link_addresses():
            break
    assert pinged is not None
    assert 3 not in a.overlay.link_addresses()
    last_heard_c = 5.0
    assert r - last_heard_c <= CFG.failure_timeout + CFG.period
    assert suspected_at == r


def test_graceful_leave_removes_at_once_and_stale_gossip_cannot_revive():
    a, b, c = node(1, 100), node(2, 200), node(3, 300)
    nodes = {1: a, 2: b, 3: c}
    a.start(0.0)
    deliver_all(nodes, b.start(0.0, [1]), 0.0)
    deliver_all(nodes, c.start(0.0, [1]), 0.0)
    for r in range(1, 4):
        for n in nodes.values():
            deliver_all(nodes, n.tick(float(r)), float(r))
    out = c.leave(3.5)
    assert any(isinstance(x, Log) and x.record["ev"] == "leave" for x in out)
    deliver_all(nodes, out, 3.5)
    del nodes[3]
    assert 3 not in a.overlay.link_addresses()
    assert 3 not in b.overlay.link_addresses()
    for r in range(4, 8):
        for n in nodes.values():
            deliver_all(nodes, n.tick(float(r)), float(r))
        assert 3 not in a.overlay.link_addresses()


def test_degree_never_exceeds_the_bound():
    nodes = {
        i: node(i, i * 7919 % 10007, lo=float(i % 5) * 10, hi=float(i % 5) * 10 + 50)
        for i in range(1, 30)
    }
    nodes[1].start(0.0)
    for addr in range(2, 30):
        deliver_all(nodes, nodes[addr].start(0.0, [1]), 0.0)
    for r in range(1, 10):
        for n in nodes.values():
            deliver_all(nodes, n.tick(float(r)), float(r))
            assert len(n.overlay.link_addresses()) <= CFG.max_links


def test_api_misuse_raises_clear_errors():
    a = node(1, 100)
    try:
        a.tick(0.0)
    except RuntimeError as err:
        assert "start" in str(err)
    else:
        raise AssertionError("tick before start must raise")
    a.start(0.0)
    try:
        a.receive(0.0, object())
    except TypeError as err:
        # a compiled Node (scripts/build_compiled.sh) checks the argument's
        # type on entry, before looking for a handler
        assert "handler" in str(err) or "Message object expected" in str(err)
    else:
        raise AssertionError("unknown message must raise")


def test_a_bootstrap_node_whose_join_was_lost_is_retried_until_it_answers():
    """The first node of a swarm knows nobody; if the Join sent to it is
    lost (its process was not listening yet) and the joiner gets in through
    others, only retries can let the first node in."""
    from dataclasses import replace

    def alone_after(retries):
        cfg = replace(CFG, join_retries=retries)
        nodes = {
            a: Node(
                a, SCHEMA, cfg, random.Random(a), Subscription.build(SCHEMA, {"a0": (0, 99)}), i
            )
            for a, i in ((1, 100), (2, 200), (3, 300))
        }
        nodes[1].start(0.0)
        deliver_all(nodes, nodes[2].start(0.0, [1]), 0.0, drop={1})  # lost
        deliver_all(nodes, nodes[3].start(0.0, [2]), 0.0)
        for r in range(1, 8):
            for n in nodes.values():
                deliver_all(nodes, n.tick(float(r)), float(r))
        return not nodes[1].overlay.links.by_address, nodes[2].overlay.joining.unanswered

    assert alone_after(0) == (True, {1})
    assert alone_after(10) == (False, set())
