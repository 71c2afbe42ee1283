"""selection_stands: a reselection may be skipped only where select_links
would choose the same links again."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vinifera import native
from vinifera.protocol import overlay
from vinifera.protocol.config import OverlayConfig
from vinifera.protocol.profile import Entry, Profile
from vinifera.protocol.selection import select_links, selection_stands
from vinifera.protocol.tman import RingIndex, SmallWorldAims
from vinifera.ring import RING_SIZE
from vinifera.schema import Schema
from vinifera.sim.config import SimConfig
from vinifera.sim.driver import Simulation
from vinifera.subscription import Subscription

SCHEMA = Schema.numeric(1)
CFG = OverlayConfig(friends=3, small_world=3)


def profile(rng: random.Random, addr: int) -> Profile:
    lo = rng.randrange(0, 900)
    sub = Subscription.build(SCHEMA, {"a0": (lo, lo + rng.randrange(1, 100))})
    return Profile(addr, rng.randrange(RING_SIZE), sub)


def choose(me, pool: dict, sample, fractions, held=(), aims=None):
    cands = list(pool.values())
    ring = RingIndex(cands)
    return select_links(me, cands, ring, CFG, "a0", sample, fractions, held, None, aims)


def stands(me, pool: dict, sample, fractions, links, reference, aims=None):
    ring = RingIndex(list(pool.values()))
    return selection_stands(me, pool, ring, CFG, "a0", sample, fractions, links, reference, aims)


def addresses(entries):
    return [e.profile.address for e in entries]


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    n_sample=st.sampled_from([0, 40, 130]),
    n_dropped=st.integers(0, 3),
    n_added=st.integers(0, 6),
    n_changed=st.integers(0, 2),
    aim_octaves=st.sampled_from([0, 2]),
    resampled=st.integers(0, 20),
)
def test_links_stand_only_where_select_links_would_choose_them_again(
    seed, n_sample, n_dropped, n_added, n_changed, aim_octaves, resampled
):
    """Also with small-world slots that keep their points (SmallWorldAims,
    shared by both calls as in the overlay) while part of the identifier
    sample is drawn anew."""
    rng = random.Random(seed)
    me = profile(rng, 0)
    population = {a: profile(rng, a) for a in range(1, 80)}
    sample = sorted(rng.randrange(RING_SIZE) for _ in range(n_sample))
    fractions = [rng.random() for _ in range(CFG.small_world + CFG.friends)]
    first = {a: Entry(population[a], 0.0) for a in rng.sample(sorted(population), 30)}
    aims = SmallWorldAims(aim_octaves)
    links, _ = choose(me, first, sample, fractions, (), aims)
    # the links as they stand: chosen again while holding the first choice
    links, _ = choose(me, first, sample, fractions, links.small_world, aims)

    # unchanged candidates: the links stand
    fresh = {a: Entry(e.profile, 1.0) for a, e in first.items()}
    backups = stands(me, fresh, sample, fractions, links, first, aims)
    assert backups is not None
    again, again_backups = choose(me, fresh, sample, fractions, links.small_world, aims)
    assert again.shape() == links.shape()
    assert addresses(backups) == addresses(again_backups)

    # a later pool: some gone, some new, some with a new profile; part of
    # the sample replaced
    later = dict(fresh)
    for a in rng.sample(sorted(later), n_dropped):
        del later[a]
    outside = sorted(set(population) - set(first))
    for a in rng.sample(outside, n_added):
        later[a] = Entry(population[a], 1.0)
    for a in rng.sample(sorted(later), n_changed):
        later[a] = Entry(profile(rng, a), 1.0)
    if sample:
        kept = sample[: max(0, len(sample) - resampled)]
        sample = sorted(kept + [rng.randrange(RING_SIZE) for _ in range(len(sample) - len(kept))])
    backups = stands(me, later, sample, fractions, links, first, aims)
    again, again_backups = choose(me, later, sample, fractions, links.small_world, aims)
    if backups is not None:
        assert again.shape() == links.shape()
        assert addresses(backups) == addresses(again_backups)
        assert all(later[a] is e for a, e in again.by_address.items())


def test_a_closer_newcomer_or_a_better_friend_upsets_the_links():
    rng = random.Random(7)
    me = profile(rng, 0)
    pool = {a: Entry(profile(rng, a), 0.0) for a in range(1, 30)}
    links, _ = choose(me, pool, [], [0.5] * 6)
    succ = pool[links.succ].profile
    between = (me.ident + ((succ.ident - me.ident) % RING_SIZE) // 2) % RING_SIZE
    closer = dict(pool)
    closer[100] = Entry(Profile(100, between, None), 1.0)
    assert stands(me, closer, [], [0.5] * 6, links, pool) is None
    twin = dict(pool)
    twin[101] = Entry(Profile(101, rng.randrange(RING_SIZE), me.subscription), 1.0)
    assert stands(me, twin, [], [0.5] * 6, links, pool) is None


def run_log(tmp_path, name, monkeypatch, skip: bool) -> tuple[bytes, int]:
    stood = 0
    links_stand = overlay.Overlay._links_stand

    def counted(self, pool, reference):
        nonlocal stood
        result = skip and links_stand(self, pool, reference)
        stood += result
        return result

    monkeypatch.setattr(overlay.Overlay, "_links_stand", counted)
    cfg = SimConfig(nodes=80, rounds=24, seed=3, events_per_round=4.0)
    Simulation(cfg, log_dir=tmp_path / name).run()
    monkeypatch.undo()
    return (tmp_path / name / "sim.jsonl").read_bytes(), stood


@pytest.mark.skipif(native.in_use(), reason="a compiled class cannot be patched")
def test_skipping_reselections_leaves_the_simulation_log_byte_identical(tmp_path, monkeypatch):
    skipped, stood = run_log(tmp_path, "skip", monkeypatch, skip=True)
    always, _ = run_log(tmp_path, "always", monkeypatch, skip=False)
    assert stood > 80 * 5  # most reselections of a calm overlay are skipped
    assert b'"links"' in always
    assert skipped == always
