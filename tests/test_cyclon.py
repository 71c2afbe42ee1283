"""Cyclon as a pure state machine: synthetic time, seeded rng."""

import random

from vinifera.protocol.cyclon import Cyclon
from vinifera.protocol.profile import Entry, Profile


def entry(addr, heard, ident=None):
    return Entry(Profile(addr, ident if ident is not None else addr * 1000, None), heard)


def make(view=(), size=5, length=3, seed=1, me=0):
    c = Cyclon(me, size, length, random.Random(seed))
    for e in view:
        c.view[e.profile.address] = e
    return c


def test_shuffle_targets_the_oldest_and_removes_it():
    c = make([entry(1, 5.0), entry(2, 1.0), entry(3, 3.0)])
    target, sent = c.start_shuffle()
    assert target == 2
    assert 2 not in c.view
    assert len(sent) == 2 and all(e.profile.address in (1, 3) for e in sent)
    assert c.pending[2] == [e.profile.address for e in sent]


def test_empty_view_starts_no_shuffle():
    assert make().start_shuffle() is None


def test_reply_replaces_what_was_sent_when_full():
    c = make([entry(i, float(i)) for i in range(1, 6)], size=5, length=3)
    target, sent = c.start_shuffle()  # removes node 1, the oldest
    assert len(c.view) == 4
    received = [entry(10, 9.0), entry(11, 9.0), entry(12, 9.0)]
    c.finish_shuffle(target, received)
    # one free slot, then two entries replace two of the ones sent
    assert len(c.view) == 5
    assert {10, 11, 12} <= set(c.view)
    assert sum(e.profile.address in c.view for e in sent) == 0


def test_merge_skips_self_and_keeps_fresher_duplicate():
    c = make([entry(1, 1.0)], me=0)
    c.merge([entry(0, 9.0), entry(1, 7.0)], [])
    assert 0 not in c.view
    assert c.view[1].heard == 7.0
    c.merge([entry(1, 2.0)], [])
    assert c.view[1].heard == 7.0


def test_merge_drops_when_full_and_nothing_replaceable():
    c = make([entry(i, 1.0) for i in range(1, 6)], size=5)
    c.merge([entry(99, 5.0)], [])
    assert 99 not in c.view and len(c.view) == 5


def test_answer_excludes_the_sender_and_merges():
    c = make([entry(i, 1.0) for i in range(1, 6)], size=5, length=3)
    reply = c.answer_shuffle(3, [entry(20, 4.0), entry(21, 4.0)])
    assert all(e.profile.address != 3 for e in reply)
    assert {20, 21} <= set(c.view)
    assert len(c.view) == 5


def test_insert_makes_room_for_a_newcomer():
    c = make([entry(i, 1.0) for i in range(1, 6)], size=5)
    c.insert(entry(42, 2.0))
    assert 42 in c.view and len(c.view) == 5


def test_same_seed_same_choices():
    a = make([entry(i, float(i % 3)) for i in range(1, 6)], seed=7)
    b = make([entry(i, float(i % 3)) for i in range(1, 6)], seed=7)
    ta, sa = a.start_shuffle()
    tb, sb = b.start_shuffle()
    assert ta == tb and [e.profile.address for e in sa] == [e.profile.address for e in sb]


def test_a_dead_node_disappears_after_enough_shuffles():
    # Node 1 never answers: once it is the oldest it is removed for good.
    c = make([entry(1, 0.0)] + [entry(i, 5.0) for i in range(2, 6)])
    target, _ = c.start_shuffle()
    assert target == 1
    assert 1 not in c.view
