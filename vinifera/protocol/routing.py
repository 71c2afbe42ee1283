"""Where a key, or a range of keys, goes next (paper Algorithm 2).

A node is responsible for the keys in (pred, me]: it is their rendezvous.
Given what a node knows (its routing links), every key has one next step:

- keys in (pred, me]  -> mine (I am the rendezvous);
- keys in (me, succ]  -> my successor (it is the rendezvous);
- any other key k     -> the closest known node at or before k (Chord's
  "closest preceding node": never overshoot, so routing always progresses
  clockwise and terminates). Events' up copies (`next_hop`) always go so.
  The rows of installation (`split`) go so unless the known node after k
  is `overshoot` times nearer k (ContentConfig.rows_overshoot; 1: the
  nearest either side): then to it, overshooting k to come back.

For a range this *showers*: the range is cut where the next hop of its keys
changes (at every known node inside it, and with overshoot also in every gap
between two known nodes a < b, at a + gap * F / (F + 1)) and each part goes
to its next hop. Each node applies the same rule to what it receives, and
every step brings each key nearer its rendezvous: a node sends key k to the
known node x with the least weight W(x) = min(d(x, k), F * d(k, x)), clockwise
distances (F = 0: the first term), and outside (pred, succ] its successor or
its predecessor weighs less than the node itself. So a range ends, piece by
piece, exactly at the rendezvous nodes of its keys. Why overshoot: clockwise
sent the keys just before a subscriber (its identifier lies inside its range)
the long way round the ring, through nodes that wanted none of their events;
with overshoot they come back through the nodes around the keys, which mostly
share the interest (docs/decisions/rows-and-routing.md, "Rows routed to the
nearest node").
Overshooting only to a node much nearer keeps the other rows approaching
their keys from before, as the events' up copies do, so that the two meet
early and paths stay short.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Hashable, Iterable

from vinifera.ranges import IntervalSet
from vinifera.ring import RING_MAX, RING_SIZE, in_arc

MINE = None  # the "next hop" of keys this node is responsible for


def arc_set(a: int, b: int) -> IntervalSet:
    """The clockwise arc (a, b] of the ring as an IntervalSet (it may wrap);
    the whole ring when a == b."""
    if a == b:
        return IntervalSet.of(0, RING_MAX)
    if a < b:
        return IntervalSet.of(a + 1, b)
    parts = [(0, b)]
    if a < RING_MAX:
        parts.append((a + 1, RING_MAX))
    return IntervalSet.from_intervals(parts)


class RouteView:
    """A node's routing knowledge, frozen for one decision: its identifier,
    its ring neighbours and its known links (ident, address), sorted."""

    __slots__ = (
        "me", "pred", "succ", "succ_address", "idents", "addresses", "mine", "succ_arc",
        "overshoot", "_segments", "_starts", "_gaps", "_row_idents", "_row_addresses",
        "_direct",
    )  # fmt: skip

    succ: int | None
    succ_address: Hashable

    def __init__(
        self,
        me: int,
        pred: int | None,
        succ: tuple[int, Hashable] | None,
        known: Iterable[tuple[int, Hashable]],
        overshoot: int = 0,
        next_hops: dict[Hashable, tuple[int, ...]] | None = None,
        rows_lookahead: bool = False,
    ) -> None:
        """`next_hops`: each link's own link identifiers where known (look-
        ahead for next_hop); None routes on our links alone. `rows_lookahead`:
        split also cuts ranges at those two-hop points, each part going to
        the link that reaches its point."""
        self.me = me
        self.overshoot = overshoot  # split's F (module docstring); 0: clockwise
        self.pred = pred
        if succ is not None:
            self.succ, self.succ_address = succ
        else:
            self.succ, self.succ_address = None, None
        pairs = sorted(k for k in known if k[0] != me)
        self.idents = [p[0] for p in pairs]
        self.addresses = [p[1] for p in pairs]
        # Alone (or before the ring closes) a node takes every key it cannot place.
        self.mine = arc_set(pred, me) if pred is not None else IntervalSet.of(0, RING_MAX)
        if succ is None or self.succ == me:
            self.succ_arc = IntervalSet()
        else:
            self.succ_arc = arc_set(me, self.succ) - self.mine  # type: ignore[arg-type]
        self._segments: list[tuple[int, int, Hashable]] | None = None
        self._starts: list[int] = []
        # per link (in idents' order): the clockwise gaps from it to its own
        # links, sorted (None: not known); None without look-ahead
        self._gaps: list[list[int] | None] | None = None
        if next_hops is not None:
            self._gaps = [
                sorted(g for m in hops if (g := (m - ident) % RING_SIZE))
                if (hops := next_hops.get(addr))
                else None
                for ident, addr in pairs
            ]
        # the points split routes rows over: our links, and with rows_lookahead
        # the links of our links not already among them (via the link nearest
        # before each; a point of our own is not one)
        self._row_idents, self._row_addresses = self.idents, self.addresses
        self._direct: RouteView | None = None  # split_direct's view, with two-hop points
        if rows_lookahead and next_hops:
            points = dict(pairs)
            via: dict[int, tuple[int, Hashable]] = {}
            for ident, addr in pairs:
                for m in next_hops.get(addr, ()):
                    if m == me or m in points:
                        continue
                    gap = (m - ident) % RING_SIZE
                    if m not in via or gap < via[m][0]:
                        via[m] = (gap, addr)
            if via:
                merged = sorted([*pairs, *((m, hop) for m, (_, hop) in via.items())],
                                key=lambda p: p[0])  # fmt: skip
                self._row_idents = [p[0] for p in merged]
                self._row_addresses = [p[1] for p in merged]
                self._direct = RouteView(me, pred, succ, pairs, overshoot)

    def is_mine(self, key: int) -> bool:
        return self.pred is None or in_arc(key, self.pred, self.me)

    def _preceding(self, key: int) -> Hashable:
        """The known node at or before key (cyclically)."""
        i = bisect_right(self.idents, key) - 1
        return self.addresses[i]  # i == -1 wraps to the largest identifier

    def next_hop(self, key: int) -> Hashable:
        """Next step for one key: MINE, the successor, or the closest
        preceding known node."""
        if self.pred is None or in_arc(key, self.pred, self.me):
            return MINE
        if self.succ is not None and in_arc(key, self.me, self.succ):
            return self.succ_address
        if not self.idents:
            return MINE
        if self._gaps is not None:
            return self._look_ahead(key)
        return self._preceding(key)

    def up_hop(self, key: int, shortcuts: tuple[list[int], list[Hashable]]) -> Hashable:
        """next_hop for an up copy that may also jump to one of `shortcuts`
        ((identifiers, addresses) sorted by identifier; not links): the
        shortcut nearest before the key, when it is nearer the key than the
        link chosen (or than that link's two-hop point, with look-ahead)."""
        hop = self.next_hop(key)
        idents, addresses = shortcuts
        if not idents or hop is MINE or hop == self.succ_address:
            return hop
        i = bisect_right(idents, key) - 1  # -1 wraps to the largest identifier
        ident, addr = idents[i], addresses[i]
        me = self.me
        span = (key - me) % RING_SIZE
        ahead = (ident - me) % RING_SIZE
        if ahead == 0 or ahead > span:
            return hop
        if span - ahead < self._remaining(key, hop):
            return addr
        return hop

    def _remaining(self, key: int, hop: Hashable) -> int:
        """How far before the key `hop` (one of our links) leaves it: at
        the link, or at its two-hop point with look-ahead."""
        i = self.addresses.index(hop)
        d = (key - self.idents[i]) % RING_SIZE
        g = self._gaps[i] if self._gaps is not None else None
        if g and d:
            return 0 if g[0] >= d else d - g[bisect_right(g, d) - 1]
        return d

    def _look_ahead(self, key: int) -> Hashable:
        """Neighbour-of-neighbour greedy: the link after which the key is
        nearest within two hops: at the link itself, at one of the link's
        links between it and the key, or 0 when the key falls before the
        link's successor (which is then its rendezvous). Only links between
        us and the key qualify (never past it: every hop progresses); ties
        go to the link nearer the key."""
        me = self.me
        span = (key - me) % RING_SIZE
        gaps = self._gaps
        best: Hashable = None
        best_score = best_d = RING_SIZE
        for i, ident in enumerate(self.idents):
            ahead = (ident - me) % RING_SIZE
            if ahead == 0 or ahead > span:
                continue
            d = span - ahead  # from the link to the key
            score = d
            g = gaps[i]  # type: ignore[index]
            if g and d:
                if g[0] >= d:
                    score = 0  # the key is the link's successor's
                else:
                    score = d - g[bisect_right(g, d) - 1]
            if score < best_score or (score == best_score and d < best_d):
                best, best_score, best_d = self.addresses[i], score, d
        if best is None:
            return self._preceding(key)
        return best

    def successor_of(self, key: int) -> Hashable:
        """The known node at or after key (cyclically): the likeliest
        rendezvous of the key among those we know."""
        if self.succ is not None and in_arc(key, self.me, self.succ):
            return self.succ_address
        i = bisect_left(self.idents, key)
        return self.addresses[i % len(self.idents)]

    def split(self, ranges: IntervalSet) -> dict[Hashable, IntervalSet]:
        """Showering: the parts of `ranges` by next hop (MINE included)."""
        out: dict[Hashable, list[tuple[int, int]]] = {}
        mine = ranges & self.mine
        if mine:
            out[MINE] = list(mine.intervals)
        rest = ranges - self.mine
        if self.succ_arc:
            to_succ = rest & self.succ_arc
            if to_succ:
                out.setdefault(self.succ_address, []).extend(to_succ.intervals)
            rest = rest - self.succ_arc
        if rest and not self._row_idents:
            out.setdefault(MINE, []).extend(rest.intervals)
            rest = IntervalSet()
        if rest and self.overshoot:
            segments = self._weighted_segments()
            starts = self._starts
            for lo, hi in rest.intervals:
                # the keys of [lo, hi] by the known node of least weight
                k = bisect_right(starts, lo) - 1
                while k < len(segments) and segments[k][0] <= hi:
                    start, end, hop = segments[k]
                    out.setdefault(hop, []).append((max(lo, start), min(hi, end)))
                    k += 1
        elif rest:
            idents = self._row_idents
            addresses = self._row_addresses
            for lo, hi in rest.intervals:
                # Known nodes inside [lo, hi] cut it; each part goes to the known
                # node at its start, the first part to the node preceding lo.
                i = bisect_right(idents, lo) - 1
                start = lo
                j = i + 1
                while j < len(idents) and idents[j] <= hi:
                    if idents[j] > start:
                        out.setdefault(addresses[i], []).append((start, idents[j] - 1))
                        start = idents[j]
                    i = j
                    j += 1
                out.setdefault(addresses[i], []).append((start, hi))
        return {hop: IntervalSet.from_intervals(parts) for hop, parts in out.items()}

    @property
    def has_two_hop_points(self) -> bool:
        return self._direct is not None

    def split_direct(self, ranges: IntervalSet) -> dict[Hashable, IntervalSet]:
        """split over our links alone (the same as split without two-hop
        points): where a part that split would send back to the node it
        came from goes instead, as plain greedy routing would send it."""
        if self._direct is None:
            return self.split(ranges)
        return self._direct.split(ranges)

    def _weighted_segments(self) -> list[tuple[int, int, Hashable]]:
        """The ring cut into (first key, last key, their next hop), sorted:
        the keys of a gap between two known nodes a < b go to a while
        d(a, k) <= F * d(k, b), that is up to a + gap * F // (F + 1), and the
        rest to b (F = 1: half to each, the half-way key to a)."""
        segments = self._segments
        if segments is not None:
            return segments
        idents, addresses = self._row_idents, self._row_addresses
        n = len(idents)
        factor = self.overshoot
        raw: list[tuple[int, int, Hashable]] = []
        for i in range(n):
            a = idents[i]
            nxt = (i + 1) % n
            gap = RING_SIZE if n == 1 else (idents[nxt] - a) % RING_SIZE
            if gap == 0:
                continue  # two links with one identifier
            half = gap * factor // (factor + 1)  # keys up to a + half go to a
            raw.append((a, a + half, addresses[i]))
            if gap - half > 1:
                raw.append((a + half + 1, a + gap - 1, addresses[nxt]))
        segments = []
        for start, end, hop in raw:  # unwrapped: split where the ring wraps
            start %= RING_SIZE
            end %= RING_SIZE
            if start <= end:
                segments.append((start, end, hop))
            else:
                segments.append((start, RING_MAX, hop))
                segments.append((0, end, hop))
        segments.sort(key=lambda seg: seg[0])
        self._segments = segments
        self._starts = [seg[0] for seg in segments]
        return segments
