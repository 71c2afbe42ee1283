"""Content Routing Table: what each neighbour asked this node for.

Rows are keyed by (attribute, neighbour); a row holds one entry per
subscription owner that reached us through that neighbour: the owner's full
subscription (matching is exact at every hop) and the key ranges of it that
travelled this way. Entries are soft state: each neighbour refreshes them
every period and they expire when not refreshed. Keeping owners apart
(rather than merging subscriptions into a coarser predicate) makes
de-aggregation exact: a departed owner's entry goes, nothing else changes.

Pure data structure: it decides, the content layer acts on what it returns.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterator, Mapping

from vinifera.ranges import IntervalSet
from vinifera.ring import RING_BITS
from vinifera.subscription import Subscription


class CrtEntry:
    """`old`: keys this neighbour asked for until recently. They stay
    matchable until `old_expiry` (make-before-break: the route that now
    carries them is being built while the old one still delivers)."""

    __slots__ = ("sub", "ranges", "expiry", "heard", "old", "old_expiry", "cells")

    def __init__(self, sub: Subscription, ranges: IntervalSet, expiry: float, heard: float) -> None:
        self.sub = sub
        self.ranges = ranges
        self.expiry = expiry  # the neighbour must refresh by then
        self.heard = heard  # freshest evidence from the owner itself (local time)
        self.old: IntervalSet | None = None
        self.old_expiry = 0.0
        self.cells: set[int] | None = set()  # KeyIndex buckets it is on (None: wide)

    def all_ranges(self) -> IntervalSet:
        return self.ranges if self.old is None else self.ranges | self.old

    def holds(self, key: int, now: float) -> bool:
        if self.ranges.contains(key):
            return True
        return self.old is not None and self.old_expiry >= now and self.old.contains(key)


class KeyIndex:
    """Which entries may hold a key: the ring cut into 2^BITS buckets, each
    listing the entries whose keys (current and old) touch it; an entry
    spanning more than WIDE buckets is kept on one list checked for every
    key. Answers are candidates (a superset); callers check `holds`. It
    turns the per-event scan of every CRT entry into a look at a few.

    Kept up to date entry by entry (a rebuild per change cost a fifth of a
    churn replay). An entry whose keys shrink stays in the buckets it left
    until it is removed: harmless, as answers are a superset. `order` is the
    row's creation number, so sorting by it gives the rows' dict order."""

    BITS = 10
    WIDE = 32
    SHIFT = RING_BITS - BITS

    __slots__ = ("buckets", "wide")

    def __init__(self) -> None:
        # bucket -> (neighbour, owner) -> (order, neighbour, entry)
        self.buckets: dict[int, dict[tuple, tuple[int, Hashable, CrtEntry]]] = {}
        self.wide: dict[tuple, tuple[int, Hashable, CrtEntry]] = {}

    def add(self, order: int, nb: Hashable, owner: Hashable, entry: CrtEntry) -> None:
        """Index an entry, or extend it to the buckets its keys now touch."""
        if entry.cells is None:
            return  # already wide: checked for every key
        item = (order, nb, entry)
        ident = (nb, owner)
        cells = set(entry.cells)
        shift = self.SHIFT
        for lo, hi in entry.all_ranges().intervals:
            cells.update(range(lo >> shift, (hi >> shift) + 1))
            if len(cells) > self.WIDE:
                break
        if len(cells) > self.WIDE:
            self.discard(nb, owner, entry)
            entry.cells = None
            self.wide[ident] = item
            return
        for c in cells.difference(entry.cells):
            self.buckets.setdefault(c, {})[ident] = item
        entry.cells = cells

    def discard(self, nb: Hashable, owner: Hashable, entry: CrtEntry) -> None:
        ident = (nb, owner)
        if entry.cells is None:
            self.wide.pop(ident, None)
            return
        buckets = self.buckets
        for c in entry.cells:
            bucket = buckets[c]
            del bucket[ident]
            if not bucket:
                del buckets[c]
        entry.cells = set()

    def candidates(self, key: int) -> list[tuple[int, Hashable, CrtEntry]]:
        bucket = self.buckets.get(key >> self.SHIFT)
        if bucket is None:
            return list(self.wide.values())
        return [*bucket.values(), *self.wide.values()]


class Crt:
    def __init__(self, max_entries_per_row: int, max_rows_per_attribute: int) -> None:
        self.max_entries_per_row = max_entries_per_row
        self.max_rows_per_attribute = max_rows_per_attribute
        # attribute -> neighbour -> owner -> entry
        self.rows: dict[str, dict[Hashable, dict[Hashable, CrtEntry]]] = {}
        # attribute -> owner -> neighbours it came through (for re-routing an owner)
        self.by_owner: dict[str, dict[Hashable, dict[Hashable, None]]] = {}
        self.refused = 0  # entries refused by the caps
        # attribute -> stabbing index over every entry's keys (see KeyIndex)
        self._index: dict[str, KeyIndex] = {}
        # attribute -> neighbour -> creation number of its row
        self._order: dict[str, dict[Hashable, int]] = {}
        self._next_order = 0

    def upsert(
        self,
        attr: str,
        neighbour: Hashable,
        owner: Hashable,
        sub: Subscription,
        ranges: IntervalSet,
        expiry: float,
        heard: float,
    ) -> bool:
        """Install or refresh an entry. True when it is new, its subscription
        changed or it asks for keys it did not ask for before (what must be
        forwarded at once). Keys no longer asked for linger as `old`."""
        by_nb = self.rows.setdefault(attr, {})
        row = by_nb.get(neighbour)
        if row is None:
            if len(by_nb) >= self.max_rows_per_attribute:
                self.refused += 1
                return False
            row = by_nb[neighbour] = {}
            self._order.setdefault(attr, {})[neighbour] = self._next_order
            self._next_order += 1
        entry = row.get(owner)
        if entry is None:
            if len(row) >= self.max_entries_per_row:
                self.refused += 1
                return False
            entry = row[owner] = CrtEntry(sub, ranges, expiry, heard)
            self.by_owner.setdefault(attr, {}).setdefault(owner, {})[neighbour] = None
            self._add_to_index(attr, neighbour, owner, entry)
            return True
        entry.expiry = expiry
        if heard > entry.heard:
            entry.heard = heard
        if entry.sub == sub and entry.ranges == ranges:
            return False
        before = entry.all_ranges()
        dropped = entry.ranges - ranges
        if dropped:
            entry.old = dropped if entry.old is None else entry.old | dropped
            entry.old_expiry = expiry
        changed_sub = entry.sub != sub
        entry.sub = sub
        entry.ranges = ranges
        if not before.covers(entry.all_ranges()):
            self._add_to_index(attr, neighbour, owner, entry)
        return changed_sub or not before.covers(ranges)

    def _add_to_index(self, attr: str, nb: Hashable, owner: Hashable, entry: CrtEntry) -> None:
        index = self._index.get(attr)
        if index is None:
            index = self._index[attr] = KeyIndex()
        index.add(self._order[attr][nb], nb, owner, entry)

    def remove(self, attr: str, neighbour: Hashable, owner: Hashable) -> bool:
        row = self.rows.get(attr, {}).get(neighbour)
        if row is None or owner not in row:
            return False
        self._index[attr].discard(neighbour, owner, row.pop(owner))
        if not row:
            del self.rows[attr][neighbour]
            del self._order[attr][neighbour]
        owners = self.by_owner[attr]
        nbs = owners[owner]
        nbs.pop(neighbour, None)
        if not nbs:
            del owners[owner]
        return True

    def expire(self, now: float, owner_silent_since: float) -> list[tuple[str, Hashable]]:
        """Drop entries not refreshed by `now`, or whose owner has not been
        heard of since `owner_silent_since`; returns the (attribute, owner)
        pairs affected, which the caller re-routes (or withdraws)."""
        dead = []
        shrunk = []
        for attr, by_nb in self.rows.items():
            for nb, row in by_nb.items():
                for owner, entry in row.items():
                    if entry.expiry < now or entry.heard < owner_silent_since:
                        dead.append((attr, nb, owner))
                    elif entry.old is not None and entry.old_expiry < now:
                        entry.old = None
                        shrunk.append((attr, owner))
        for attr, nb, owner in dead:
            self.remove(attr, nb, owner)
        return list(dict.fromkeys([(attr, owner) for attr, _, owner in dead] + shrunk))

    def drop_neighbour(self, neighbour: Hashable) -> list[tuple[str, Hashable]]:
        """A neighbour is gone: forget what it asked for."""
        gone = []
        for attr, by_nb in self.rows.items():
            row = by_nb.get(neighbour)
            if row:
                gone.extend((attr, neighbour, owner) for owner in row)
        for attr, nb, owner in gone:
            self.remove(attr, nb, owner)
        return list(dict.fromkeys((attr, owner) for attr, _, owner in gone))

    def drop_owner(self, owner: Hashable) -> list[tuple[str, Hashable]]:
        """A subscriber is gone: forget its entries on every row."""
        gone = []
        for attr, owners in self.by_owner.items():
            for nb in owners.get(owner, ()):
                gone.append((attr, nb, owner))
        for attr, nb, owner in gone:
            self.remove(attr, nb, owner)
        return list(dict.fromkeys((attr, owner) for attr, _, owner in gone))

    def owner_demand(self, attr: str, owner: Hashable) -> tuple[Subscription | None, IntervalSet]:
        """All key ranges an owner asked for through any neighbour, and its
        subscription (the freshest entry's)."""
        sub = None
        ranges = IntervalSet()
        best = -math.inf
        for nb in self.by_owner.get(attr, {}).get(owner, ()):
            entry = self.rows[attr][nb][owner]
            ranges = ranges | entry.all_ranges()
            if entry.heard > best:
                best, sub = entry.heard, entry.sub
        return sub, ranges

    def owner_heard(self, attr: str, owner: Hashable) -> float:
        """Freshest evidence of the owner among its entries (-inf if none)."""
        best = -math.inf
        rows = self.rows.get(attr, {})
        for nb in self.by_owner.get(attr, {}).get(owner, ()):
            heard = rows[nb][owner].heard
            if heard > best:
                best = heard
        return best

    def owners(self, attr: str) -> list[Hashable]:
        return list(self.by_owner.get(attr, {}))

    def attributes(self) -> list[str]:
        return [a for a, owners in self.by_owner.items() if owners]

    def matching_neighbours(
        self, attr: str, key: int, values: Mapping, now: float, exclude: Hashable
    ) -> list[Hashable]:
        """Neighbours down whose branch this event must go: some entry's
        ranges hold the event's key and its subscription matches in full."""
        index = self._index.get(attr)
        if index is None:
            return []
        found: dict[int, Hashable] = {}
        for order, nb, entry in index.candidates(key):
            if (
                order not in found
                and nb != exclude
                and entry.expiry >= now
                and entry.holds(key, now)
                and entry.sub.matches(values)
            ):
                found[order] = nb
        # row order, as a scan of the rows would give: runs stay reproducible
        return [found[k] for k in sorted(found)]

    def entries_in(self, attr: str, keys: IntervalSet) -> Iterator[tuple]:
        """(neighbour, owner, entry-part) for every entry overlapping keys:
        what moves with an identifier during a handover."""
        for nb, row in self.rows.get(attr, {}).items():
            for owner, entry in row.items():
                part = entry.all_ranges() & keys
                if part:
                    yield nb, owner, entry.sub, part, entry.expiry, entry.heard

    def __len__(self) -> int:
        return sum(len(row) for by_nb in self.rows.values() for row in by_nb.values())

    def summary(self) -> dict:
        return {
            attr: {"rows": len(by_nb), "entries": sum(len(r) for r in by_nb.values())}
            for attr, by_nb in self.rows.items()
        }
