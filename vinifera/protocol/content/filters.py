"""Filters: what a CRT row asks for, in a size that does not grow with the
number of subscribers behind it.

A filter is a box in key space: the routing keys it asks for (the part of
one attribute's ring routed this way) and, on other attributes, the key
sets an event's values must fall in. An event copy goes down a row when one
of its filters holds the copy's key and the event's keys on the box's
attributes. A subscriber's own filter is its subscription in key space; a
relay's row toward the next hop is the union of what it routes there,
aggregated:

- exactly, where a union of boxes is a box: filters with the same box
  merge their routing keys, and filters with the same routing keys whose
  boxes differ on one attribute merge that attribute (with one attribute,
  every row folds into one filter, whatever the number of subscribers);
- past `cap` filters per row, approximately: the two filters whose merge
  adds the least volume are replaced by their union per attribute (an
  attribute either leaves unconstrained becomes unconstrained). An
  approximate row may attract events nobody below wants (traffic), never
  lose one: the union covers both.

`depth` is the number of hops from the nearest subscriber a filter stands
for: a loop breaker (see docs/protocol.md, "Soft state").
Pure functions over immutable values.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any, NamedTuple

from vinifera.ranges import IntervalSet
from vinifera.ring import RING_SIZE
from vinifera.subscription import Subscription

Box = tuple[tuple[str, IntervalSet], ...]  # (attribute, key set), attribute names sorted


class Filter(NamedTuple):
    keys: IntervalSet  # routing keys asked for through this path
    box: Box  # other constraints; () matches every event
    depth: int  # hops from the nearest subscriber behind it

    def matches(self, key: int, event_keys: dict[str, int]) -> bool:
        if not self.keys.contains(key):
            return False
        for attr, allowed in self.box:
            k = event_keys.get(attr)
            if k is None or not allowed.contains(k):
                return False
        return True


def own_filter(sub: Subscription, attr: str, keys: IntervalSet, value_routing: bool) -> Filter:
    """A subscriber's own filter for the tree of `attr`. With value
    routing the routing keys are the attribute's own key range, so the box
    leaves that attribute out (it would only repeat `keys`)."""
    box = tuple(
        sorted(
            (name, IntervalSet.of(lo, hi))
            for name, (lo, hi) in sub.key_ranges.items()
            if not (value_routing and name == attr)
        )
    )
    return Filter(keys, box, 0)


def sort_key(f: Filter) -> tuple:
    return (f.keys.intervals, tuple((a, s.intervals) for a, s in f.box), f.depth)


def digest(filters: Iterable[Filter]) -> int:
    """A 64-bit fingerprint of a row (filters in canonical order), the same
    in every process: the keep-alive compares it instead of the row."""
    text = repr([sort_key(f) for f in filters]).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big")


# ----------------------------------------------------------------- aggregation


def aggregate(filters: Iterable[Filter], cap: int, max_intervals: int) -> tuple[Filter, ...]:
    """The filters as one row: exact merges first, then approximate ones
    down to `cap` filters; canonical order (so equal rows compare equal)."""
    filters = list(filters)
    if not filters:
        return ()
    if all(not f.box for f in filters):  # one attribute: the keys say it all
        if len(filters) == 1:
            return (_cap_intervals(filters[0], max_intervals),)
        keys = IntervalSet.from_intervals([iv for f in filters for iv in f.keys.intervals])
        depth = min(f.depth for f in filters)
        return (_cap_intervals(Filter(keys, (), depth), max_intervals),)
    merged = _merge_same_box(filters)
    if len(merged) > 1:
        merged = _merge_one_attribute_apart(merged)
    if len(merged) > cap:
        merged = _merge_closest(merged, cap)
    out = [_cap_intervals(f, max_intervals) for f in merged]
    out.sort(key=sort_key)
    return tuple(out)


def _merge_same_box(filters: Iterable[Filter]) -> list[Filter]:
    by_box: dict[Box, Filter] = {}
    for f in filters:
        cur = by_box.get(f.box)
        if cur is None:
            by_box[f.box] = f
        else:
            by_box[f.box] = Filter(cur.keys | f.keys, f.box, min(cur.depth, f.depth))
    return list(by_box.values())


def _merge_one_attribute_apart(filters: list[Filter]) -> list[Filter]:
    """Same routing keys, boxes equal but on one attribute: one filter with
    that attribute's sets united. Tried attribute by attribute."""
    attrs = sorted({a for f in filters for a, _ in f.box})
    for attr in attrs:
        groups: dict[tuple, Filter] = {}
        for f in filters:
            # the box without attr; unconstrained on attr (own None), a
            # filter merges only with an equal box
            own: Any = None
            rest = []
            for a, s in f.box:
                if a == attr:
                    own = s
                else:
                    rest.append((a, s.intervals))
            k = (f.keys.intervals, tuple(rest), None if own is None else attr)
            cur = groups.get(k)
            if cur is None:
                groups[k] = f
            else:
                box = tuple(
                    (a, s | own) if a == attr else (a, s) for a, s in cur.box
                )  # fmt: skip
                groups[k] = Filter(cur.keys, box, min(cur.depth, f.depth))
        filters = list(groups.values())
        if len(filters) == 1:
            break
    return filters


def union(a: Filter, b: Filter) -> Filter:
    """The smallest filter (in this representation) covering both."""
    other = dict(b.box)
    box = tuple((attr, s | other[attr]) for attr, s in a.box if attr in other)
    return Filter(a.keys | b.keys, box, min(a.depth, b.depth))


def _volume(f: Filter) -> float:
    v = f.keys.measure() / RING_SIZE
    for _, s in f.box:
        v *= s.measure() / RING_SIZE
    return v


def _union_volume(a: Filter, b: Filter) -> float:
    """_volume(union(a, b)), the same float, without building the union."""
    other = dict(b.box)
    v = a.keys.union_measure(b.keys) / RING_SIZE
    for attr, s in a.box:
        t = other.get(attr)
        if t is not None:
            v *= s.union_measure(t) / RING_SIZE
    return v


def _merge_closest(filters: list[Filter], cap: int) -> list[Filter]:
    """Greedy: merge the pair whose union adds the least volume (the
    first such pair on a tie), until `cap` remain. Candidates are
    neighbours in canonical order (filters of one row lie on the same arc,
    so neighbours are alike). Each pair's cost is computed once: a merge
    changes only the two pairs around it (recomputing every pair at every
    merge made this O(n^2) unions, most of a 3-attribute run's CPU), and
    only the chosen pair's union is built."""
    items = sorted(filters, key=sort_key)
    vols = [_volume(f) for f in items]

    def cost(i: int) -> float:
        return _union_volume(items[i], items[i + 1]) - vols[i] - vols[i + 1]

    costs = [cost(i) for i in range(len(items) - 1)]
    while len(items) > cap:
        best = costs.index(min(costs))  # the first of equals
        merged = union(items[best], items[best + 1])
        items[best : best + 2] = [merged]
        vols[best : best + 2] = [_volume(merged)]
        del costs[best]
        if best < len(costs):
            costs[best] = cost(best)
        if best > 0:
            costs[best - 1] = cost(best - 1)
    return items


def _cap_intervals(f: Filter, max_intervals: int) -> Filter:
    keys = cap_intervals(f.keys, max_intervals)
    box = f.box
    for _, s in box:
        if len(s) > max_intervals:
            box = tuple((a, cap_intervals(s, max_intervals)) for a, s in box)
            break
    if keys is f.keys and box is f.box:
        return f
    return Filter(keys, box, f.depth)


def cap_intervals(s: IntervalSet, limit: int) -> IntervalSet:
    """At most `limit` intervals: the smallest gaps are filled (a superset)."""
    iv = s.intervals
    if len(iv) <= limit:
        return s
    gaps = sorted(range(len(iv) - 1), key=lambda i: (iv[i + 1][0] - iv[i][1], i))
    fill = set(gaps[: len(iv) - limit])
    out = []
    lo = iv[0][0]
    for i in range(len(iv)):
        if i not in fill:
            out.append((lo, iv[i][1]))
            if i + 1 < len(iv):
                lo = iv[i + 1][0]
    return IntervalSet.from_intervals(out)
