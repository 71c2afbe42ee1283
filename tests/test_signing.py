"""Signed events (issue 75 item 10): a publisher seals its events with an
Ed25519 key; a subscriber that requires seals drops and counts a copy that
is unsigned, altered or sealed by a key it does not trust."""

from __future__ import annotations

import socket

import trio
from daemon_swarm import PERIOD, SCHEMA, wait_for
from wirepeer import prove

import vinifera
from vinifera.daemon.signing import SealPolicy, SigningKey, parse_public_key
from vinifera.protocol import messages as m
from vinifera.protocol.profile import Profile
from vinifera.subscription import Event
from vinifera.wire import Decoder, encode, format_address, parse_address

EVENT = Event.build(SCHEMA, {"a0": 150.0, "a1": 1.0})


def test_a_seal_verifies_and_any_change_breaks_it():
    alice, mallory = SigningKey.generate(), SigningKey.generate()
    sealed = alice.seal(EVENT)
    assert sealed == EVENT and len(sealed.seal) == 96
    anyone, only_alice = SealPolicy(), SealPolicy([alice.public])
    assert anyone.check(sealed) is None and only_alice.check(sealed) is None
    altered = Event.build(SCHEMA, {"a0": 151.0, "a1": 1.0}).sealed(sealed.seal)
    assert anyone.check(altered) == "signature"
    assert anyone.check(EVENT) == "unsigned"
    assert only_alice.check(mallory.seal(EVENT)) == "untrusted"
    assert anyone.check(mallory.seal(EVENT)) is None
    flipped = bytearray(sealed.seal)
    flipped[40] ^= 1
    assert anyone.check(EVENT.sealed(bytes(flipped))) == "signature"
    assert parse_public_key(alice.public.hex()) == alice.public


def test_the_seal_crosses_the_wire_and_an_unsealed_event_costs_nothing_more():
    me = Profile("127.0.0.1:7000", 5, None)
    dec = Decoder(SCHEMA)
    sealed = SigningKey.generate().seal(EVENT)
    for make in (
        lambda e: m.EventMessage(me, 9, e, "a0", 3, 2, True),
        lambda e: m.EventPush(me, 9, e, 2),
    ):
        plain, signed = encode(make(EVENT)), encode(make(sealed))
        assert len(signed) - len(plain) == 96 + 2  # the seal and its bin header
        assert dec.decode_untrusted(signed).event.seal == sealed.seal
        assert dec.decode_untrusted(plain).event.seal is None


async def test_a_subscriber_that_trusts_one_key_refuses_the_rest(tmp_path):
    alice, mallory = SigningKey.generate(), SigningKey.generate()
    async with (
        vinifera.Node(
            SCHEMA,
            period=PERIOD,
            seed=1,
            listen="127.0.0.31:0",
            subscription="a0 in [100, 200]",
            seal_policy=SealPolicy([alice.public]),
        ) as bob,  # fmt: skip
        vinifera.Node(
            SCHEMA,
            period=PERIOD,
            seed=2,
            listen="127.0.0.32:0",
            bootstrap=[bob.address],
            signing_key=alice,
        ) as pub,  # fmt: skip
    ):
        await wait_for(lambda: bob.runner.node.content.ready and pub.address in
                       bob.status()["view"], 30, "bob installed, alice known")  # fmt: skip
        await pub.publish(a0=150, a1=1)
        await wait_for(lambda: bob.status()["counters"].get("delivered") == 1, 10, "delivery")
        assert pub.status()["signing_key"] == alice.fingerprint

        def forge() -> None:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.bind(("127.0.0.33", 0))
                target = parse_address(bob.address)
                header = prove(s, target)
                me = Profile(format_address(*s.getsockname()), 77, None)
                good = alice.seal(EVENT)
                altered = Event.build(SCHEMA, {"a0": 160.0, "a1": 1.0}).sealed(good.seal)
                for eid, event in ((101, altered), (102, EVENT), (103, mallory.seal(EVENT))):
                    s.sendto(encode(m.EventPush(me, eid, event, 1), header=header), target)

        await trio.to_thread.run_sync(forge)

        def refused() -> dict:
            c = bob.status()["counters"]
            return {k: c.get(f"bad_{k}", 0) for k in ("signature", "unsigned", "untrusted")}

        await wait_for(lambda: sum(refused().values()) == 3, 10, "the forgeries")
        assert refused() == {"signature": 1, "unsigned": 1, "untrusted": 1}
        assert bob.status()["counters"]["delivered"] == 1
