"""The content layer of a few dozen pure Node state machines, driven by
hand: synthetic time, instant delivery, no simulator."""

import random

import pytest

from vinifera.protocol.actions import Deliver, Send
from vinifera.protocol.config import BASELINE_CONTENT, ContentConfig, OverlayConfig
from vinifera.protocol.node import Node
from vinifera.schema import Schema
from vinifera.subscription import Event, Subscription

SCHEMA = Schema.numeric(2)


class Net:
    """Nodes plus a FIFO of messages delivered at the current time."""

    def __init__(self, n, content=None, overlay=None, seed=1):
        rng = random.Random(seed)
        self.content = content or ContentConfig(balancing=False)
        self.overlay = overlay or OverlayConfig(friends=3, small_world=3)
        self.nodes = {}
        self.down = set()
        self.deliveries = []  # (node, eid)
        for addr in range(n):
            c = rng.uniform(0, 900)
            sub = Subscription.build(
                SCHEMA, {"a0": (c, c + rng.uniform(10, 100)), "a1": (0.0, rng.uniform(300, 1000))}
            )
            self.nodes[addr] = Node(
                addr,
                SCHEMA,
                self.overlay,
                random.Random(rng.getrandbits(32)),
                sub,
                content=self.content,
            )
        self.now = 0.0
        self.run(self.nodes[0].start(0.0))
        for addr in range(1, n):
            self.run(self.nodes[addr].start(0.0, [rng.randrange(addr)]), addr)

    def run(self, actions, origin=None):
        queue = [(origin, a) for a in actions]
        while queue:
            src, a = queue.pop(0)
            if isinstance(a, Deliver):
                self.deliveries.append((src, a.info["eid"]))
            elif isinstance(a, Send) and a.dest in self.nodes and a.dest not in self.down:
                queue.extend((a.dest, x) for x in self.nodes[a.dest].receive(self.now, a.message))

    def rounds(self, k):
        for _ in range(k):
            self.now += 1.0
            for addr, node in self.nodes.items():
                if addr not in self.down:
                    self.run(node.tick(self.now), addr)

    def publish(self, addr, a0, a1):
        event = Event.build(SCHEMA, {"a0": a0, "a1": a1})
        eid, actions = self.nodes[addr].publish(self.now, event)
        self.run(actions, addr)
        return eid, event

    def expected(self, event):
        return {
            a
            for a, n in self.nodes.items()
            if a not in self.down and n.subscription.matches(event.values)
        }

    def got(self, eid):
        return [a for a, e in self.deliveries if e == eid]


@pytest.fixture(scope="module")
def net():
    net = Net(40)
    net.rounds(25)
    return net


def test_every_subscriber_gets_each_matching_event_exactly_once(net):
    rng = random.Random(7)
    for _ in range(40):
        publisher = rng.randrange(40)
        eid, event = net.publish(publisher, rng.uniform(0, 1000), rng.uniform(0, 1000))
        got = net.got(eid)
        assert sorted(got) == sorted(net.expected(event)), event
        assert len(got) == len(set(got))  # no duplicates


def test_an_event_nobody_wants_is_routed_but_delivered_to_nobody(net):
    for v in range(0, 1000, 3):
        event = Event.build(SCHEMA, {"a0": float(v), "a1": 999.0})
        if not net.expected(event):
            break
    else:
        pytest.skip("every value has a subscriber in this overlay")
    before = sum(n.content.counters["events_received"] for n in net.nodes.values())
    eid, _ = net.publish(3, float(v), 999.0)
    assert net.got(eid) == []
    after = sum(n.content.counters["events_received"] for n in net.nodes.values())
    assert after > before  # it did travel to its rendezvous nodes


def test_subscription_change_takes_effect():
    net = Net(25, seed=3)
    net.rounds(20)
    node = net.nodes[5]
    new = Subscription.build(SCHEMA, {"a0": (500.0, 510.0)})
    net.run(node.subscribe(net.now, new), 5)
    net.rounds(3)
    eid, event = net.publish(9, 505.0, 1.0)
    assert 5 in net.got(eid)
    old_only = next(v for v in range(0, 1000, 7) if not 500 <= v <= 510)
    eid, _ = net.publish(9, float(old_only), 1.0)
    assert 5 not in net.got(eid)


def test_graceful_leave_withdraws_the_subscription_everywhere_at_once():
    net = Net(30, seed=4)
    net.rounds(20)
    holders = [
        a for a, n in net.nodes.items() if any(7 in n.content.crt.owners(at) for at in ("a0", "a1"))
    ]
    assert holders  # node 7's subscription is installed somewhere
    net.run(net.nodes[7].leave(net.now), 7)
    net.down.add(7)
    for a, n in net.nodes.items():
        if a != 7:
            assert 7 not in n.content.crt.owners("a0"), a


def test_a_crashed_subscriber_leaves_every_crt_within_the_expiry():
    net = Net(30, seed=5)
    net.rounds(20)
    net.down.add(11)  # silent from now on
    expiry = net.content.crt_expiry
    net.rounds(int(expiry) + 1)
    for a, n in net.nodes.items():
        if a != 11:
            assert 11 not in n.content.crt.owners("a0"), a
    # and the rest still get their events
    eid, event = net.publish(2, 420.0, 10.0)
    assert sorted(net.got(eid)) == sorted(net.expected(event))


def test_the_baseline_configuration_delivers_too():
    net = Net(30, content=BASELINE_CONTENT, overlay=OverlayConfig(friends=0, small_world=8), seed=6)
    net.rounds(20)
    rng = random.Random(2)
    for _ in range(15):
        eid, event = net.publish(rng.randrange(30), rng.uniform(0, 1000), rng.uniform(0, 1000))
        assert sorted(net.got(eid)) == sorted(net.expected(event))


def test_balancing_moves_identifiers_without_losing_deliveries():
    content = ContentConfig(
        balancing=True, balance_beta=0.0, balance_window=5.0, balance_cooldown=2.0
    )
    net = Net(30, content=content, seed=8)
    net.rounds(15)
    rng = random.Random(4)
    hot = 300.0
    for _ in range(12):
        for _ in range(6):  # a hot spot of events
            eid, event = net.publish(
                rng.randrange(30), hot + rng.uniform(0, 5), rng.uniform(0, 1000)
            )
            assert sorted(net.got(eid)) == sorted(net.expected(event))
        net.rounds(1)
    assert sum(n.content.counters["moves"] for n in net.nodes.values()) > 0
