"""Replay protection with a network key: a datagram captured on the wire and
sent again is refused, at any age, and at any other node. Without a key: a
captured event is a duplicate for as long as its cookie can pass."""

from __future__ import annotations

from contextlib import AsyncExitStack

import pytest
import trio
from daemon_swarm import PERIOD, SCHEMA, wait_for

import vinifera
from vinifera.daemon.replay import ReplayWindow
from vinifera.wire import NetworkKey, parse_address

T0 = 1_000.0  # the receiver started at this time (seconds)
MS = 1_000


def capture_sent(sender, receiver, kinds=None) -> list[bytes]:
    """Every datagram `sender` sends `receiver` from now on (of `kinds`, if
    given), as an eavesdropper on the path would see it."""
    captured: list[bytes] = []
    send, target = sender.runner._sendto, parse_address(receiver.address)

    async def capture(data, dest, kind):
        if dest == target and (kinds is None or kind in kinds):
            captured.append(data)
        await send(data, dest, kind)

    sender.runner._sendto = capture
    return captured


def window(**kw) -> ReplayWindow:
    return ReplayWindow(skew=kw.pop("skew", 30.0), started=T0, window=64, **kw)


@pytest.mark.parametrize(
    "steps",
    [
        # (sender, sent in s, seq, now in s, expected)
        [("a", 1001, 10, 1001, None), ("a", 1001, 10, 1001, "replay")],  # at once
        [("a", 1001, 10, 1001, None), ("a", 1001, 10, 1010, "replay")],  # some seconds on
        [("a", 1001, 10, 1001, None), ("a", 1001, 10, 1032, "stale")],  # past the skew
        [("a", 1001, 10, 1001, None), ("a", 1001, 10, 5000, "stale")],  # long past
        [("a", 1001, 12, 1001, None), ("a", 1001, 11, 1001, None), ("a", 1001, 11, 1001, "replay")],
        [("a", 1001, 100, 1001, None), ("a", 1001, 36, 1001, "too_old")],  # out of the window
        [("a", 1001, 100, 1001, None), ("a", 1001, 37, 1001, None)],  # the window's oldest
        [("a", 1001, 10, 1001, None), ("b", 1001, 10, 1001, None)],  # senders apart
        [("a", 1040, 10, 1001, "future")],  # a clock 39 s ahead
        [("a", 999, 10, 1001, "before_start")],  # stamped before we started
        # the sender restarted: its counter jumped far ahead; its old life is refused
        [("a", 1001, 10, 1001, None), ("a", 1005, 5_000_000, 1005, None),
         ("a", 1001, 11, 1005, "too_old")],
    ],
)  # fmt: skip
def test_the_window_refuses_what_it_has_seen_or_is_too_old(steps):
    w = window()
    for sender, sent, seq, now, expected in steps:
        assert w.check(sender, int(sent * MS), seq, now) == expected


def test_a_forgotten_sender_cannot_be_replayed_either():
    w = window(max_senders=2)
    assert w.check("a", 1001 * MS, 1, 1001) is None
    assert w.check("b", 1002 * MS, 1, 1002) is None
    assert w.check("c", 1003 * MS, 1, 1003) is None  # forgets a, newest from a: 1001
    assert w.check("a", 1001 * MS, 1, 1004) == "stale"  # a replay of a's datagram
    assert w.check("a", 1004 * MS, 2, 1004) is None  # a itself, later, is welcome


async def test_a_captured_datagram_is_refused_again_later_and_elsewhere():
    """B publishes an event A wants; every datagram B sends A is captured.
    B stops; from B's own address the captures are sent to A again, at once
    and after the skew, and to C, which never got them: all refused, and A
    delivered the event once."""
    key = NetworkKey(b"the swarm's shared secret")
    skew = 4 * PERIOD
    async with AsyncExitStack() as stack:

        async def node(**kw):
            return await stack.enter_async_context(
                vinifera.Node(SCHEMA, period=PERIOD, network_key=key, replay_skew=skew, **kw)
            )

        a = await node(seed=1, listen="127.0.0.11:0", subscription="a0 in [100, 200]")
        c = await node(seed=3, listen="127.0.0.13:0", bootstrap=[a.address])
        b_stack = AsyncExitStack()
        b = await b_stack.enter_async_context(
            vinifera.Node(SCHEMA, period=PERIOD, network_key=key, replay_skew=skew, seed=2,
                          listen="127.0.0.12:0", bootstrap=[a.address])
        )  # fmt: skip
        await wait_for(lambda: a.runner.node.content.ready and b.address in a.status()["view"],
                       30, "a installed, b known")  # fmt: skip
        captured = capture_sent(b, a)
        await b.publish(a0=150, a1=1)
        await wait_for(lambda: a.status()["counters"].get("delivered") == 1, 10, "the delivery")
        b_address = b.address
        await b_stack.aclose()  # b leaves: its address is free for the replayer
        assert captured
        replays = 0
        with trio.socket.socket(type=trio.socket.SOCK_DGRAM) as sock:
            await sock.bind(parse_address(b_address))
            for target in (a, c):
                for data in captured:
                    await sock.sendto(data, parse_address(target.address))
            replays += len(captured)
            await wait_for(lambda: a.status()["counters"].get("bad_replay", 0) >= replays,
                           10, "the replays at once")  # fmt: skip
            await trio.sleep(skew + PERIOD)  # the captures are now older than the skew
            for data in captured:
                await sock.sendto(data, parse_address(a.address))
            replays += len(captured)
            await wait_for(lambda: a.status()["counters"].get("bad_replay", 0) >= replays,
                           10, "the late replays")  # fmt: skip
        counters = a.status()["counters"]
        assert counters["delivered"] == 1
        assert counters["replay_replay"] + counters.get("replay_too_old", 0) == len(captured)
        assert counters["replay_stale"] == len(captured)
        # at C the captures were addressed to someone else: their tag does not verify
        assert c.status()["counters"]["bad_mac"] == len(captured)


async def test_without_a_key_a_captured_event_is_a_duplicate_while_its_cookie_lasts():
    """Issue 75 item 5: the duplicate memory (30 periods) ended before the
    cookie that let the capture in (up to two cookie epochs), so the event
    was delivered again. B's datagrams to A are captured; B leaves; from
    B's address they are sent again after 30 periods, cookie still valid."""
    period, epoch = 0.1, 10.0
    async with AsyncExitStack() as stack:
        a = await stack.enter_async_context(
            vinifera.Node(SCHEMA, period=period, cookie_epoch=epoch, seed=1,
                          listen="127.0.0.21:0", subscription="a0 in [100, 200]")
        )  # fmt: skip
        assert a.runner.node.content.config.dedupe_memory * period >= 2 * epoch
        b_stack = AsyncExitStack()
        b = await b_stack.enter_async_context(
            vinifera.Node(SCHEMA, period=period, cookie_epoch=epoch, seed=2,
                          listen="127.0.0.22:0", bootstrap=[a.address])
        )  # fmt: skip
        await wait_for(lambda: a.runner.node.content.ready and b.address in a.status()["view"],
                       30, "a installed, b known")  # fmt: skip
        captured = capture_sent(b, a, kinds=("EventMessage", "EventPush"))
        await b.publish(a0=150, a1=1)
        await wait_for(lambda: a.status()["counters"].get("delivered") == 1, 10, "the delivery")
        b_address = b.address
        await b_stack.aclose()
        assert captured
        await trio.sleep(30 * period + 0.5)  # past the old duplicate memory

        def received() -> int:
            return a.status()["protocol_counters"]["events_received"]

        before = received()
        with trio.socket.socket(type=trio.socket.SOCK_DGRAM) as sock:
            await sock.bind(parse_address(b_address))
            for data in captured:
                await sock.sendto(data, parse_address(a.address))
            await wait_for(lambda: received() >= before + len(captured), 10, "the replays")
        assert a.status()["counters"]["delivered"] == 1
