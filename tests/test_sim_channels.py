"""The channels between a parallel simulation's workers (sim/channels.py),
with real socket pairs and forked processes."""

from __future__ import annotations

import multiprocessing
import os
import signal

import pytest

from vinifera.sim.channels import Peers, socket_pairs

CTX = multiprocessing.get_context("fork")
BIG = 4 << 20  # far more than a socket's buffer
CHILDREN: list = []


@pytest.fixture(autouse=True)
def deadline():
    """A deadlock fails the test instead of hanging the suite."""

    def expire(*_):
        raise TimeoutError("the workers blocked each other")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)
    while CHILDREN:  # none left blocked behind a failed test
        CHILDREN.pop().kill()


def _start(target, ends, *args):
    """Run target(peers of worker 1, *args) in a child; the parent keeps
    worker 0's end only, as run_parallel does."""
    proc = CTX.Process(target=_child, args=(target, ends, *args), daemon=True)
    proc.start()
    CHILDREN.append(proc)
    ends[(1, 0)].close()
    return proc, Peers({1: ends[(0, 1)]})


def _child(target, ends, *args):
    ends[(0, 1)].close()
    target(Peers({0: ends[(1, 0)]}), *args)
    os._exit(0)


def _send_big_then_read(peers: Peers, expected: bytes) -> None:
    peers.put(0, "entries", [b"w1" * (BIG // 2)])
    if peers.get(0) != [expected]:
        os._exit(3)
    peers.finish()


def test_two_workers_that_both_send_ahead_of_reading_do_not_block_each_other():
    ends = socket_pairs(2)
    proc, peers = _start(_send_big_then_read, ends, b"w0" * (BIG // 2))
    peers.put(1, "entries", [b"w0" * (BIG // 2)])  # before reading anything
    assert peers.get(1) == [b"w1" * (BIG // 2)]
    peers.finish()
    proc.join(timeout=60)
    assert proc.exitcode == 0


def _echo_windows(peers: Peers, count: int) -> None:
    for _ in range(count):
        peers.send_window([[tuple(x + 1 for x in e) for e in peers.get(0)]])
    peers.finish()


def test_windows_arrive_whole_and_in_order_and_idle_work_runs_while_waiting():
    ends = socket_pairs(2)
    proc, peers = _start(_echo_windows, ends, 50)
    idle_calls = []

    def idle() -> bool:
        idle_calls.append(1)
        return len(idle_calls) < 3  # some work, then nothing left

    peers.idle = idle
    for k in range(50):
        outbox = [[], [(k, i) for i in range(k)]]
        peers.send_window(outbox)
        assert outbox == [[], []]  # sent entries leave the outbox
        assert peers.receive_window() == [(k + 1, i + 1) for i in range(k)]
    proc.join(timeout=60)
    assert proc.exitcode == 0
    assert idle_calls


def _fail(peers: Peers) -> None:
    peers.fail("Traceback: something broke")


def _vanish(peers: Peers) -> None:
    os._exit(9)  # as if killed: no word


@pytest.mark.parametrize(("target", "message"), [
    (_fail, "worker 1 failed:\nTraceback: something broke"),
    (_vanish, "worker 1 ended without a word"),
])  # fmt: skip
def test_a_worker_that_stops_is_reported_not_waited_for(target, message):
    ends = socket_pairs(2)
    proc, peers = _start(target, ends)
    with pytest.raises(RuntimeError) as raised:
        peers.get(1)
    assert str(raised.value) == message
    proc.join(timeout=60)


def test_entries_frames_share_one_memo_until_both_ends_clear_it():
    """An object sent again in a later frame arrives as the object the
    first frame made (no reducer runs again), frames pickled alone do not
    touch the memo, and after MEMO_FRAMES frames both ends start afresh
    (what the memo held may go)."""
    from vinifera.sim import channels

    enc, dec = channels._Encoder(), channels._Decoder()
    shared = ("a node's profile", 12345, 7)
    first = dec.decode(enc.encode(("entries", [shared])))[1][0]
    assert first == shared
    again = dec.decode(enc.encode(("entries", [shared, shared])))[1]
    assert again[0] is first and again[1] is first
    alone = dec.decode(enc.encode(("round", [shared]), memo=False))[1][0]
    assert alone == shared and alone is not first
    assert dec.decode(enc.encode(("entries", [shared])))[1][0] is first
    while enc.frames % channels.MEMO_FRAMES:
        assert dec.decode(enc.encode(("entries", [])))[1] == []
    fresh = dec.decode(enc.encode(("entries", [shared])))[1][0]
    assert fresh == shared and fresh is not first


def test_a_frame_continuing_a_memo_never_started_is_refused():
    from vinifera.sim import channels

    enc = channels._Encoder()
    enc.encode(("entries", []))  # the frame that starts the memo: lost
    with pytest.raises(ValueError, match="continues a memo"):
        channels._Decoder().decode(enc.encode(("entries", [])))


def _windows_and_reports(peers: Peers) -> None:
    for k in range(3):
        peers.put(0, "entries", [k])
        peers.put(0, "round", f"report {k}")
    peers.finish()


def test_messages_are_taken_by_tag_each_in_order_and_after_the_sender_has_gone():
    """Round reports may be taken after later windows' entries; what a
    worker sent before it exited can still be asked for, and only what it
    never sent is reported missing."""
    ends = socket_pairs(2)
    proc, peers = _start(_windows_and_reports, ends)
    proc.join(timeout=60)
    assert [peers.get(1) for _ in range(3)] == [[0], [1], [2]]
    assert peers.has(1, "round")
    assert [peers.get(1, "round") for _ in range(3)] == ["report 0", "report 1", "report 2"]
    assert not peers.has(1, "round")
    with pytest.raises(RuntimeError, match="ended without a word"):
        peers.get(1)
