"""T-Man's two choices, from a node's candidates (paper Sec. IV-B): its
routing links (2 ring links, friends, small-world links, plus ring backups)
and the buffer it sends a peer in an exchange. Pure functions of their
arguments; the building blocks are in tman.py."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Hashable, Sequence

from vinifera.protocol.config import OverlayConfig
from vinifera.protocol.profile import Entry, Profile, to_wire_entries
from vinifera.protocol.records import hex_id, node_name, record
from vinifera.protocol.tman import (
    FULL_RANGE,
    RANK_SAMPLE_SIZE,
    FriendScores,
    Links,
    RingIndex,
    SmallWorldAims,
    aimed_rank_targets,
    extended_rank_targets,
    friend_score,
    in_target_octave,
    near_target,
    rank_targets_sorted,
    ring_neighbourhood,
    select_friends,
    select_small_world,
    small_world_targets,
)
from vinifera.ring import RING_SIZE

# Identifiers sampled before small-world targets are drawn in rank space.
MIN_RANK_SAMPLE = 32


class IdentifierSample:
    """The last `size` identifiers seen in Cyclon shuffles, a uniform sample
    of the ring's population, kept sorted too (for rank-based small-world
    targets)."""

    def __init__(self, size: int = RANK_SAMPLE_SIZE) -> None:
        # arrival order in a ring of `size` slots (not a bounded deque: no
        # compiled deque operations); _next is the oldest once it is full
        self._arrival: list[int] = []
        self._size = size
        self._next = 0
        self.sorted: list[int] = []

    def add(self, ident: int) -> None:
        arrival, ordered = self._arrival, self.sorted
        if len(arrival) < self._size:
            arrival.append(ident)
        else:
            i = self._next
            del ordered[bisect_left(ordered, arrival[i])]  # the oldest goes
            arrival[i] = ident
            self._next = (i + 1) % self._size
        insort(ordered, ident)


def select_links(
    me: Profile,
    cands: list[Entry],
    ring: RingIndex,
    cfg: OverlayConfig,
    primary: str | None,
    sorted_sample: Sequence[int],
    sw_fractions: Sequence[float],
    held_small_world: Sequence[Hashable],
    friend_scores: FriendScores | None = None,
    aims: SmallWorldAims | None = None,
) -> tuple[Links, list[Entry]]:
    """The routing links chosen from `cands` (`ring`: the same, by
    identifier), and the ring backups. `sorted_sample`: identifiers seen in
    Cyclon shuffles, sorted (a uniform sample of the population);
    `held_small_world`: the small-world links held now (kept while fit);
    `friend_scores`: the friend scores kept from the last selection;
    `aims`: the small-world slots' kept points."""
    succs, preds = ring_neighbourhood(me.ident, cands, cfg.ring_backups + 1, ring)
    succ = succs[0] if succs else None
    pred = preds[0] if preds else None
    taken = set()
    if succ is not None:
        taken.add(succ.profile.address)
    if pred is not None:
        taken.add(pred.profile.address)
    friends = select_friends(
        me.ident, me.subscription, primary, cands, cfg.friends, taken, friend_scores
    )
    for e in friends:
        taken.add(e.profile.address)
    targets = _small_world_targets(
        me, cfg, succs, preds, friends, sorted_sample, sw_fractions, aims
    )
    small_world = []
    if targets:
        small_world = select_small_world(targets, cands, taken, held_small_world, me.ident, ring)
    return Links(succ, pred, friends, small_world), succs[1:] + preds[1:]


def selection_stands(
    me: Profile,
    pool: dict[Hashable, Entry],
    ring: RingIndex,
    cfg: OverlayConfig,
    primary: str | None,
    sorted_sample: Sequence[int],
    sw_fractions: Sequence[float],
    links: Links,
    reference: dict[Hashable, Entry],
    aims: SmallWorldAims | None = None,
) -> list[Entry] | None:
    """The ring backups when select_links would choose `links` again from
    `pool` (`ring`: its values by identifier), None when it might not.
    Exact, not a guess, given `reference`: the pool select_links chose
    `links` from (for the same `me` and `primary`, holding
    `links.small_world`), plus candidates found since to score below the
    friends. Most periods change no link (docs/decisions/links.md,
    "Reselections that would stand are skipped"), and this costs
    a fraction of a selection: the ring is looked up, only profiles not in
    `reference` are scored as friends, and held small-world links are
    judged by select_small_world's own rule (tman.in_target_octave,
    tman.near_target)."""
    idents = ring.idents
    if len(set(idents)) != len(idents):
        return None  # tied identifiers: the choice would follow pool order
    succs, preds = ring_neighbourhood(me.ident, ring.candidates, cfg.ring_backups + 1, ring)
    succ = succs[0].profile.address if succs else None
    pred = preds[0].profile.address if preds else None
    if succ != links.succ or pred != links.pred:
        return None
    for addr, e in links.by_address.items():
        now_e = pool.get(addr)
        if now_e is None or now_e.profile.ident != e.profile.ident:
            return None  # a link went stale or moved
    taken = {a for a in (succ, pred) if a is not None}
    friends = links.friends
    sub = me.subscription
    if cfg.friends > 0 and sub is not None and primary is not None:
        # Friends are the best cfg.friends scores; candidates scored at
        # `reference` kept their score, so only new profiles can beat them.
        for addr in friends:
            before = reference.get(addr)
            if before is None or pool[addr].profile is not before.profile:
                return None
        a_lo, a_hi = sub.key_ranges.get(primary, FULL_RANGE)
        worst = None
        if len(friends) == cfg.friends:
            worst = friend_score(me.ident, a_lo, a_hi, pool[friends[-1]].profile, primary)
        for addr, e in pool.items():
            before = reference.get(addr)
            if before is not None and before.profile is e.profile:
                continue
            if addr in taken:
                continue
            score = friend_score(me.ident, a_lo, a_hi, e.profile, primary)
            if score is not None and (worst is None or score <= worst):
                return None
    elif friends:
        return None
    taken.update(friends)
    chosen = [pool[a] for a in friends]
    targets = _small_world_targets(me, cfg, succs, preds, chosen, sorted_sample, sw_fractions, aims)
    held = links.small_world
    if len(targets) != len(held):
        return None
    # select_small_world's rule for keeping a held link; the closest
    # candidate is looked up only where the octave does not decide
    for target, addr in zip(targets, held, strict=True):
        if addr in taken:
            return None
        ident = pool[addr].profile.ident
        if not in_target_octave(target, ident, me.ident) and not near_target(
            target, ident, ring.closest(target, taken)[1]
        ):
            return None
        taken.add(addr)
    return succs[1:] + preds[1:]


def _small_world_targets(
    me: Profile,
    cfg: OverlayConfig,
    succs: list[Entry],
    preds: list[Entry],
    friends: Sequence[Entry],
    sorted_sample: Sequence[int],
    sw_fractions: Sequence[float],
    aims: SmallWorldAims | None,
) -> list[int]:
    """The identifiers select_links' small-world links aim at, one per slot
    (none without a ring neighbourhood); `aims`, unless None or holding for
    0 octaves, keeps each slot's point while it fits (SmallWorldAims)."""
    n_sw = cfg.small_world
    if cfg.lend_unused_friend_slots:
        n_sw += cfg.friends - len(friends)
    if n_sw <= 0 or not succs:
        return []
    if len(sorted_sample) >= MIN_RANK_SAMPLE:
        fractions = sw_fractions[:n_sw]
        if cfg.small_world_below_sample and preds:
            gap = local_gap(succs, preds)
            return extended_rank_targets(me.ident, sorted_sample, fractions, gap, aims)
        if aims is not None and aims.octaves > 0:
            return aimed_rank_targets(me.ident, sorted_sample, fractions, aims)
        return rank_targets_sorted(me.ident, sorted_sample, fractions)
    # too few samples yet: identifier distance
    gap = local_gap(succs, preds)
    # friends already reach our neighbourhood of interest: long links
    # start beyond the farthest of them
    for e in friends:
        d = (e.profile.ident - me.ident) % RING_SIZE
        gap = max(gap, min(d, RING_SIZE - d))
    return small_world_targets(me.ident, gap, sw_fractions[:n_sw])


def local_gap(succs: Sequence[Entry], preds: Sequence[Entry]) -> int:
    """The typical identifier distance between nodes here: the span of our
    ring neighbourhood (successors and predecessors, the farthest last) over
    the number of gaps in it."""
    span = (succs[-1].profile.ident - preds[-1].profile.ident) % RING_SIZE
    return span // (len(succs) + len(preds))


def tman_buffer(
    me: Profile,
    now: float,
    target: Profile,
    pool: list[Entry],
    ring: RingIndex,
    links: dict[Hashable, Entry],
    cap: int,
    stale_after: float,
) -> tuple[tuple[Profile, ...], tuple[float, ...]]:
    """What we send in a T-Man exchange, ranked for the receiver (T-Man's
    key to fast convergence): the candidates closest to its identifier
    first, then our own links (its neighbour's friends are likely its
    friends too), then the rest of what we know; capped. `pool`: the
    candidates of our last reselection, `ring` the same by identifier;
    `cap`: entries at most; `stale_after`: in the driver's time unit."""
    limit = now - stale_after
    taddr = target.address
    n = len(pool)
    mine = Entry(me, now)
    # Whether all fresh candidates and we fit: count them only until cap of
    # them are found (the pool is usually several times the cap).
    found = 0
    for e in pool:
        if e.heard >= limit and e.profile.address != taddr:
            found += 1
            if found >= cap:
                break
    if found + 1 <= cap:
        return to_wire_entries(
            [e for e in pool if e.heard >= limit and e.profile.address != taddr] + [mine], now
        )
    # the closest to the receiver first (ties: our pool's order, ourselves last)
    t = target.ident
    near = ring.nearest_fresh(t, cap // 2, limit, taddr)
    d = (me.ident - t) % RING_SIZE
    near.append((min(d, RING_SIZE - d), n))
    near.sort()
    chosen: dict = {}
    for _, i in near[: cap // 2]:
        e = pool[i] if i < n else mine
        chosen[e.profile.address] = e
    for addr, e in links.items():
        if addr != taddr:
            chosen.setdefault(addr, e)
    for e in pool:
        if len(chosen) >= cap:
            break
        if e.heard >= limit and e.profile.address != taddr:
            chosen.setdefault(e.profile.address, e)
    if len(chosen) < cap:
        chosen.setdefault(mine.profile.address, mine)
    return to_wire_entries(list(chosen.values())[:cap], now)


def links_record(now: float, name: str, ident: int, links: Links, primary: str | None) -> dict:
    """The `links` log record of a node's routing table (docs/logs.md)."""

    def named(addr):
        return None if addr is None else node_name(addr)

    return record(
        now,
        name,
        "links",
        id=hex_id(ident),
        succ=named(links.succ),
        pred=named(links.pred),
        friends=[named(a) for a in links.friends],
        small_world=[named(a) for a in links.small_world],
        primary=primary,
    )
