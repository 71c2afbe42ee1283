"""Where a key, or a range of keys, goes next (paper Algorithm 2).

A node is responsible for the keys in (pred, me]: it is their rendezvous.
Given what a node knows (its routing links), every key has one next step:

- keys in (pred, me]  -> mine (I am the rendezvous);
- keys in (me, succ]  -> my successor (it is the rendezvous);
- any other key k     -> the closest known node at or before k (Chord's
  "closest preceding node": never overshoot, so routing always progresses
  clockwise and terminates).

For a range this *showers*: the range is split at every known node inside
it, each part goes to the known node at its start, and the part before the
first known node goes greedily toward the range start. Each node applies
the same rule to what it receives, so a range ends, piece by piece, exactly
at the rendezvous nodes of its keys.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Hashable, Iterable

from vinifera.ranges import IntervalSet
from vinifera.ring import RING_MAX, in_arc

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

    __slots__ = ("me", "pred", "succ", "succ_address", "idents", "addresses", "mine", "succ_arc")

    succ: int | None
    succ_address: Hashable

    def __init__(
        self,
        me: int,
        pred: int | None,
        succ: tuple[int, Hashable] | None,
        known: Iterable[tuple[int, Hashable]],
    ) -> None:
        self.me = me
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
        return self._preceding(key)

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
        if rest and not self.idents:
            out.setdefault(MINE, []).extend(rest.intervals)
            rest = IntervalSet()
        idents = self.idents
        addresses = self.addresses
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
