"""The gate between socket and protocol, driven by hand (time is an argument)."""

from __future__ import annotations

from vinifera.daemon.gate import Gate
from vinifera.protocol import messages as m
from vinifera.protocol.profile import Profile
from vinifera.schema import Schema
from vinifera.wire import Challenge, Decoder, Framed, Hello, NetworkKey, body, encode_handshake

SCHEMA = Schema.numeric(1)
A, B = "127.0.0.1:7000", "127.0.0.2:7000"
KEY = NetworkKey(b"the swarm's shared secret")


def gate(key=None, started=1000.0) -> Gate:
    return Gate(key, started, replay_skew=30.0, cookie_epoch=120.0, hold_for=2.0)


def test_keyed_datagrams_carry_a_growing_counter_and_pass_once():
    a, b = gate(KEY), gate(KEY)
    ping = body(m.Ping(Profile(A, 1, None)))
    d1, d2 = a.outbound(B, [ping, ping], 1001.0)
    decoder = Decoder(SCHEMA, KEY, local=B)
    f1, f2 = decoder.decode_datagram_untrusted(d1), decoder.decode_datagram_untrusted(d2)
    assert f2.header.seq == f1.header.seq + 1 and f1.header.sent == 1_001_000
    assert b.inbound(f1, A, len(d1), 1001.0).passes
    assert b.inbound(f2, A, len(d2), 1001.0).passes
    again = b.inbound(f1, A, len(d1), 1002.0)
    assert not again.passes and again.bad == "replay" and again.detail == "replay"
    hello = b.inbound(Hello(5), A, 12, 1002.0)
    assert not hello.passes and hello.bad == "kind" and hello.replies == []


def test_keyless_first_contact_goes_hello_challenge_then_passes():
    a, b = gate(), gate()
    ping = body(m.Ping(Profile(A, 1, None)))
    (hello,) = a.outbound(B, [ping], 0.0)  # held; a Hello goes instead
    decoder = Decoder(SCHEMA)
    v = b.inbound(decoder.decode_datagram_untrusted(hello), A, len(hello), 0.0)
    assert not v.passes and len(v.replies) == 1 and len(v.replies[0]) <= len(hello)
    challenge = decoder.decode_datagram_untrusted(v.replies[0])
    assert type(challenge) is Challenge
    (held,) = a.inbound(challenge, B, len(v.replies[0]), 0.1).replies  # the held Ping, framed
    framed = decoder.decode_datagram_untrusted(held)
    assert type(framed) is Framed and type(framed.message) is m.Ping
    assert b.inbound(framed, A, len(held), 0.1).passes
    # the same datagram from anywhere else is unproven: one Challenge back, no larger
    forged = b.inbound(framed, "127.0.0.9:1", len(held), 0.2)
    assert not forged.passes and all(len(r) <= len(held) for r in forged.replies)
    assert b.status()["unproven"] == 1


def test_a_challenge_never_outweighs_what_it_answers():
    g = gate()
    v = g.inbound(Hello(5), A, 4, 0.0)  # a Hello of 4 bytes (a cookie of 5)
    assert v.replies == [] and g.status()["challenges_withheld"] == 1
    assert len(encode_handshake(Challenge(g.cookies.offer(A, 0.0)))) == 12
