"""T-Man selection rules as pure functions, table-driven."""

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vinifera.protocol.profile import Entry, Profile
from vinifera.protocol.tman import (
    RANK_SAMPLE_SIZE,
    FriendScores,
    PrimaryAttribute,
    RingIndex,
    SmallWorldAims,
    aimed_rank_targets,
    clockwise_rank,
    draw_small_world_fractions,
    friend_score,
    friend_utility,
    in_target_octave,
    overlap_counts,
    rank_targets_sorted,
    ring_neighbourhood,
    select_friends,
    select_small_world,
    small_world_targets,
)
from vinifera.ring import RING_SIZE, ring_distance
from vinifera.schema import Schema
from vinifera.subscription import Subscription

SCHEMA = Schema.numeric(2)


def sub(a0=None, a1=None):
    cons = {}
    if a0 is not None:
        cons["a0"] = a0
    if a1 is not None:
        cons["a1"] = a1
    return Subscription.build(SCHEMA, cons)


def e(addr, ident, subscription=None):
    return Entry(Profile(addr, ident, subscription), 0.0)


@pytest.mark.parametrize(
    "me, idents, succ, pred",
    [
        (100, [50, 150, 300], 150, 50),
        (100, [150, 300], 150, 300),  # pred wraps to the largest
        (RING_SIZE - 10, [5, 20, RING_SIZE - 50], 5, RING_SIZE - 50),  # succ wraps past zero
        (100, [100, 200], 200, 200),  # own identifier is never a ring link
        (100, [], None, None),
    ],
)
def test_ring_neighbourhood_picks_the_ring_links(me, idents, succ, pred):
    succs, preds = ring_neighbourhood(me, [e(i, i) for i in idents], 1)
    assert (succs[0].profile.ident if succs else None) == succ
    assert (preds[0].profile.ident if preds else None) == pred


def test_friends_are_the_highest_utility_overlaps():
    mine = sub(a0=(100.0, 200.0))
    cands = [
        e(1, 10, sub(a0=(100.0, 200.0))),  # utility 1
        e(2, 20, sub(a0=(150.0, 250.0))),  # 1/3
        e(3, 30, sub(a0=(500.0, 600.0))),  # disjoint: never a friend
        e(4, 40, sub(a0=(120.0, 180.0))),  # 0.6
        e(5, 50, None),
    ]
    chosen = select_friends(0, mine, "a0", cands, 2, taken=set())
    assert [c.profile.address for c in chosen] == [1, 4]
    chosen = select_friends(0, mine, "a0", cands, 8, taken={1})
    assert [c.profile.address for c in chosen] == [4, 2]


def test_friend_ties_break_by_identifier_distance():
    mine = sub(a0=(100.0, 200.0))
    same = sub(a0=(100.0, 200.0))
    cands = [e(1, 900, same), e(2, 90, same), e(3, 5000, same)]
    chosen = select_friends(100, mine, "a0", cands, 2, taken=set())
    assert [c.profile.address for c in chosen] == [2, 1]


def test_friend_scores_kept_between_calls_give_the_same_choice():
    """Scores are kept per address while the profile object is the same:
    a candidate whose profile changed, or a change of our identifier,
    subscription or primary attribute, must not be answered from the memo."""
    rng = random.Random(3)
    memo = FriendScores()

    def rand_sub():
        if rng.random() < 0.1:
            return None
        lo, lo1 = rng.uniform(0, 900), rng.uniform(0, 900)
        return sub(a0=(lo, lo + rng.uniform(10, 100)), a1=(lo1, lo1 + 50.0))

    cands = [e(a, rng.randrange(RING_SIZE), rand_sub()) for a in range(30)]
    mine, me, primary = rand_sub() or sub(a0=(100.0, 200.0)), 12345, "a0"
    for step in range(200):
        roll = rng.random()
        if roll < 0.5:  # a candidate changes profile (moved, or resubscribed)
            i = rng.randrange(len(cands))
            old = cands[i].profile
            cands[i] = e(old.address, rng.randrange(RING_SIZE), rand_sub())
        elif roll < 0.6:
            mine = rand_sub() or mine
        elif roll < 0.7:
            me = rng.randrange(RING_SIZE)
        elif roll < 0.8:
            primary = "a1" if primary == "a0" else "a0"
        rng.shuffle(cands)
        taken = {rng.randrange(40)}
        want = select_friends(me, mine, primary, cands, 4, taken)
        assert select_friends(me, mine, primary, cands, 4, taken, memo) == want, step


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 7),  # a few identifiers, so distances tie
            st.sampled_from([None, (100.0, 200.0), (150.0, 160.0), (0.0, 1000.0), (500.0, 600.0)]),
        ),
        max_size=25,
    ),
    st.integers(0, 6),
    st.integers(0, 7),
)
def test_friends_are_the_k_best_scores_in_list_order_on_ties(spec, k, me):
    """select_friends against its definition: the candidates of utility > 0
    sorted by (-utility, ring distance, identifier), ties in list order,
    the first k."""
    mine = sub(a0=(120.0, 180.0))
    cands = [e(a, ident, sub(a0=r) if r else None) for a, (ident, r) in enumerate(spec)]
    keyed = []
    for i, c in enumerate(cands):
        u = friend_utility(mine, c.profile.subscription, "a0") if c.profile.subscription else 0
        if u > 0:
            keyed.append(((-u, ring_distance(me, c.profile.ident), c.profile.ident), i))
    want = [cands[i] for _, i in sorted(keyed)[:k]]
    assert select_friends(me, mine, "a0", cands, k, taken=set()) == want


def test_friend_utility_uses_primary_and_full_domain_when_unconstrained():
    mine = sub(a0=(0.0, 100.0), a1=(0.0, 100.0))
    other = sub(a1=(0.0, 100.0))
    assert friend_utility(mine, other, "a1") == pytest.approx(1.0)
    # other does not constrain a0: its range there is the whole domain [0, 1000]
    assert friend_utility(mine, other, "a0") == pytest.approx(0.1, rel=1e-6)
    assert friend_utility(None, other, "a0") == 0.0


def test_overlap_counts_only_constrained_attributes():
    mine = sub(a0=(0.0, 100.0))
    cands = [
        e(1, 1, sub(a0=(50.0, 60.0))),
        e(2, 2, sub(a0=(500.0, 600.0))),
        e(3, 3, sub(a1=(1.0, 2.0))),
    ]
    assert overlap_counts(mine, cands) == {"a0": 2}  # node 3 is unconstrained on a0


def test_small_world_targets_are_log_uniform_between_the_gap_and_the_ring():
    fractions = draw_small_world_fractions(20000, random.Random(3))
    me, gap = 12345, 2**44
    targets = small_world_targets(me, gap, fractions)
    logs = [math.log2((t - me) % RING_SIZE) for t in targets]
    assert min(logs) >= 44 - 1e-9 and max(logs) < 64
    # log-uniform over [44, 64): each quarter of the exponent range gets ~1/4
    quarters = [sum(44 + 5 * q <= x < 44 + 5 * (q + 1) for x in logs) / len(logs) for q in range(4)]
    assert all(0.23 < q < 0.27 for q in quarters), quarters


def test_small_world_picks_closest_to_each_target_without_reuse():
    cands = [e(1, 1000), e(2, 2000), e(3, 10_000)]
    chosen = select_small_world([1100, 1200, 9000], cands, taken=set())
    assert [c.profile.address for c in chosen] == [1, 2, 3]
    chosen = select_small_world([1100], cands, taken={1})
    assert [c.profile.address for c in chosen] == [2]


def test_primary_attribute_switches_only_after_patience():
    p = PrimaryAttribute(margin=1.25, patience=3)
    p.reset(sub(a0=(0.0, 1.0), a1=(0.0, 1.0)))
    assert p.current == "a0"
    assert not p.update({"a0": 10, "a1": 12})  # within the margin
    assert not p.update({"a0": 10, "a1": 20})
    assert not p.update({"a0": 10, "a1": 20})
    assert p.update({"a0": 10, "a1": 20})
    assert p.current == "a1"


def test_primary_attribute_streak_resets_on_a_dip():
    p = PrimaryAttribute(margin=1.25, patience=2)
    p.reset(sub(a0=(0.0, 1.0), a1=(0.0, 1.0)))
    p.update({"a0": 1, "a1": 9})
    p.update({"a0": 9, "a1": 9})  # flap back: streak lost
    assert not p.update({"a0": 1, "a1": 9})
    assert p.current == "a0"
    assert p.update({"a0": 1, "a1": 9})


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 63),
    st.lists(st.integers(0, 63), max_size=40),
    st.lists(st.floats(0, 1), min_size=1, max_size=8),
)
def test_rank_targets_of_a_sorted_sample_are_the_members_at_each_rank(me, sample, fractions):
    """Checked against the definition: sort the clockwise distances (our
    own identifier left out) and take rank m^f. Identifiers from a small
    space, so that duplicates and our own identifier occur."""
    scale = RING_SIZE // 64
    me, sample = me * scale, [x * scale for x in sample]
    dists = [d for d in sorted((x - me) % RING_SIZE for x in sample) if d]
    m = len(dists)
    want = [(me + dists[min(m - 1, int(m**f) - 1)]) % RING_SIZE for f in fractions] if m else []
    assert rank_targets_sorted(me, sorted(sample), fractions) == want


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 63), st.lists(st.integers(0, 63), max_size=40), st.integers(0, 63))
def test_clockwise_rank_counts_the_sample_up_to_the_point(me, sample, point):
    """Checked against the definition: members of the sample (ours left
    out) at clockwise distance at most the point's, the point itself
    counted if it is one; our own identifier ranks 0."""
    scale = RING_SIZE // 64
    me, sample, point = me * scale, [x * scale for x in sample], point * scale
    reach = (point - me) % RING_SIZE
    want = sum(1 for x in sample if 0 < (x - me) % RING_SIZE <= reach)
    assert clockwise_rank(me, sorted(sample), point) == want


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 1023),
    st.lists(st.integers(0, 1023), min_size=RANK_SAMPLE_SIZE, max_size=RANK_SAMPLE_SIZE),
    st.lists(st.integers(0, 1023), min_size=1, max_size=RANK_SAMPLE_SIZE),
    st.lists(st.floats(0, 1), min_size=1, max_size=8),
    st.integers(1, 3),
)
def test_aimed_targets_keep_a_point_while_the_sample_ranks_it_near(
    me, first, drawn_anew, fractions, octaves
):
    """A fresh slot aims at rank_targets_sorted's member; once part of the
    full sample is drawn anew it keeps that point exactly while the sample
    ranks it within `octaves` of the slot's rank (plus `octaves`, for the
    smallest ranks), and is aimed afresh otherwise; a second call changes
    nothing. Identifiers from a small space, so that duplicates and our own
    occur."""
    scale = RING_SIZE // 1024
    me = me * scale
    first = [x * scale for x in first]
    later = sorted(first[len(drawn_anew) :] + [x * scale for x in drawn_anew])
    first.sort()
    aims = SmallWorldAims(octaves)
    aimed = aimed_rank_targets(me, first, fractions, aims)
    assert aimed == rank_targets_sorted(me, first, fractions)
    fresh = rank_targets_sorted(me, later, fractions)
    got = aimed_rank_targets(me, later, fractions, aims)
    assert len(got) == len(fresh)
    m = sum(1 for x in later if x != me)
    for i, target in enumerate(fresh):
        if i >= len(aimed):  # the first sample had no member but ours
            assert got[i] == target
            continue
        want = min(m, int(m ** fractions[i]))
        have = sum(1 for x in later if 0 < (x - me) % RING_SIZE <= (aimed[i] - me) % RING_SIZE)
        near = want // 2**octaves <= have <= want * 2**octaves + octaves
        assert got[i] == (aimed[i] if near else target)
    assert aimed_rank_targets(me, later, fractions, aims) == got


def test_aims_follow_the_sample_while_it_fills():
    """Until the sample is full, each call aims every slot afresh."""
    rng = random.Random(3)
    fractions = [0.2, 0.5, 0.9]
    aims = SmallWorldAims(8)
    for size in (40, 80, RANK_SAMPLE_SIZE - 1):
        sample = sorted(rng.randrange(RING_SIZE) for _ in range(size))
        want = rank_targets_sorted(7, sample, fractions)
        assert aimed_rank_targets(7, sample, fractions, aims) == want


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 15), st.booleans()), max_size=20),
    st.integers(0, 15),
    st.integers(0, 8),
)
def test_nearest_fresh_are_the_k_smallest_distance_index_pairs(cands, target, k):
    """RingIndex.nearest_fresh against its definition: the k smallest (ring
    distance, index) pairs of the candidates heard since the limit and not
    at the excluded address. Identifiers from a small space spread over the
    ring (so duplicates, exact half-ring ties and the target itself occur,
    on both sides of zero); candidate 3, if any, is the excluded one."""
    scale = RING_SIZE // 16
    idents = [(x * scale + scale // 2) % RING_SIZE for x, _ in cands]
    heard = [1.0 if fresh else 0.0 for _, fresh in cands]
    t = target * scale + scale // 2
    entries = [
        Entry(Profile(i, x, None), h) for i, (x, h) in enumerate(zip(idents, heard, strict=True))
    ]
    ring = RingIndex(entries)
    want = sorted(
        (ring_distance(t, x), i) for i, x in enumerate(idents) if heard[i] >= 0.5 and i != 3
    )[:k]
    assert ring.nearest_fresh(t, k, 0.5, 3) == want


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 15), st.booleans()), max_size=20),
    st.integers(0, 15),
)
def test_closest_is_the_smallest_distance_index_pair(cands, target):
    """RingIndex.closest against its definition: the unused candidate of
    smallest (ring distance, index), with duplicates and half-ring ties."""
    scale = RING_SIZE // 16
    idents = [(x * scale + scale // 2) % RING_SIZE for x, _ in cands]
    used = {i for i, (_, u) in enumerate(cands) if u}
    t = target * scale + scale // 2
    ring = RingIndex([e(i, x) for i, x in enumerate(idents)])
    pairs = sorted((ring_distance(t, x), i) for i, x in enumerate(idents) if i not in used)
    got, d = ring.closest(t, used)
    if not pairs:
        assert (got, d) == (None, RING_SIZE)
    else:
        assert (got.profile.address, d) == (pairs[0][1], pairs[0][0])


IDENTS = st.one_of(
    st.integers(0, RING_SIZE - 1), st.sampled_from([0, 1, RING_SIZE // 2, RING_SIZE - 1])
)


@settings(max_examples=500, deadline=None)
@given(IDENTS, IDENTS, IDENTS)
def test_ring_offsets_without_a_modulo_are_the_modulo(target, ident, origin):
    """in_target_octave and friend_score take ring offsets by a conditional
    add, not `% RING_SIZE`: the same for identifiers in the ring."""
    want, have = (target - origin) % RING_SIZE, (ident - origin) % RING_SIZE
    assert in_target_octave(target, ident, origin) == (want // 2 <= have <= 2 * want)
    sub = Subscription.build(SCHEMA, {"a0": (10.0, 20.0)})
    lo, hi = sub.key_ranges["a0"]
    score = friend_score(origin, lo, hi, Profile("x", ident, sub), "a0")
    assert score == (-1.0, ring_distance(origin, ident), ident)


def test_extended_rank_targets_reach_below_the_samples_resolution():
    # 10,000 nodes, a 128-member sample: the sample's nearest member is
    # about 78 nodes away, so rank_targets_sorted aims nothing nearer;
    # extended_rank_targets spreads the links log-uniformly over all ranks
    from bisect import bisect_left

    from vinifera.protocol.tman import extended_rank_targets

    rng = random.Random(7)
    n = 10_000
    ids = sorted(rng.randrange(RING_SIZE) for _ in range(n))
    sample = sorted(rng.sample(ids[1:], RANK_SAMPLE_SIZE))
    me, gap = ids[0], RING_SIZE // n
    fractions = [(i + 0.5) / 200 for i in range(200)]

    def ranks(targets):
        return [bisect_left(ids, t) % n for t in targets]

    old = ranks(rank_targets_sorted(me, sample, fractions))
    new = ranks(extended_rank_targets(me, sample, fractions, gap, None))
    below = n / RANK_SAMPLE_SIZE / 2
    assert sum(r < below for r in old) == 0
    share = sum(r < below for r in new) / len(new)
    # log-uniform: log(39) / log(10,000) = 0.40 of the links below 39 nodes
    assert 0.3 < share < 0.5, share
    assert min(new) <= 3 and max(new) > n / 2
    assert 30 < new[100] < 300  # the middle fraction: about sqrt(10,000) = 100 nodes on
    # a population the sample resolves (128 nodes, all in it): the same as before
    small = sorted({rng.randrange(RING_SIZE) for _ in range(RANK_SAMPLE_SIZE + 1)})
    assert extended_rank_targets(small[0], small[1:], fractions, RING_SIZE // 129, None) == (
        rank_targets_sorted(small[0], small[1:], fractions)
    )


def test_extended_rank_targets_keep_their_points_through_sample_noise():
    """The sample turning over and the gap wobbling period after period:
    with aims the points seldom move; aimed afresh every time, they follow
    the noise."""
    from bisect import bisect_left

    from vinifera.protocol.tman import SmallWorldAims, extended_rank_targets

    rng = random.Random(3)
    n = 10_000
    ids = sorted(rng.randrange(RING_SIZE) for _ in range(n))
    me, gap = ids[0], RING_SIZE // n
    fractions = [rng.random() for _ in range(6)]

    def noisy_calls(aims):
        sample = rng.sample(ids[1:], RANK_SAMPLE_SIZE)
        for _ in range(80):
            # one shuffle reply's worth of turnover a period (IdentifierSample)
            for k in rng.sample(range(RANK_SAMPLE_SIZE), 8):
                sample[k] = rng.choice(ids[1:])
            sample = sorted(sample)
            wobble = int(gap * rng.uniform(0.8, 1.25))
            if aims is not None:  # the node's own observation, once a period
                aims.observe(me, sample, wobble)
            yield [bisect_left(ids, t) for t in extended_rank_targets(me, sample, fractions,
                                                                        wobble, aims)]  # fmt: skip

    def moves(calls):
        for _ in range(30):  # a warm-up: the smoothed step settles
            last = next(calls)
        moved = 0
        for ranks in calls:
            moved += sum(a != b for a, b in zip(last, ranks, strict=True))
            last = ranks
        return moved

    # 50 periods of 6 slots: a point moves when a sample member lands before
    # a point below the sample, or the sample ranks a point out of its octaves
    assert moves(noisy_calls(SmallWorldAims(2))) <= 6
    assert moves(noisy_calls(None)) > 60
