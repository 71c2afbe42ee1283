"""Content Routing Table: what each neighbour asked this node for.

One row per (attribute, neighbour): the neighbour's aggregated filters for
that attribute's tree (content/filters.py), as it last sent them, whole. A
row's size is capped, whatever the number of subscribers behind it, so a
node's table is bounded by its number of neighbours: it does not grow with
the network. Rows are soft state: the neighbour keeps a row alive with a
digest every few periods and replaces it when it changes; a row not kept
alive expires. Content a replacement drops stays matchable as `old` for
dropped_expiry (make-before-break: a route that moved elsewhere is being
built while the old one still delivers).

Pure data structure: it decides, the content layer acts on what it returns.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from typing import Final, NamedTuple

from vinifera.protocol.content.filters import Filter, aggregate, digest
from vinifera.ranges import IntervalSet
from vinifera.ring import RING_BITS

# Generations of dropped content a row keeps (each until its own expiry);
# past this many changes within dropped_expiry the oldest goes early.
OLD_GENERATIONS = 3


# Up to this many rows, matching scans them; past it, it asks the RowIndex.
SCAN_ROWS = 16


class Dropped(NamedTuple):
    """Content a row's replacement dropped, matchable until `expiry`."""

    filters: tuple[Filter, ...]
    keys: IntervalSet
    expiry: float


class Row:
    __slots__ = (
        "filters", "keys", "_digest", "expiry", "old", "order", "cells", "plain", "span", "sent",
    )  # fmt: skip

    def __init__(self, filters: tuple[Filter, ...], expiry: float, order: int) -> None:
        self.order = order  # creation number: matching goes in row order
        self.cells: set[int] | None = set()  # RowIndex buckets it is on (None: wide)
        self.old: tuple[Dropped, ...] = ()  # newest last
        self._digest: int | None = None
        self._set(filters)
        self.expiry = expiry  # the neighbour must keep it alive by then
        self.sent = 0.0  # the sender's clock when it sent this row

    def matches(self, key: int, event_keys: dict[str, int], now: float) -> bool:
        if self.keys.contains(key):
            if self.plain:
                return True
            for f in self.filters:
                if f.matches(key, event_keys):
                    return True
        for dropped in self.old:
            if dropped.expiry >= now and dropped.keys.contains(key):
                for f in dropped.filters:
                    if f.matches(key, event_keys):
                        return True
        return False

    def replace(self, filters: tuple[Filter, ...], keep_until: float) -> None:
        old = (*self.old, Dropped(self.filters, self.keys, keep_until))
        self.old = old[-OLD_GENERATIONS:]
        self._set(filters)

    @property
    def digest(self) -> int:
        """The row's fingerprint, computed when a keep-alive first asks
        (most rows change again before one does)."""
        d = self._digest
        if d is None:
            d = self._digest = digest(self.filters)
        return d

    def _set(self, filters: tuple[Filter, ...]) -> None:
        self.filters = filters
        self._digest = None
        self.keys = _keys_of(filters)  # quick reject: the union of the filters' keys
        # keys alone decide (no box): the common case with one attribute
        self.plain = all(not f.box for f in filters)
        self._set_span()

    def _set_span(self) -> None:
        # (lo, hi) when one interval of keys decides alone: matching is then
        # two comparisons (the hot path of every event copy)
        iv = self.keys.intervals
        self.span = iv[0] if self.plain and len(iv) == 1 and not self.old else None

    def forget_dropped(self, now: float) -> None:
        if self.old and self.old[0].expiry < now:
            self.old = tuple(d for d in self.old if d.expiry >= now)
            self._set_span()

    def all_keys(self) -> list[tuple[int, int]]:
        return [iv for s in (self.keys, *(d.keys for d in self.old)) for iv in s.intervals]


class RowIndex:
    """Which rows may hold a key: the ring cut into 2^BITS buckets, each
    listing the rows whose keys (current and dropped) touch it; a row
    spanning more than WIDE buckets sits on one list checked for every key.
    Answers are candidates (a superset): callers check the row. A node that
    many neighbours ask something of (a hub) then looks at a few rows per
    event instead of all. A row whose keys shrink stays in the buckets it
    left until it is replaced or removed: harmless, answers are a superset."""

    BITS: Final = 10
    WIDE: Final = 32
    SHIFT: Final = RING_BITS - BITS

    __slots__ = ("buckets", "wide")

    def __init__(self) -> None:
        self.buckets: dict[int, dict[Hashable, Row]] = {}
        self.wide: dict[Hashable, Row] = {}

    def add(self, nb: Hashable, row: Row) -> None:
        """Index a row, or extend it to the buckets its keys now touch."""
        if row.cells is None:
            return
        shift = self.SHIFT
        cells = set(row.cells)
        for lo, hi in row.all_keys():
            cells.update(range(lo >> shift, (hi >> shift) + 1))
            if len(cells) > self.WIDE:
                self.discard(nb, row)
                row.cells = None
                self.wide[nb] = row
                return
        for c in cells.difference(row.cells):
            self.buckets.setdefault(c, {})[nb] = row
        row.cells = cells

    def discard(self, nb: Hashable, row: Row) -> None:
        if row.cells is None:
            self.wide.pop(nb, None)
            return
        for c in row.cells:
            bucket = self.buckets[c]
            del bucket[nb]
            if not bucket:
                del self.buckets[c]
        row.cells = set()

    def candidates(self, key: int) -> list[tuple[Hashable, Row]]:
        bucket = self.buckets.get(key >> self.SHIFT)
        if bucket is None:
            return list(self.wide.items())
        return [*bucket.items(), *self.wide.items()]


def _keys_of(filters: tuple[Filter, ...]) -> IntervalSet:
    keys = IntervalSet()
    for f in filters:
        keys = keys | f.keys
    return keys


class Crt:
    def __init__(self, max_filters: int, max_intervals: int, max_rows_per_attribute: int) -> None:
        self.max_filters = max_filters
        self.max_intervals = max_intervals
        self.max_rows_per_attribute = max_rows_per_attribute
        # attribute -> neighbour -> row, in order of creation (matching order)
        self.rows: dict[str, dict[Hashable, Row]] = {}
        self._index: dict[str, RowIndex] = {}
        self._next_order = 0
        # (attribute, neighbour) -> (its clock, ours) of its last withdrawal
        self._withdrawn: dict[tuple, tuple[float, float]] = {}
        self.refused = 0  # rows refused by the cap

    def install(
        self,
        attr: str,
        nb: Hashable,
        filters: tuple[Filter, ...],
        expiry: float,
        keep_dropped: float,
        sent: float = 0.0,
    ) -> Row | None:
        """Replace `nb`'s row (filters as sent: they are re-aggregated, so a
        neighbour cannot make a row bigger than the cap); what it drops stays
        matchable until `keep_dropped`. A row the neighbour sent before the
        one we hold (`sent`, its clock) arrived late and is ignored. Returns
        the row if its content changed, else None."""
        filters = aggregate(filters, self.max_filters, self.max_intervals)
        by_nb = self.rows.setdefault(attr, {})
        row = by_nb.get(nb)
        if row is None:
            withdrawn = self._withdrawn.get((attr, nb))
            if withdrawn is not None and sent < withdrawn[0]:
                return None  # sent before a withdrawal that arrived first
            if len(by_nb) >= self.max_rows_per_attribute:
                self.refused += 1
                return None
            row = by_nb[nb] = Row(filters, expiry, self._next_order)
            row.sent = sent
            self._next_order += 1
            self._index_of(attr).add(nb, row)
            return row
        if sent < row.sent:
            return None  # older than the row we hold: arrived late
        row.sent = sent
        row.expiry = max(row.expiry, expiry)
        if row.filters == filters:
            return None
        row.replace(filters, keep_dropped)
        self._index_of(attr).add(nb, row)
        return row

    def adopt(
        self,
        attr: str,
        nb: Hashable,
        filters: tuple[Filter, ...],
        expiry: float,
        keep_dropped: float,
    ) -> Row | None:
        """A row our successor handed us before we move (a Handover), kept in
        `nb`'s name until `nb`'s own rows re-route to us. It is not on `nb`'s
        clock: added to the row `nb` sent us (as a late row it would be
        ignored), and not refused for a withdrawal `nb` sent us earlier."""
        held = self.row(attr, nb)
        if held is not None:
            filters, sent = (*held.filters, *filters), held.sent
        else:
            sent = self._withdrawn.get((attr, nb), (0.0, 0.0))[0]
        return self.install(attr, nb, filters, expiry, keep_dropped, sent)

    def _index_of(self, attr: str) -> RowIndex:
        index = self._index.get(attr)
        if index is None:
            index = self._index[attr] = RowIndex()
        return index

    def keep_alive(self, attr: str, nb: Hashable, fingerprint: int, expiry: float) -> bool:
        """A neighbour's digest of its row: True (and the row lives on) when
        it is the row we hold; False when we hold another or none."""
        row = self.rows.get(attr, {}).get(nb)
        if row is None or row.digest != fingerprint:
            return False
        if expiry > row.expiry:
            row.expiry = expiry
        return True

    def withdraw(self, attr: str, nb: Hashable, sent: float, now: float) -> bool:
        """A neighbour's withdrawal, sent at `sent` (its clock): the row goes
        unless a row sent after it arrived first; a row sent before it that
        arrives late is then ignored (remembered for a while)."""
        row = self.row(attr, nb)
        if row is not None and sent < row.sent:
            return False
        if len(self._withdrawn) >= 4 * self.max_rows_per_attribute:
            self._withdrawn.clear()  # bounded; late rows are rare
        self._withdrawn[(attr, nb)] = (sent, now)
        return self.remove(attr, nb)

    def remove(self, attr: str, nb: Hashable) -> bool:
        by_nb = self.rows.get(attr)
        if not by_nb or nb not in by_nb:
            return False
        self._index[attr].discard(nb, by_nb.pop(nb))
        return True

    def drop_neighbour(self, nb: Hashable) -> list[str]:
        """A neighbour is gone: forget what it asked for; the attributes affected."""
        return [attr for attr in list(self.rows) if self.remove(attr, nb)]

    def expire(self, now: float, withdrawals_kept: float = 0.0) -> list[str]:
        """Drop rows not kept alive; the attributes whose demand changed.
        Rows are bounded by the neighbours, so a scan is cheap. Withdrawals
        are remembered for `withdrawals_kept` (a late row comes well within)."""
        if self._withdrawn:
            horizon = now - withdrawals_kept
            for k in [k for k, (_, t) in self._withdrawn.items() if t < horizon]:
                del self._withdrawn[k]
        changed = []
        for attr, by_nb in self.rows.items():
            for row in by_nb.values():
                row.forget_dropped(now)
            # not kept alive, or emptied and nothing left to match
            dead = [nb for nb, row in by_nb.items()
                    if row.expiry < now or not (row.filters or row.old)]  # fmt: skip
            for nb in dead:
                self._index[attr].discard(nb, by_nb.pop(nb))
            if dead:
                changed.append(attr)
        return changed

    def demand(self, attr: str) -> list[tuple[Hashable, Filter]]:
        """(neighbour, filter) for every filter asked of us in `attr`'s tree
        (a list: a compiled generator costs more than the list it yields)."""
        return [(nb, f) for nb, row in self.rows.get(attr, {}).items() for f in row.filters]

    def attributes(self) -> list[str]:
        return [a for a, by_nb in self.rows.items() if by_nb]

    def row(self, attr: str, nb: Hashable) -> Row | None:
        return self.rows.get(attr, {}).get(nb)

    def matching_neighbours(
        self, attr: str, key: int, event_keys: dict[str, int], now: float, exclude: Hashable
    ) -> list[Hashable]:
        """Neighbours down whose branch this event copy must go, in row order."""
        by_nb = self.rows.get(attr)
        if not by_nb:
            return []
        candidates: Iterable[tuple[Hashable, Row]]
        if len(by_nb) <= SCAN_ROWS:
            candidates = by_nb.items()
        else:
            candidates = self._index[attr].candidates(key)
        found = []
        for nb, row in candidates:
            if nb == exclude or row.expiry < now:
                continue
            span = row.span
            if span is not None:
                if span[0] <= key <= span[1]:
                    found.append((row.order, nb))
            elif row.matches(key, event_keys, now):
                found.append((row.order, nb))
        if len(by_nb) > SCAN_ROWS:
            found.sort()  # row order, as a scan gives: runs stay reproducible
        return [nb for _, nb in found]

    def clipped(self, attr: str, keys: IntervalSet) -> Iterator[tuple[Hashable, tuple, float]]:
        """(neighbour, filters clipped to keys, expiry) of every row that asks
        for some of `keys`: what moves with an identifier in a handover."""
        for nb, row in self.rows.get(attr, {}).items():
            part = tuple(
                Filter(f.keys & keys, f.box, f.depth)
                for f in row.filters
                if f.keys.intersects(keys)
            )
            if part:
                yield nb, part, row.expiry

    def __len__(self) -> int:
        """Filters held, over every row."""
        return sum(len(r.filters) for by_nb in self.rows.values() for r in by_nb.values())

    def summary(self) -> dict:
        return {
            attr: {"rows": len(by_nb), "filters": sum(len(r.filters) for r in by_nb.values())}
            for attr, by_nb in self.rows.items()
        }
