"""Datagrams that cross the internet (issue 75 item 8): a message bigger
than --max-datagram (1,200 B) goes as fragments, each framed and admitted
like any datagram, and is put together again before it is decoded."""

from __future__ import annotations

import random
from contextlib import AsyncExitStack

import pytest
from daemon_swarm import SCHEMA, publish_and_collect, start_swarm, wait_for

from vinifera.daemon.reassembly import Reassembly
from vinifera.protocol import messages as m
from vinifera.protocol.profile import Profile
from vinifera.subscription import Subscription
from vinifera.wire import WIRE_VERSION, Decoder, WireError, body, frame
from vinifera.wire.fragments import KIND_FRAGMENT, Fragment, split_body


def big_tman() -> m.TmanRequest:
    sub = Subscription.build(SCHEMA, {"a0": (10.0, 20.0), "a1": (30.0, 40.0)})
    profiles = tuple(Profile(f"198.51.100.{i}:7000", i << 50, sub) for i in range(1, 25))
    return m.TmanRequest(Profile("192.0.2.1:7000", 1, sub), profiles, (1.0,) * 24, (0, 1))


def test_a_big_body_splits_into_datagrams_that_fit_and_comes_back_whole_in_any_order():
    b = body(big_tman())
    parts = split_body(b, 7, 1200)
    assert len(parts) >= 2 and all(len(frame(p)) <= 1200 for p in parts)
    dec = Decoder(SCHEMA)
    frags = [dec.decode_datagram_untrusted(frame(p)).message for p in parts]
    assert all(type(f) is Fragment and f.kind == b.kind for f in frags)
    r = Reassembly(hold_for=2.0)
    random.Random(1).shuffle(frags)
    results = [r.add("peer", f, 0.0) for f in frags]
    assert results[:-1] == [None] * (len(frags) - 1) and len(r) == 0 and r.held_bytes == 0
    msg = dec.decode_body_untrusted(*results[-1])
    assert type(msg) is m.TmanRequest and msg.profiles == big_tman().profiles
    assert split_body(body(m.Ping(Profile("192.0.2.1:7000", 1, None))), 8, 1200)[0].kind != (
        KIND_FRAGMENT
    )  # what fits goes whole


def test_reassembly_is_bounded_and_forgets():
    frags = [
        Decoder(SCHEMA).decode_datagram_untrusted(frame(p)).message
        for p in split_body(body(big_tman()), 7, 1200)
    ]
    r = Reassembly(hold_for=2.0, max_partial=2)
    assert r.add("a", frags[0], 0.0) is None
    assert r.add("a", frags[0], 0.0) is None and r.counters["fragments_dropped"] == 1  # again
    r.add("b", frags[0], 0.0)
    r.add("c", frags[0], 0.1)  # a third in progress: the oldest ("a") goes
    assert len(r) == 2 and all(r.add("a", f, 0.2) is None for f in frags[1:])
    r.prune(10.0)
    assert len(r) == 0 and r.held_bytes == 0
    mismatched = frags[1]._replace(count=frags[1].count + 1)
    r.add("d", frags[0], 11.0)
    assert r.add("d", mismatched, 11.0) is None and len(r) == 0  # parts that disagree: dropped


@pytest.mark.parametrize(
    "fields, what",
    [
        ((99, 6, 1, 0, 2, b"x"), "unknown kind"),
        ((5, 6, 1, 2, 2, b"x"), "index"),
        ((5, 6, 1, 0, 1, b"x"), "count"),
        ((5, 6, 1, 0, 2, b""), "chunk"),
        ((5, 6, 1, 0, 2, "text"), "chunk"),
    ],
)
def test_a_bad_fragment_is_a_field_error(fields, what):
    import msgpack

    data = msgpack.packb([WIRE_VERSION, KIND_FRAGMENT, [0, 0, 0, 0], *fields], use_bin_type=True)
    with pytest.raises(WireError, match=what) as err:
        Decoder(SCHEMA).decode_datagram_untrusted(data)
    assert err.value.reason == "field"


async def test_a_swarm_sends_nothing_over_its_max_datagram_and_delivers_everything():
    # 600 B: this small swarm's biggest messages are under 1,200 B
    async with AsyncExitStack() as stack:
        swarm = await start_swarm(stack, 12, seed=4, max_datagram=600)
        await wait_for(swarm.ready, 60, "ring and installs")
        _, missing = await publish_and_collect(swarm, swarm.nodes, random.Random(4), 20)
        statuses = [n.status() for n in swarm.nodes]
    assert missing == []
    assert max(max(s["largest_sent"].values()) for s in statuses) <= 600
    assert sum(s["counters"].get("reassembled", 0) for s in statuses) > 0  # it was needed


def test_the_largest_body_splits_even_at_the_smallest_max_datagram():
    from vinifera.wire.fragments import MAX_FRAGMENTS, MIN_DATAGRAM
    from vinifera.wire.frames import HEADER_ROOM, MAX_DATAGRAM, Body

    big = Body(5, 6, b"\x00" * (MAX_DATAGRAM - HEADER_ROOM))
    parts = split_body(big, 1, MIN_DATAGRAM)
    assert 1 < len(parts) <= MAX_FRAGMENTS
    assert all(len(frame(p)) <= MIN_DATAGRAM for p in parts)
