"""The daemon's outbox against a real socket whose peer does not read: a
Unix datagram socket's receiver queue fills, the sender gets EAGAIN (UDP
on loopback drops at the receiver instead, so it never pushes back)."""

import socket
from collections import Counter

import pytest
import trio

from vinifera.daemon.outbox import Outbox


@pytest.fixture
def pair(tmp_path):
    path = str(tmp_path / "peer.sock")
    peer = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    peer.bind(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.setblocking(False)
    peer.setblocking(False)
    yield sock, peer, path
    sock.close()
    peer.close()


def _read_all(peer) -> list[bytes]:
    got = []
    while True:
        try:
            got.append(peer.recv(4096))
        except BlockingIOError:
            return got


def _fill(outbox, path, tag: bytes, n: int, kind: str) -> None:
    for i in range(n):
        outbox.send(tag + b"%04d" % i, path, kind)


async def test_a_full_socket_queues_by_priority_and_drops_pushes_first(pair):
    sock, peer, path = pair
    counters: Counter = Counter()
    sent: Counter = Counter()
    outbox = Outbox(sock, lambda kind, size: sent.update([kind]), counters, capacity=40)
    # until the peer's queue is full every datagram goes at once
    while not len(outbox):
        outbox.send(b"filler", path, "Ping")
    direct = sent["Ping"]
    assert direct > 0 and len(outbox) == 1  # the first one the socket refused waits
    _fill(outbox, path, b"P", 20, "EventPush")
    _fill(outbox, path, b"T", 15, "EventMessage")
    _fill(outbox, path, b"C", 10, "Shuffle")  # 46 wanted in, room for 40: 6 pushes go
    assert len(outbox) == 40
    assert counters["outbox_dropped_push"] == 6 and not counters["outbox_dropped_tree"]
    _fill(outbox, path, b"c", 20, "Ping")  # control pushes out the other 14 pushes, then trees
    assert counters["outbox_dropped_push"] == 20 and counters["outbox_dropped_tree"] == 6
    _fill(outbox, path, b"x", 3, "EventMessage")  # no push left: the newcomers are dropped
    assert counters["outbox_dropped_tree"] == 9 and not counters["outbox_dropped_control"]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(outbox.serve)
        got: list[bytes] = []
        with trio.fail_after(5):
            while len(got) < direct + 40:
                got += _read_all(peer)
                await trio.sleep(0.001)
        nursery.cancel_scope.cancel()
    queued = [d[:1] for d in got[direct:]]
    # control first (in the order sent), then the trees that were kept
    assert queued == [b"f"] + [b"C"] * 10 + [b"c"] * 20 + [b"T"] * 9
    assert [d for d in got[direct:] if d[:1] == b"T"] == [b"T%04d" % i for i in range(9)]
    assert len(outbox) == 0 and sent["EventMessage"] == 9 and not sent["EventPush"]


async def test_with_room_a_datagram_goes_at_once_and_leaving_drains_the_rest(pair):
    sock, peer, path = pair
    counters: Counter = Counter()
    outbox = Outbox(sock, lambda kind, size: None, counters)
    outbox.send(b"now", path, "EventPush")
    assert len(outbox) == 0 and peer.recv(100) == b"now"
    while not len(outbox):
        outbox.send(b"filler", path, "Ping")
    _fill(outbox, path, b"L", 5, "Leave")
    async with trio.open_nursery() as nursery:

        async def reader():
            while True:
                _read_all(peer)
                await trio.sleep(0.001)

        nursery.start_soon(reader)
        with trio.fail_after(5):
            await outbox.drain()
        nursery.cancel_scope.cancel()
    assert len(outbox) == 0 and counters["outbox_queued"] == 6 and not counters["send_errors"]
