"""tman_buffer against its plain definition: every fresh candidate and us
when that fits; otherwise the freshest half nearest the receiver, our
links, then the rest in pool order, capped."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from vinifera.protocol.profile import Entry, Profile, to_wire_entries
from vinifera.protocol.selection import tman_buffer
from vinifera.protocol.tman import RingIndex
from vinifera.ring import RING_SIZE, ring_distance

STALE_AFTER = 5.0


def plain_tman_buffer(me, now, target, pool, ring, links, cap, stale_after):
    """The definition, written out: a freshness flag for every candidate."""
    limit = now - stale_after
    taddr = target.address
    fresh = [e.heard >= limit and e.profile.address != taddr for e in pool]
    mine = Entry(me, now)
    if sum(fresh) + 1 <= cap:
        return to_wire_entries([e for e, ok in zip(pool, fresh, strict=True) if ok] + [mine], now)
    t = target.ident
    # the freshest half nearest the receiver: every fresh candidate's
    # (ring distance, index), sorted
    near = sorted((ring_distance(t, e.profile.ident), i) for i, e in enumerate(pool) if fresh[i])
    near = near[: cap // 2]
    d = (me.ident - t) % RING_SIZE
    near.append((min(d, RING_SIZE - d), len(pool)))
    near.sort()
    chosen: dict = {}
    for _, i in near[: cap // 2]:
        e = pool[i] if i < len(pool) else mine
        chosen[e.profile.address] = e
    for addr, e in links.items():
        if addr != taddr:
            chosen.setdefault(addr, e)
    for e, ok in zip(pool, fresh, strict=True):
        if len(chosen) >= cap:
            break
        if ok:
            chosen.setdefault(e.profile.address, e)
    if len(chosen) < cap:
        chosen.setdefault(mine.profile.address, mine)
    return to_wire_entries(list(chosen.values())[:cap], now)


@settings(max_examples=400, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    size=st.sampled_from([0, 1, 5, 20, 23, 24, 25, 60, 150]),
    cap=st.sampled_from([0, 1, 2, 12, 24, 30]),
    stale_share=st.sampled_from([0.0, 0.1, 0.5, 1.0]),
    few_idents=st.booleans(),
    target_in_pool=st.booleans(),
)
def test_tman_buffer_is_its_plain_definition(
    seed, size, cap, stale_share, few_idents, target_in_pool
):
    rng = random.Random(seed)
    now = 100.0

    def ident():  # few identifiers: ties on the ring
        return rng.randrange(8) << 60 if few_idents else rng.randrange(RING_SIZE)

    def heard():
        return (
            now - STALE_AFTER - rng.random()
            if rng.random() < stale_share
            else now - rng.random() * STALE_AFTER
        )

    pool = [Entry(Profile(a, ident(), None), heard()) for a in range(1, size + 1)]
    target = Profile(pool[0].profile.address if target_in_pool and pool else 10_000, ident(), None)
    me = Profile(0, ident(), None)
    links = {e.profile.address: e for e in rng.sample(pool, min(len(pool), 10))}
    ring = RingIndex(pool)
    args = (me, now, target, pool, ring, links, cap, STALE_AFTER)
    profiles, ages = tman_buffer(*args)
    assert (profiles, ages) == plain_tman_buffer(*args)
    assert len(profiles) == len(ages) <= max(cap, 1)
