"""No amplifier: to an address that has not proven it receives there, a node
sends no more bytes than it got from it, on every path that used to
amplify (Join 9.6x, TmanRequest 9.4x, Shuffle 3.3x, and the swarm-wide
follow-on of a Join: 165x). Real daemons, real sockets: the attacker's
socket stands for the forged source address and never answers."""

from __future__ import annotations

import contextlib
from contextlib import AsyncExitStack

import pytest
import trio
from daemon_swarm import PERIOD, start_swarm, wait_for
from wirepeer import HELLO_OFFER, aprove

from vinifera.protocol import messages as m
from vinifera.protocol.profile import Profile
from vinifera.wire import Challenge, Hello, NetworkKey, encode, encode_handshake, parse_address

VICTIM = "127.0.0.99"
REPEAT = 20


def requests(victim: str) -> dict[str, bytes]:
    """The smallest datagram of each kind that used to draw a big reply."""
    me = Profile(victim, 7, None)
    return {
        "join": encode(m.Join(me)),
        "tman": encode(m.TmanRequest(me, (), ())),
        "shuffle": encode(m.Shuffle(me, (me,), (0.0,))),
        "ping": encode(m.Ping(me)),
        "hello": encode_handshake(Hello(HELLO_OFFER)),
        "challenge": encode_handshake(Challenge(HELLO_OFFER)),
    }


async def bytes_back(sock, seconds: float) -> tuple[int, set]:
    """Bytes arriving at `sock` for `seconds`, and from whom."""
    got, senders = 0, set()
    with trio.move_on_after(seconds):
        while True:
            data, src = await sock.recvfrom(70_000)
            got += len(data)
            senders.add(src[:2])
    return got, senders


@pytest.fixture
async def swarm():
    async with AsyncExitStack() as stack:
        s = await start_swarm(stack, 6, seed=4)
        await wait_for(s.ready, 60, "ring and installs")
        yield s


async def test_no_path_sends_an_unproven_address_more_than_it_sent(swarm):
    target = parse_address(swarm.nodes[2].address)
    report = {}

    async def attack(path: str, sock) -> None:
        victim = f"{VICTIM}:{sock.getsockname()[1]}"
        data = requests(victim)[path]
        for _ in range(REPEAT):
            await sock.sendto(data, target)
        # long enough for any follow-on: gossip about a joiner spreads in a few periods
        got, senders = await bytes_back(sock, 6 * PERIOD)
        report[path] = (REPEAT * len(data), got, senders)

    with contextlib.ExitStack() as stack:
        socks = {}
        for path in requests(VICTIM):  # one victim address per path, all at once
            sock = stack.enter_context(trio.socket.socket(type=trio.socket.SOCK_DGRAM))
            await sock.bind((VICTIM, 0))
            socks[path] = sock
        async with trio.open_nursery() as nursery:
            for path, sock in socks.items():
                nursery.start_soon(attack, path, sock)
    for path, (sent, got, senders) in report.items():
        assert got <= sent, (path, sent, got)
        assert senders <= {target}, (path, senders)  # no one else heard of the victim
    # the handshake is the one answer, and a forged Challenge gets none
    assert report["hello"][1] == report["hello"][0]
    assert report["challenge"][1] == 0
    for path in ("join", "tman", "shuffle", "ping"):
        assert 0 < report[path][1] <= report[path][0], report
    statuses = [n.status() for n in swarm.nodes]
    assert not any(a.startswith(VICTIM) for s in statuses for a in s["view"])
    assert sum(s["counters"].get("unproven", 0) for s in statuses) >= 4 * REPEAT


async def test_once_proven_the_same_requests_get_their_full_answers(swarm):
    """The other side of the coin: a real peer, once proven, is served."""
    target = parse_address(swarm.nodes[2].address)
    with trio.socket.socket(type=trio.socket.SOCK_DGRAM) as sock:
        await sock.bind((VICTIM, 0))
        me = Profile(f"{VICTIM}:{sock.getsockname()[1]}", 7, None)
        header = await aprove(sock, target)
        await sock.sendto(encode(m.Join(me), header=header), target)
        with trio.fail_after(10):
            while True:
                data, _ = await sock.recvfrom(70_000)
                if len(data) > 100:  # the JoinReply, with the node's T-Man buffer
                    break


async def test_a_keyed_swarm_answers_strangers_nothing():
    key = NetworkKey(b"the swarm's shared secret")
    async with AsyncExitStack() as stack:
        s = await start_swarm(stack, 3, seed=5, network_key=key)
        await wait_for(s.ready, 60, "ring and installs")
        target = parse_address(s.nodes[1].address)
        with trio.socket.socket(type=trio.socket.SOCK_DGRAM) as sock:
            await sock.bind((VICTIM, 0))
            for data in requests(f"{VICTIM}:{sock.getsockname()[1]}").values():
                await sock.sendto(data, target)
            got, _ = await bytes_back(sock, 4 * PERIOD)
        assert got == 0
        assert s.nodes[1].status()["counters"]["bad_mac"] == 6
