"""Range algebra over identifier-space integers.

Content routing tables aggregate the key ranges requested through one
neighbour; IntervalSet is the exact set algebra for that (merging on
aggregation, subtracting on expiry), and interval_overlap_utility scores how
alike two subscriptions' key ranges are for friend-link selection.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

__all__ = ["IntervalSet", "interval_overlap_utility"]


def _last_starting_by(iv: tuple[tuple[int, int], ...], x: int) -> int:
    """The index of the last interval starting at or before x, or -1:
    bisect_right by start, minus one, with no call per probe (compiled)."""
    lo, hi = 0, len(iv)
    while lo < hi:
        mid = (lo + hi) // 2
        if x < iv[mid][0]:
            hi = mid
        else:
            lo = mid + 1
    return lo - 1


_EMPTY: tuple[tuple[int, int], ...] = ()


def _normalize(pairs: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    # Sort, then merge overlapping or adjacent intervals (next.lo <= prev.hi + 1).
    items = sorted(pairs)
    out: list[tuple[int, int]] = []
    for lo, hi in items:
        if lo > hi:
            raise ValueError(f"inverted interval [{lo}, {hi}]")
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


class IntervalSet:
    """An immutable set of integers held as sorted, disjoint, non-adjacent
    closed intervals ``(lo, hi)``."""

    __slots__ = ("_iv", "_hash")

    def __init__(self) -> None:
        self._iv = _EMPTY
        self._hash: int | None = None

    @classmethod
    def _wrap(cls, iv: tuple[tuple[int, int], ...]) -> IntervalSet:
        # Trusted constructor: iv is already normalized.
        # (not object.__new__(cls): a compiled class refuses it; not cls():
        # compiled, a call through the type object costs a generic call)
        s = IntervalSet()
        s._iv = iv
        s._hash = None
        return s

    @classmethod
    def of(cls, lo: int, hi: int) -> IntervalSet:
        """The single interval [lo, hi]."""
        if lo > hi:
            raise ValueError(f"inverted interval [{lo}, {hi}]")
        return cls._wrap(((lo, hi),))

    @classmethod
    def from_intervals(cls, intervals: Iterable[tuple[int, int]]) -> IntervalSet:
        """Any closed intervals, in any order, overlapping or not."""
        return cls._wrap(_normalize(intervals))

    # -- views ---------------------------------------------------------------

    @property
    def intervals(self) -> tuple[tuple[int, int], ...]:
        return self._iv

    @property
    def is_empty(self) -> bool:
        return not self._iv

    def __bool__(self) -> bool:
        return bool(self._iv)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return iter(self._iv)

    def __len__(self) -> int:
        """Number of intervals (not of integers: see measure)."""
        return len(self._iv)

    @property
    def lo(self) -> int:
        if not self._iv:
            raise ValueError("empty IntervalSet has no lo")
        return self._iv[0][0]

    @property
    def hi(self) -> int:
        if not self._iv:
            raise ValueError("empty IntervalSet has no hi")
        return self._iv[-1][1]

    def measure(self) -> int:
        """How many integers the set covers."""
        iv = self._iv
        if len(iv) == 1:
            return iv[0][1] - iv[0][0] + 1
        return sum(hi - lo + 1 for lo, hi in iv)

    def union_measure(self, other: IntervalSet) -> int:
        """(self | other).measure(), without building the union when both
        are single intervals (the common case when filters are compared)."""
        a, b = self._iv, other._iv
        if len(a) == 1 and len(b) == 1:
            (alo, ahi), (blo, bhi) = a[0], b[0]
            if blo > ahi + 1 or alo > bhi + 1:
                return ahi - alo + bhi - blo + 2
            return max(ahi, bhi) - min(alo, blo) + 1
        return self.union(other).measure()

    # -- membership ----------------------------------------------------------

    def contains(self, x: int) -> bool:
        iv = self._iv
        i = _last_starting_by(iv, x)
        return i >= 0 and x <= iv[i][1]

    def __contains__(self, x: int) -> bool:  # (a compiled class takes no method aliases)
        return self.contains(x)

    def intersects_interval(self, lo: int, hi: int) -> bool:
        """Whether any integer of [lo, hi] is in the set."""
        if lo > hi:
            return False
        iv = self._iv
        # The last interval starting at or before hi is the only candidate:
        # every earlier one ends before it starts.
        i = _last_starting_by(iv, hi)
        return i >= 0 and iv[i][1] >= lo

    def covers_interval(self, lo: int, hi: int) -> bool:
        """Whether every integer of [lo, hi] is in the set."""
        if lo > hi:
            return True
        iv = self._iv
        i = _last_starting_by(iv, lo)
        return i >= 0 and iv[i][1] >= hi

    def covers(self, other: IntervalSet) -> bool:
        """other ⊆ self."""
        cover = self.covers_interval
        return all(cover(lo, hi) for lo, hi in other._iv)

    def intersects(self, other: IntervalSet) -> bool:
        a, b = self._iv, other._iv
        i = j = 0
        na, nb = len(a), len(b)
        while i < na and j < nb:
            alo, ahi = a[i]
            blo, bhi = b[j]
            if ahi < blo:
                i += 1
            elif bhi < alo:
                j += 1
            else:
                return True
        return False

    # -- algebra -------------------------------------------------------------

    def union(self, other: IntervalSet) -> IntervalSet:
        a, b = self._iv, other._iv
        if not b:
            return self
        if not a:
            return other
        if a == b:
            return self
        na, nb = len(a), len(b)
        if na == 1 and nb == 1:  # the common case in filter boxes
            (alo, ahi), (blo, bhi) = a[0], b[0]
            if blo > ahi + 1:
                return IntervalSet._wrap((a[0], b[0]))
            if alo > bhi + 1:
                return IntervalSet._wrap((b[0], a[0]))
            return IntervalSet._wrap(((min(alo, blo), max(ahi, bhi)),))
        out: list[tuple[int, int]] = []
        i = j = 0
        # Merge the two sorted lists, coalescing as we go.
        while i < na or j < nb:
            if j >= nb or (i < na and a[i][0] <= b[j][0]):
                lo, hi = a[i]
                i += 1
            else:
                lo, hi = b[j]
                j += 1
            if out and lo <= out[-1][1] + 1:
                if hi > out[-1][1]:
                    out[-1] = (out[-1][0], hi)
            else:
                out.append((lo, hi))
        return IntervalSet._wrap(tuple(out))

    def intersection(self, other: IntervalSet) -> IntervalSet:
        a, b = self._iv, other._iv
        out: list[tuple[int, int]] = []
        i = j = 0
        na, nb = len(a), len(b)
        while i < na and j < nb:
            alo, ahi = a[i]
            blo, bhi = b[j]
            lo = alo if alo > blo else blo
            hi = ahi if ahi < bhi else bhi
            if lo <= hi:
                out.append((lo, hi))
            if ahi < bhi:
                i += 1
            else:
                j += 1
        # Pieces of disjoint, non-adjacent inputs are themselves non-adjacent.
        return IntervalSet._wrap(tuple(out))

    def difference(self, other: IntervalSet) -> IntervalSet:
        a, b = self._iv, other._iv
        if not a or not b:
            return self
        out: list[tuple[int, int]] = []
        j = 0
        nb = len(b)
        for lo, hi in a:
            # Skip subtrahend intervals entirely left of this one.
            while j < nb and b[j][1] < lo:
                j += 1
            k = j
            cur = lo
            while k < nb and b[k][0] <= hi:
                blo, bhi = b[k]
                if blo > cur:
                    out.append((cur, blo - 1))
                if bhi >= hi:
                    cur = hi + 1
                    break
                cur = bhi + 1
                k += 1
            if cur <= hi:
                out.append((cur, hi))
        return IntervalSet._wrap(tuple(out))

    def __or__(self, other: IntervalSet) -> IntervalSet:
        return self.union(other)

    def __and__(self, other: IntervalSet) -> IntervalSet:
        return self.intersection(other)

    def __sub__(self, other: IntervalSet) -> IntervalSet:
        return self.difference(other)

    # -- identity ------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IntervalSet):
            return NotImplemented
        return self._iv == other._iv

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = hash(self._iv)
        return h

    def __repr__(self) -> str:
        if not self._iv:
            return "IntervalSet()"
        return f"IntervalSet.from_intervals({list(self._iv)!r})"


_BELOW_ONE = math.nextafter(1.0, 0.0)


def interval_overlap_utility(a_lo: int, a_hi: int, b_lo: int, b_hi: int) -> float:
    """|A ∩ B| / |A ∪ B| for closed integer intervals A and B (Jaccard).

    0.0 when disjoint, 1.0 exactly when A == B (a ratio that merely rounds to
    1.0 is reported as the float just below it).
    """
    lo = a_lo if a_lo > b_lo else b_lo
    hi = a_hi if a_hi < b_hi else b_hi
    if hi < lo:
        return 0.0
    inter = hi - lo + 1
    # Overlapping intervals have a contiguous union.
    union = (a_hi if a_hi > b_hi else b_hi) - (a_lo if a_lo < b_lo else b_lo) + 1
    if inter == union:
        return 1.0
    r = inter / union
    return r if r < 1.0 else _BELOW_ONE
