"""Endpoints pumped as bytes (aioquic's transfer() is the model): the same
sans-IO nodes, once handed each other's message objects and once every
message encoded, fragmented to 1,200-byte datagrams, tagged, decoded by the
receiver's own decoder and reassembled. The wire must be invisible to the
protocol: the same seed gives the same links, rows, counters and deliveries."""

from __future__ import annotations

import random

import pytest
from pump import Pump, WirePath

from vinifera.protocol.config import ContentConfig, OverlayConfig
from vinifera.protocol.node import Node
from vinifera.schema import Schema
from vinifera.subscription import Event, Subscription
from vinifera.wire.netkey import NetworkKey

SCHEMA = Schema.numeric(2)


def swarm(n: int, seed: int, wire: WirePath | None) -> Pump:
    rng = random.Random(seed)
    pump = Pump(wire=wire)
    addrs = [f"127.0.0.1:{9000 + i}" for i in range(n)]
    for addr in addrs:
        c = rng.uniform(0, 600)
        sub = Subscription.build(
            SCHEMA, {"a0": (c, c + rng.uniform(100, 400)), "a1": (0.0, rng.uniform(300, 1000))}
        )
        pump.nodes[addr] = Node(
            addr,
            SCHEMA,
            OverlayConfig(friends=3, small_world=3),
            random.Random(rng.getrandbits(32)),
            sub,
            content=ContentConfig(),
        )
    pump.run(pump.nodes[addrs[0]].start(0.0), addrs[0])
    for i, addr in enumerate(addrs[1:], 1):
        pump.run(pump.nodes[addr].start(0.0, [addrs[rng.randrange(i)]]), addr)
    return pump


def drive(pump: Pump, seed: int) -> dict:
    """Rounds of gossip with events published between them: eid -> the
    nodes whose subscription matches it."""
    rng = random.Random(seed)
    addrs = sorted(pump.nodes)
    expected = {}
    for r in range(30):
        pump.rounds(1)
        if r >= 15:
            for _ in range(3):
                event = Event.build(
                    SCHEMA, {"a0": rng.uniform(0, 1000), "a1": rng.uniform(0, 1000)}
                )
                publisher = rng.choice(addrs)
                published = pump.nodes[publisher].publish(pump.now, event)
                pump.run(published.actions, publisher)
                expected[published.eid] = {
                    a for a, n in pump.nodes.items() if n.subscription.matches(event.values)
                }
    return expected


def state(pump: Pump) -> dict:
    return {
        a: (n.snapshot(), n.counters(), n.overlay.next_hops) for a, n in sorted(pump.nodes.items())
    }


@pytest.mark.parametrize("keyed", [False, True])
def test_a_swarm_pumped_as_datagrams_behaves_as_one_handed_objects(keyed):
    key = NetworkKey(b"a network key of thirty-two bytes!") if keyed else None
    wire = WirePath(SCHEMA, max_datagram=1200, key=key)
    by_objects, by_bytes = swarm(16, 5, None), swarm(16, 5, wire)
    expected = drive(by_objects, 6)
    assert drive(by_bytes, 6) == expected
    assert by_bytes.deliveries == by_objects.deliveries
    assert by_bytes.hops == by_objects.hops
    assert state(by_bytes) == state(by_objects)
    # it was a real exchange: every pair delivered once, most kinds, fragments
    pairs = {(a, e) for e, subs in expected.items() for a in subs}
    assert len(pairs) > 50
    assert sorted(set(by_bytes.deliveries)) == sorted(pairs) == sorted(by_bytes.deliveries)
    kinds = set(wire.datagrams)
    assert {"Join", "JoinReply", "Shuffle", "TmanRequest", "Install", "EventMessage"} <= kinds
    assert wire.largest <= 1200
    assert sum(r.counters["reassembled"] for r in wire.reassembly.values()) > 0
