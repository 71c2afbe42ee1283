"""Candidates.stash_wire against its definition: stash of the entries
as received (from_wire_entries), whatever the messages, sources, caps and
departures in between."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from vinifera.protocol.candidates import MAX_INBOX, Candidates
from vinifera.protocol.config import Durations
from vinifera.protocol.profile import Profile, from_wire_entries
from vinifera.protocol.vetting import Vetting

DURATIONS = Durations(
    probe_after=3.0,
    stale_after=10.0,
    transit=0.5,
    departed_memory=20.0,
    verify_memory=30.0,
    answer_within=2.0,
    silent_memory=30.0,
    young_for=5.0,
)


def state(c: Candidates, hosts: range) -> tuple:
    inbox = [(a, e.profile, e.heard) for a, e in c.inbox.items()]
    return inbox, len(c.caps), [c.caps.room(h) for h in hosts]


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    cap=st.sampled_from([0, 1, 3, 8, 24]),
    addresses=st.sampled_from([5, 40, 200]),
    messages=st.integers(1, 12),
)
def test_stash_wire_is_stash_of_the_entries_as_received(seed, cap, addresses, messages):
    rng = random.Random(seed)
    hosts = range(6)
    made = [Candidates(DURATIONS, cap, Vetting(30.0, 2.0, 30.0)) for _ in range(2)]
    wire, plain = made
    for c in made:  # some addresses were silent already
        c.vetting.silent[addresses + 1] = 100.0
    now = 10.0
    for _ in range(messages):
        now += rng.random()
        source = rng.choice(hosts)
        size = rng.randrange(0, 2 * MAX_INBOX)
        # repeated addresses (in one message too) and the silent one
        profiles = tuple(
            Profile(rng.randrange(addresses + 2), rng.getrandbits(64), None) for _ in range(size)
        )
        ages = tuple(rng.choice([0.0, 1.0, 2.5, rng.random() * 5]) for _ in range(size))
        wire.stash_wire(now, profiles, ages, source)
        plain.stash(from_wire_entries(profiles, ages, now, DURATIONS.transit), source)
        assert state(wire, hosts) == state(plain, hosts)
        what = rng.random()  # between messages: a departure, a forgotten one, a reselection
        gone = rng.randrange(addresses)
        for c in made:
            if what < 0.2:
                c.left(now, gone)
            elif what < 0.3:
                c.forget(gone)
            elif what < 0.4:
                c.clear_inbox()
    assert len(wire.inbox) <= 2 * MAX_INBOX
