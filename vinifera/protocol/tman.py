"""T-Man link selection (Jelasity, Montresor, Babaoglu) for Vinifera's
routing table: 2 ring links, K_sw small-world links and K_f friend links.

Everything here is a pure function of its arguments (plus the rng where
randomness is part of the definition), so each rule is testable alone.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left, bisect_right, insort
from collections.abc import Hashable, Iterable, Sequence
from typing import NamedTuple

from vinifera.protocol.profile import Entry, Profile
from vinifera.ranges import interval_overlap_utility
from vinifera.ring import RING_BITS, RING_MAX, RING_SIZE, ring_distance
from vinifera.subscription import Subscription

FULL_RANGE = (0, RING_MAX)


class LinkShape(NamedTuple):
    """The addresses of a routing table by role."""

    succ: Hashable | None
    pred: Hashable | None
    friends: tuple
    small_world: tuple


class Links:
    """The selected routing table: addresses by role, and one Entry per
    distinct neighbour so that liveness (`heard`) and the neighbour's profile
    travel with the link."""

    __slots__ = ("succ", "pred", "friends", "small_world", "by_address")

    def __init__(
        self,
        succ: Entry | None = None,
        pred: Entry | None = None,
        friends: Sequence[Entry] = (),
        small_world: Sequence[Entry] = (),
    ) -> None:
        by: dict[Hashable, Entry] = {}
        for e in (succ, pred, *friends, *small_world):
            if e is not None:
                by.setdefault(e.profile.address, e)
        self.by_address = by
        self.succ = None if succ is None else succ.profile.address
        self.pred = None if pred is None else pred.profile.address
        self.friends = tuple(e.profile.address for e in friends)
        self.small_world = tuple(e.profile.address for e in small_world)

    def entries(self) -> list[Entry]:
        """Distinct link entries: ring first, then friends, then small-world."""
        return list(self.by_address.values())

    def shape(self) -> LinkShape:
        """A comparable summary, to detect changes worth logging."""
        return LinkShape(self.succ, self.pred, self.friends, self.small_world)


def ring_neighbourhood(
    my_ident: int, candidates: Sequence[Entry], r: int, index: RingIndex | None = None
) -> tuple[list[Entry], list[Entry]]:
    """The r closest candidates clockwise (successor list) and counter-
    clockwise (predecessor list), closest first; our own identifier excluded.
    Ties (equal identifiers) keep candidate order going clockwise (and the
    reverse going counter-clockwise), so the result is deterministic.
    `index`: the candidates' RingIndex, if already built."""
    ring = index if index is not None else RingIndex(candidates)
    idents, order = ring.idents, ring.order
    n = len(order)
    start = bisect_right(idents, my_ident)  # clockwise from just after us
    lists: tuple[list[Entry], list[Entry]] = ([], [])
    for out, j, step in ((lists[0], start, 1), (lists[1], start - 1, -1)):
        for _ in range(n):
            if len(out) >= r:
                break
            if idents[j % n] != my_ident:
                out.append(candidates[order[j % n]])
            j += step
    return lists


def key_range_on(sub: Subscription | None, attribute: str) -> tuple[int, int]:
    """A subscription's identifier interval on one attribute; an attribute
    it does not constrain means the whole domain."""
    if sub is None:
        return FULL_RANGE
    return sub.key_ranges.get(attribute, FULL_RANGE)


def friend_utility(mine: Subscription | None, other: Subscription | None, primary: str) -> float:
    """|S_p ∩ S_q| / |S_p ∪ S_q| on the primary attribute (paper Sec. IV-B)."""
    if mine is None or other is None or primary is None:
        return 0.0
    a_lo, a_hi = key_range_on(mine, primary)
    b_lo, b_hi = key_range_on(other, primary)
    return interval_overlap_utility(a_lo, a_hi, b_lo, b_hi)


def overlap_counts(mine: Subscription | None, candidates: Iterable[Entry]) -> dict[str, int]:
    """Algorithm 1's ranking input: for each attribute we constrain, how many
    candidates' subscriptions overlap ours on it. Only constrained attributes
    compete: on an unconstrained one everybody overlaps and it would always win."""
    if mine is None:
        return {}
    ranges = [(name, mine.key_ranges[name]) for name in mine.attributes]
    counts = dict.fromkeys(mine.attributes, 0)
    for e in candidates:
        sub = e.profile.subscription
        if sub is None:
            continue
        theirs = sub.key_ranges
        for name, (lo, hi) in ranges:
            olo, ohi = theirs.get(name, FULL_RANGE)
            if olo <= hi and lo <= ohi:
                counts[name] += 1
    return counts


class FriendScores:
    """select_friends' score of each candidate, kept from one reselection to
    the next: a score depends only on the candidate's profile and on ours,
    and most candidates are the same profile objects period after period.
    Keyed by address, valid while the profile object is the same; emptied
    when our identifier, subscription or primary attribute changes, and
    holding only the last call's candidates."""

    __slots__ = ("ident", "mine", "primary", "by_address")

    def __init__(self) -> None:
        self.ident = -1
        self.mine: Subscription | None = None
        self.primary: str | None = None
        # address -> (the profile scored, its score or None: never a friend)
        self.by_address: dict[Hashable, tuple] = {}


def friend_score(
    my_ident: int, a_lo: int, a_hi: int, p: Profile, primary: str
) -> tuple[float, int, int] | None:
    """The sort key of a friend candidate, lowest best: (-utility, ring
    distance, identifier); None when it is no friend (utility 0)."""
    sub = p.subscription
    if sub is None:
        return None
    b_lo, b_hi = sub.key_ranges.get(primary, FULL_RANGE)
    if b_hi < a_lo or b_lo > a_hi:
        return None  # disjoint: utility 0, never a friend
    u = interval_overlap_utility(a_lo, a_hi, b_lo, b_hi)
    d = p.ident - my_ident  # (mod RING_SIZE without a division: see in_target_octave)
    if d < 0:
        d += RING_SIZE
    return (-u, d if d <= RING_SIZE >> 1 else RING_SIZE - d, p.ident)


def select_friends(
    my_ident: int,
    mine: Subscription | None,
    primary: str | None,
    candidates: Sequence[Entry],
    k: int,
    taken: set,
    memo: FriendScores | None = None,
) -> list[Entry]:
    """The k candidates of highest utility > 0 on the primary attribute; ties
    go to the closer identifier, then the lower identifier (deterministic).
    `memo`: scores kept from the previous call (the result is the same)."""
    if k <= 0 or mine is None or primary is None:
        return []
    a_lo, a_hi = mine.key_ranges.get(primary, FULL_RANGE)
    if memo is None:
        memo = FriendScores()
    elif memo.ident != my_ident or memo.mine is not mine or memo.primary != primary:
        memo.by_address = {}
    memo.ident, memo.mine, memo.primary = my_ident, mine, primary
    known = memo.by_address
    # only this call's candidates are kept: memory stays that of the pool
    kept: dict[Hashable, tuple] = {}
    best: list[tuple] = []  # the k best (score, index) so far, sorted
    for i, e in enumerate(candidates):
        p = e.profile
        addr = p.address
        if addr in taken:
            continue
        held = known.get(addr)
        if held is None or held[0] is not p:
            held = (p, friend_score(my_ident, a_lo, a_hi, p, primary))
        kept[addr] = held
        score = held[1]
        if score is not None and (len(best) < k or score < best[-1][0]):
            # kept sorted as it fills, so most candidates cost one
            # comparison; the index breaks remaining ties as the list
            # order did (a score tied with the k-th loses to it)
            insort(best, (score, i))
            if len(best) > k:
                best.pop()
    memo.by_address = kept
    return [candidates[s[1]] for s in best]


def draw_small_world_fractions(n: int, rng: random.Random) -> list[float]:
    """One uniform draw per small-world slot, made once so links do not churn;
    small_world_targets turns them into targets."""
    return [rng.random() for _ in range(n)]


def small_world_targets(my_ident: int, gap: int, fractions: Sequence[float]) -> list[int]:
    """Symphony / Kleinberg: clockwise offsets with density ∝ 1/distance,
    log-uniform between the typical gap between nodes here (the mean
    distance to our next successors) and the whole ring. Normalizing by the
    gap matters: offsets below it all land on the successor and are wasted."""
    lo = math.log(max(gap, 1))
    span = RING_BITS * math.log(2) - lo
    return [(my_ident + min(RING_MAX, int(math.exp(lo + f * span)))) % RING_SIZE for f in fractions]


def rank_targets(my_ident: int, sample: Sequence[int], fractions: Sequence[float]) -> list[int]:
    """Kleinberg in rank space: identifiers cluster where subscriptions do,
    so link lengths must be log-uniform in the number of nodes skipped, not
    in identifier distance. `sample` is a uniform sample of identifiers
    (Cyclon's); the target of fraction f is the sample member at rank
    m^f (1-based) clockwise from us."""
    return rank_targets_sorted(my_ident, sorted(sample), fractions)


def _rotation(ordered: Sequence[int], my_ident: int) -> tuple[int, int, int]:
    """(after, n_after, m) of a sorted sample seen clockwise from us: the
    index of its first member past us, how many lie past us before the
    wrap, and how many members it has besides our own identifier."""
    after = bisect_right(ordered, my_ident)
    n_after = len(ordered) - after
    return after, n_after, n_after + bisect_left(ordered, my_ident)


def _clockwise(ordered: Sequence[int], after: int, n_after: int, k: int) -> int:
    """The sample member k places (0-based) clockwise from us (_rotation)."""
    return ordered[after + k] if k < n_after else ordered[k - n_after]


def rank_targets_sorted(
    my_ident: int, ordered: Sequence[int], fractions: Sequence[float]
) -> list[int]:
    """rank_targets of a sample already sorted: the members clockwise from
    us are a rotation of it (our own identifier left out), so no sort."""
    after, n_after, m = _rotation(ordered, my_ident)
    if not m:
        return []
    return [_clockwise(ordered, after, n_after, min(m - 1, int(m**f) - 1)) for f in fractions]


# Identifiers the rank sample holds (selection.IdentifierSample): until it
# is full, the sample is of the nodes met first, not a uniform one.
RANK_SAMPLE_SIZE = 128


class SmallWorldAims:
    """The point each small-world slot aims at, kept between reselections.
    A rank target read off the identifier sample is an order statistic of
    its draws: period after period it jumps by a factor 2 and more as the
    sample turns over, and the held link then fails the octave test
    (in_target_octave) though the population did not change; each change
    moves routes and CRT rows. So once the sample is full, a slot keeps its
    point while the sample still ranks it within `octaves` of the rank it
    was drawn for, and is aimed again (at the sample's member of that rank)
    only when it is not: a draw from the same distribution as before, taken
    once instead of every period (Symphony draws its links once too).
    While the sample fills, every slot is aimed afresh each time: what the
    first nodes met say of the ranks is soon out of date."""

    __slots__ = ("points", "octaves", "log_step", "unit")

    def __init__(self, octaves: int) -> None:
        self.points: list[int | None] = []
        self.octaves = octaves
        # For extended_rank_targets, from observe(): the log of the nodes per
        # sample step, smoothed, and the typical gap between nodes here.
        self.log_step: float | None = None
        self.unit = 1

    def observe(self, my_ident: int, ordered: Sequence[int], gap: int) -> None:
        """Once a period, from the node's own ring neighbourhood (not from
        the candidate sets selections try, which differ): the estimates
        extended_rank_targets aims with. One estimate of the step is an
        order statistic of the sample; smoothed over periods (the sample
        turns over a few members a period) it moves the wanted ranks by a
        few percent instead of tens."""
        if len(ordered) < RANK_SAMPLE_SIZE or gap <= 0:
            self.log_step = None
            return
        log_step = _log_step(my_ident, ordered, gap)
        if self.log_step is not None:
            log_step = self.log_step + STEP_SMOOTHING * (log_step - self.log_step)
        self.log_step, self.unit = log_step, gap


def clockwise_rank(my_ident: int, ordered: Sequence[int], point: int) -> int:
    """How many members of the sorted sample lie clockwise from us up to
    `point` (inclusive), leaving ours out: the rank rank_targets_sorted
    counts in."""
    after = bisect_right(ordered, my_ident)
    if point > my_ident:
        return bisect_right(ordered, point) - after
    return len(ordered) - after + bisect_right(ordered, point) if point < my_ident else 0


def aimed_rank_targets(
    my_ident: int, ordered: Sequence[int], fractions: Sequence[float], aims: SmallWorldAims
) -> list[int]:
    """rank_targets_sorted, but once the sample is full a slot whose kept
    point the sample still ranks within aims.octaves of its rank (plus
    aims.octaves, for the smallest ranks) keeps that point (SmallWorldAims);
    the others are aimed afresh and kept. Calling it again with the same
    arguments gives the same targets (a fresh point has its exact rank)."""
    fresh = rank_targets_sorted(my_ident, ordered, fractions)
    points = aims.points
    if len(ordered) < RANK_SAMPLE_SIZE:
        points[:] = fresh
        return fresh
    if len(points) < len(fresh):
        points.extend([None] * (len(fresh) - len(points)))
    m = len(ordered) - (bisect_right(ordered, my_ident) - bisect_left(ordered, my_ident))
    shift = aims.octaves
    out = []
    for i, f in enumerate(fractions[: len(fresh)]):
        held = points[i]
        if held is not None:
            want = min(m, int(m**f))  # the 1-based rank the slot is drawn for
            have = clockwise_rank(my_ident, ordered, held)
            if want >> shift <= have <= (want << shift) + shift:
                out.append(held)
                continue
        points[i] = fresh[i]
        out.append(fresh[i])
    return out


# Sample members the nodes-per-sample-step estimate of extended_rank_targets
# spans: more is steadier, fewer is more local.
STEP_ESTIMATE_MEMBERS = 8
# Weight of a new estimate in the smoothed one (an exponential average).
STEP_SMOOTHING = 0.1


def _log_step(my_ident: int, ordered: Sequence[int], gap: int) -> float:
    """The log of the nodes per sample step near us (extended_rank_targets)."""
    after, n_after, m = _rotation(ordered, my_ident)
    j = min(STEP_ESTIMATE_MEMBERS, m)
    member = _clockwise(ordered, after, n_after, j - 1)
    return math.log(max(1.0, ((member - my_ident) % RING_SIZE) / (j * max(gap, 1))))


def extended_rank_targets(
    my_ident: int,
    ordered: Sequence[int],
    fractions: Sequence[float],
    gap: int,
    aims: SmallWorldAims | None,
) -> list[int]:
    """Kleinberg in rank space over the whole population, not only the part
    the sample resolves. The sample's j-th member clockwise is about j * s
    nodes away, where s, the nodes per sample step, is estimated near us:
    the identifier distance to the STEP_ESTIMATE_MEMBERS-th member over
    `gap` (the typical distance between nodes here). Fraction f aims at
    population rank R = (m s)^f, log-uniform over every rank: from s on, at
    the sample member of rank R / s; below s, log-linearly between one gap
    from us (rank 1) and the sample's first member (rank about s).
    rank_targets_sorted instead spreads every link over the sample's m
    ranks, none shorter than s nodes.

    With `aims` that observed the node's neighbourhood (SmallWorldAims.
    observe, once the sample is full), s and the gap are aims' smoothed
    estimates, the same for every selection a period tries, and a slot
    keeps its point while its sample rank times s is within aims.octaves of
    R (below s: at most aims.octaves members before it). A point
    aimed afresh at every change would move the link, its routes and rows
    every period."""
    after, n_after, m = _rotation(ordered, my_ident)
    if not m:
        return []
    observed = aims.log_step if aims is not None and aims.octaves > 0 else None
    hold = observed is not None
    if observed is not None:
        log_step, unit = observed, aims.unit  # type: ignore[union-attr]
    else:
        unit = max(gap, 1)
        log_step = _log_step(my_ident, ordered, unit)
    step = math.exp(log_step)
    total = math.log(m) + log_step  # log of the population's ranks, m * s
    points = aims.points if aims is not None else []
    if len(points) < len(fractions):
        points.extend([None] * (len(fractions) - len(points)))
    out = []
    for i, f in enumerate(fractions):
        want = math.exp(f * total)
        held = points[i]
        if hold and held is not None:
            # the sample's count before the point, times s: within
            # aims.octaves of R, with aims.octaves members of slack (as
            # aimed_rank_targets); below s no lower bound (the count is 0)
            have = clockwise_rank(my_ident, ordered, held) * step
            octaves = aims.octaves  # type: ignore[union-attr]
            tolerance = float(1 << octaves)
            keep = have <= want * tolerance + octaves * step and (
                want < step or want / tolerance <= have
            )
            if keep:
                out.append(held)
                continue
        if want < step:
            # between the gap (rank 1) and the first sample member (rank
            # about s), log-linearly: the point lies before that member
            # whatever the density does in between
            first = _clockwise(ordered, after, n_after, 0) - my_ident
            reach = max(first % RING_SIZE, unit)
            scale = math.log(want) / log_step if log_step > 0 else 0.0
            point = (my_ident + int(unit * (reach / unit) ** scale)) % RING_SIZE
        else:
            k = min(m, int(want / step))  # the 1-based sample rank
            point = _clockwise(ordered, after, n_after, k - 1)
        points[i] = point
        out.append(point)
    return out


def select_small_world(
    targets: Sequence[int],
    candidates: Sequence[Entry],
    taken: set,
    current: Sequence | None = None,
    origin: int = 0,
    index: RingIndex | None = None,
) -> list[Entry]:
    """For each target, the untaken candidate closest to it (ties: the
    earlier candidate); `index`: the candidates' RingIndex, if built. With
    `current` (the address held per slot, `origin` our identifier), a slot
    keeps its link while its offset is within a factor 2 of the target's (a
    link in the right octave is all Kleinberg's argument needs) or it is
    within twice the best distance: routing tables, and the routes computed
    from them, then stay put instead of following every sample's noise."""
    chosen: list[Entry] = []
    used = set(taken)
    by_address = {e.profile.address: e for e in candidates} if current else {}
    ring = index if index is not None else RingIndex(candidates)
    for i, target in enumerate(targets):
        best, best_d = ring.closest(target, used)
        if best is None:
            break
        if current is not None and i < len(current):
            held = by_address.get(current[i])
            if (
                held is not None
                and held.profile.address not in used
                and (
                    in_target_octave(target, held.profile.ident, origin)
                    or near_target(target, held.profile.ident, best_d)
                )
            ):
                best = held
        used.add(best.profile.address)
        chosen.append(best)
    return chosen


def in_target_octave(target: int, ident: int, origin: int) -> bool:
    """Whether a held small-world link at `ident` keeps its slot whatever
    the closest candidate is: its offset from `origin` (ours) is within a
    factor 2 of the target's."""
    # offsets of identifiers (all in [0, RING_SIZE)) without a modulo: a
    # 64-bit identifier is a boxed int, and its division the dearest step
    want = target - origin
    if want < 0:
        want += RING_SIZE
    have = ident - origin
    if have < 0:
        have += RING_SIZE
    return want >> 1 <= have <= want << 1


def near_target(target: int, ident: int, best_d: int) -> bool:
    """Whether a held small-world link at `ident` keeps its slot beside the
    closest candidate, `best_d` from the target: within twice that."""
    return ring_distance(target, ident) <= 2 * best_d


def _gap_cw(idents: list[int], i: int, target: int) -> int:
    """Clockwise distance from `target` to sorted position i of a ring walk
    (i from len(idents) on: wrapped past the top)."""
    n = len(idents)
    return idents[i] - target if i < n else idents[i - n] + RING_SIZE - target


def _gap_ccw(idents: list[int], i: int, target: int) -> int:
    """Counter-clockwise distance from `target` to sorted position i of a
    ring walk (i below 0: wrapped past the bottom)."""
    return target - idents[i] if i >= 0 else target + RING_SIZE - idents[i + len(idents)]


class RingIndex:
    """Candidates sorted by identifier (ties: candidate order), built once
    per reselection and shared by the ring, small-world and T-Man buffer
    choices: nearest-to-a-point lookups in O(log n + k) instead of a
    distance computed and sorted for every candidate each time."""

    __slots__ = ("idents", "order", "candidates")

    def __init__(self, candidates: Sequence[Entry]) -> None:
        self.candidates = candidates
        idents = [e.profile.ident for e in candidates]
        self.order = sorted(range(len(candidates)), key=idents.__getitem__)
        self.idents = [idents[i] for i in self.order]

    def closest(self, target: int, used: set) -> tuple[Entry | None, int]:
        """The unused candidate nearest `target` either way round (ties: the
        lowest candidate index) and its distance. Walks out both ways at
        once, the nearer side first (as `nearest_fresh`), until past the best."""
        order, idents, cands = self.order, self.idents, self.candidates
        n = len(order)
        cw = bisect_left(idents, target)
        ccw = cw - 1
        best_i, best_d = -1, RING_SIZE
        if not n:
            return None, RING_SIZE
        # each side's next distance, taken again only when that side moves
        d_cw, d_ccw = _gap_cw(idents, cw, target), _gap_ccw(idents, ccw, target)
        for step in range(1, n + 1):
            if d_cw <= d_ccw:
                d, j = d_cw, cw
                cw += 1
                if step < n:
                    d_cw = _gap_cw(idents, cw, target)
            else:
                d, j = d_ccw, ccw
                ccw -= 1
                if step < n:
                    d_ccw = _gap_ccw(idents, ccw, target)
            if d > best_d:
                break  # distances only grow from here
            i = order[j % n]
            if cands[i].profile.address not in used and (d < best_d or i < best_i):
                best_i, best_d = i, d  # go on: an equal distance may follow
        return (cands[best_i], best_d) if best_i >= 0 else (None, RING_SIZE)

    def nearest_fresh(
        self, target: int, k: int, heard_since: float, exclude: Hashable
    ) -> list[tuple[int, int]]:
        """The k candidates nearest `target` either way round that were
        heard at or after `heard_since` and are not at address `exclude`,
        as (distance, index) in that order (ties: lower index first). Walks
        out from `target` both ways at once, the nearer side first, so it
        stops after the k-th (and its ties): O(k) steps, no distance taken
        modulo the ring. (The test is written in, not passed as a function:
        a compiled call through a closure costs more than the test.)"""
        order, idents, cands = self.order, self.idents, self.candidates
        n = len(order)
        if k <= 0 or not n:
            return []
        cw = bisect_left(idents, target)  # next position clockwise (n and on: wrapped)
        ccw = cw - 1  # next position counter-clockwise (-1 and down: wrapped)
        found: list[tuple[int, int]] = []
        bound = 0  # the k-th found's distance
        # each side's next distance, taken again only when that side moves
        d_cw, d_ccw = _gap_cw(idents, cw, target), _gap_ccw(idents, ccw, target)
        for step in range(1, n + 1):
            if d_cw <= d_ccw:
                d, j = d_cw, cw
                cw += 1
                if step < n:
                    d_cw = _gap_cw(idents, cw, target)
            else:
                d, j = d_ccw, ccw
                ccw -= 1
                if step < n:
                    d_ccw = _gap_ccw(idents, ccw, target)
            if len(found) >= k and d > bound:
                break  # everything further is further than the k found
            i = order[j % n]
            c = cands[i]
            if c.heard >= heard_since and c.profile.address != exclude:
                found.append((d, i))
                if len(found) == k:
                    bound = d
        found.sort()
        return found[:k]


class PrimaryAttribute:
    """Algorithm 1 with hysteresis: the attribute on which most candidates
    overlap us becomes primary, but only after beating the current one by
    `margin` for `patience` consecutive updates, so it does not flap."""

    __slots__ = ("current", "margin", "patience", "challenger", "streak")

    def __init__(self, margin: float, patience: int) -> None:
        self.current: str | None = None
        self.margin = margin
        self.patience = patience
        self.challenger: str | None = None
        self.streak = 0

    def reset(self, sub: Subscription | None) -> None:
        """A new subscription starts on its first constrained attribute."""
        self.current = sub.attributes[0] if sub is not None else None
        self.challenger = None
        self.streak = 0

    def update(self, counts: dict[str, int]) -> bool:
        """Feed one period's overlap counts; True when the primary changed."""
        if self.current is None or len(counts) < 2:
            return False
        best = max(counts, key=counts.__getitem__)  # ties: first in schema order
        if best == self.current or counts[best] <= counts.get(self.current, 0) * self.margin:
            self.challenger, self.streak = None, 0
            return False
        if best == self.challenger:
            self.streak += 1
        else:
            self.challenger, self.streak = best, 1
        if self.streak >= self.patience:
            self.current, self.challenger, self.streak = best, None, 0
            return True
        return False
