"""CRT rows and their filters: aggregation that never loses a subscriber's
event, rows that stay the same size whatever the number of subscribers,
soft-state keep-alives, expiry and make-before-break."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from vinifera.protocol.content.crt import OLD_GENERATIONS, Crt
from vinifera.protocol.content.filters import (
    Filter,
    _merge_closest,
    _volume,
    aggregate,
    cap_intervals,
    digest,
    sort_key,
    union,
)
from vinifera.ranges import IntervalSet
from vinifera.ring import RING_MAX

ATTRS = ("a0", "a1", "a2")


def box(**ranges) -> tuple:
    return tuple(sorted((a, IntervalSet.of(lo, hi)) for a, (lo, hi) in ranges.items()))


def f(lo, hi, depth=1, **ranges) -> Filter:
    return Filter(IntervalSet.of(lo, hi), box(**ranges), depth)


def covers(filters, key, event_keys) -> bool:
    return any(x.matches(key, event_keys) for x in filters)


# ----------------------------------------------------------------- filters


def test_one_attribute_folds_any_number_of_subscribers_into_one_filter():
    rng = random.Random(1)
    many = []
    for _ in range(1000):
        lo = rng.randrange(0, 10**6)
        many.append(f(lo, lo + rng.randrange(1, 5000), depth=rng.randrange(1, 9)))
    (row,) = aggregate(many, cap=32, max_intervals=10**6)
    assert row.keys == IntervalSet.from_intervals((x.keys.lo, x.keys.hi) for x in many)
    assert row.depth == min(x.depth for x in many)


def test_same_keys_and_one_differing_attribute_merge_exactly():
    """The baseline's rows: every filter asks for the attribute's one key;
    their value ranges on that attribute unite without loss."""
    rows = aggregate([f(7, 7, a0=(0, 10)), f(7, 7, a0=(50, 60)), f(7, 7, a0=(5, 20))], 32, 64)
    united = IntervalSet.from_intervals([(0, 20), (50, 60)])
    assert rows == (Filter(IntervalSet.of(7, 7), (("a0", united),), 1),)
    assert covers(rows, 7, {"a0": 55}) and not covers(rows, 7, {"a0": 30})


def test_distinct_boxes_stay_apart_until_the_cap():
    filters = [f(0, 100, a1=(10 * i, 10 * i + 5)) for i in range(10)]
    row = aggregate(filters, cap=32, max_intervals=64)
    assert len(row) == 1  # same keys, boxes one attribute apart: still exact
    assert not covers(row, 50, {"a1": 7})
    two_dims = [f(0, 100, a1=(10 * i, 10 * i + 5), a2=(i, i)) for i in range(10)]
    assert len(aggregate(two_dims, cap=32, max_intervals=64)) == 10
    assert len(aggregate(two_dims, cap=4, max_intervals=64)) == 4


boxes = st.dictionaries(
    st.sampled_from(ATTRS[1:]),
    st.tuples(st.integers(0, 1000), st.integers(0, 1000)).map(lambda t: (min(t), max(t))),
    max_size=2,
)
filters = st.builds(
    lambda lo, w, b, d: f(lo, lo + w, d, **b),
    st.integers(0, 1000),
    st.integers(0, 300),
    boxes,
    st.integers(1, 5),
)
points = st.tuples(st.integers(0, 1300), st.integers(0, 1000), st.integers(0, 1000))


@settings(max_examples=200, deadline=None)
@given(st.lists(filters, min_size=1, max_size=40), st.integers(1, 8), st.lists(points, max_size=30))
def test_aggregation_never_loses_an_event_a_filter_wanted(fs, cap, probes):
    row = aggregate(fs, cap, max_intervals=4)
    assert len(row) <= cap
    assert min(x.depth for x in row) == min(x.depth for x in fs)
    for key, v1, v2 in probes + [(x.keys.lo, 0, 0) for x in fs]:
        event_keys = {"a1": v1, "a2": v2}
        if covers(fs, key, event_keys):
            assert covers(row, key, event_keys)


@settings(max_examples=100, deadline=None)
@given(st.lists(filters, min_size=1, max_size=20), st.randoms())
def test_a_row_is_canonical_whatever_the_order_of_its_filters(fs, rnd):
    shuffled = list(fs)
    rnd.shuffle(shuffled)
    a, b = aggregate(fs, 6, 8), aggregate(shuffled, 6, 8)
    assert a == b and digest(a) == digest(b)


def _greedy_recomputing_every_pair(fs: list, cap: int) -> list:
    """The approximate merge as first written: every adjacent pair's union
    recomputed at every merge (O(n^2) unions), the first cheapest merged."""
    items = sorted(fs, key=sort_key)
    while len(items) > cap:
        costs = [
            _volume(union(items[i], items[i + 1])) - _volume(items[i]) - _volume(items[i + 1])
            for i in range(len(items) - 1)
        ]
        i = costs.index(min(costs))
        items[i : i + 2] = [union(items[i], items[i + 1])]
    return items


@settings(max_examples=200, deadline=None)
@given(st.lists(filters, min_size=1, max_size=40, unique=True), st.integers(1, 8))
def test_the_approximate_merge_picks_what_recomputing_every_pair_picks(fs, cap):
    # _merge_closest keeps each pair's union and recomputes only the two
    # pairs a merge touches: same merges, same row (runs stay byte-identical)
    assert _merge_closest(fs, cap) == _greedy_recomputing_every_pair(fs, cap)


def test_digests_differ_when_rows_differ_and_are_64_bits():
    a = aggregate([f(0, 10)], 4, 4)
    b = aggregate([f(0, 11)], 4, 4)
    assert digest(a) != digest(b)
    assert 0 <= digest(a) <= RING_MAX


def test_capping_intervals_fills_the_smallest_gaps():
    s = IntervalSet.from_intervals([(0, 1), (3, 4), (100, 101), (104, 105), (1000, 1001)])
    assert cap_intervals(s, 3) == IntervalSet.from_intervals([(0, 4), (100, 105), (1000, 1001)])
    assert cap_intervals(s, 10) is s


# ----------------------------------------------------------------- the table


def crt(**kw) -> Crt:
    return Crt(kw.get("max_filters", 8), kw.get("max_intervals", 16), kw.get("max_rows", 8))


def test_a_row_is_replaced_whole_and_unchanged_rows_report_nothing():
    t = crt()
    assert t.install("a0", "n1", (f(0, 10),), expiry=3.0, keep_dropped=3.0) is not None
    assert t.install("a0", "n1", (f(0, 10),), expiry=4.0, keep_dropped=4.0) is None
    assert t.row("a0", "n1").expiry == 4.0
    assert t.install("a0", "n1", (f(20, 30),), expiry=5.0, keep_dropped=5.0) is not None
    assert [x.keys for x in t.row("a0", "n1").filters] == [IntervalSet.of(20, 30)]


def test_dropped_content_stays_matchable_until_its_expiry_and_not_after():
    t = crt()
    t.install("a0", "n1", (f(0, 10),), expiry=3.0, keep_dropped=3.0)
    t.install("a0", "n1", (f(20, 30),), expiry=4.0, keep_dropped=4.0)  # the route to 0-10 moved
    assert t.matching_neighbours("a0", 5, {}, now=4.0, exclude=None) == ["n1"]
    t.keep_alive("a0", "n1", digest(t.row("a0", "n1").filters), expiry=9.0)
    t.expire(4.5)
    assert t.matching_neighbours("a0", 5, {}, now=4.5, exclude=None) == []
    assert t.matching_neighbours("a0", 25, {}, now=4.5, exclude=None) == ["n1"]


def test_dropped_content_does_not_live_longer_by_later_changes():
    t = crt()
    t.install("a0", "n1", (f(0, 10),), expiry=3.0, keep_dropped=3.0)
    for i in range(1, 2 * OLD_GENERATIONS):
        t.install("a0", "n1", (f(100 * i, 100 * i + 10),), expiry=3.0 + i, keep_dropped=3.0 + i)
    # 0-10 was dropped at t = 1 with expiry 4: later replacements keep it no longer
    assert t.matching_neighbours("a0", 5, {}, now=4.5, exclude=None) == []
    assert len(t.row("a0", "n1").old) <= OLD_GENERATIONS


def test_keep_alive_matches_the_digest_of_the_row_held():
    t = crt()
    t.install("a0", "n1", (f(0, 10),), expiry=3.0, keep_dropped=3.0)
    held = digest(t.row("a0", "n1").filters)
    assert t.keep_alive("a0", "n1", held, expiry=9.0)
    assert t.row("a0", "n1").expiry == 9.0
    assert not t.keep_alive("a0", "n1", held ^ 1, expiry=10.0)  # another row: ask for it
    assert not t.keep_alive("a0", "n2", held, expiry=10.0)  # no row at all
    assert t.expire(9.5) == ["a0"] and t.row("a0", "n1") is None


def test_a_neighbour_cannot_make_a_row_bigger_than_the_cap():
    t = crt(max_filters=4)
    many = tuple(f(0, 100, a1=(i, i), a2=(i, i)) for i in range(500))
    t.install("a0", "evil", many, expiry=3.0, keep_dropped=3.0)
    assert len(t.row("a0", "evil").filters) == 4
    assert len(t) == 4


def test_rows_per_attribute_are_capped_and_refusals_counted():
    t = crt(max_rows=2)
    for nb in ("n1", "n2", "n3"):
        t.install("a0", nb, (f(0, 10),), expiry=3.0, keep_dropped=3.0)
    assert list(t.rows["a0"]) == ["n1", "n2"] and t.refused == 1


def test_matching_follows_row_order_skips_the_sender_and_checks_the_box():
    t = crt()
    t.install("a0", "n2", (f(0, 10, a1=(0, 5)),), expiry=3.0, keep_dropped=3.0)
    t.install("a0", "n1", (f(0, 10),), expiry=3.0, keep_dropped=3.0)
    t.install("a0", "n3", (f(0, 10, a1=(6, 9)),), expiry=3.0, keep_dropped=3.0)
    assert t.matching_neighbours("a0", 5, {"a1": 3}, 1.0, exclude=None) == ["n2", "n1"]
    assert t.matching_neighbours("a0", 5, {"a1": 3}, 1.0, exclude="n2") == ["n1"]
    assert t.matching_neighbours("a0", 11, {"a1": 3}, 1.0, exclude=None) == []
    assert t.drop_neighbour("n1") == ["a0"]
    assert t.matching_neighbours("a0", 5, {"a1": 7}, 1.0, exclude=None) == ["n3"]


def test_clipped_rows_are_what_moves_in_a_handover():
    t = crt()
    t.install("a0", "n1", (f(0, 100, a1=(1, 2)),), expiry=3.0, keep_dropped=3.0)
    t.install("a0", "n2", (f(200, 300),), expiry=3.0, keep_dropped=3.0)
    moved = list(t.clipped("a0", IntervalSet.of(50, 250)))
    assert [(nb, [x.keys for x in fs]) for nb, fs, _ in moved] == [
        ("n1", [IntervalSet.of(50, 100)]),
        ("n2", [IntervalSet.of(200, 250)]),
    ]


def test_a_handed_over_row_adds_to_what_its_neighbour_sent_and_a_later_row_replaces_it():
    """A mover adopts its successor's rows in their neighbours' names. The
    neighbour's own row here is on the neighbour's clock (sent 5.0) and the
    handover is not: it is added to that row, not ignored as a late one; the
    neighbour's next row replaces both, the handed keys kept as dropped."""
    t = crt()
    t.install("a0", "n1", (f(0, 10),), expiry=9.0, keep_dropped=9.0, sent=5.0)
    assert t.adopt("a0", "n1", (f(50, 60),), expiry=9.0, keep_dropped=7.0) is not None
    row = t.row("a0", "n1")
    assert row.matches(5, {"a0": 5}, 6.0) and row.matches(55, {"a0": 55}, 6.0)
    t.install("a0", "n1", (f(0, 10),), expiry=12.0, keep_dropped=8.0, sent=6.0)
    assert row.matches(55, {"a0": 55}, 7.5) and not row.matches(55, {"a0": 55}, 8.5)
    # nor is it refused for a withdrawal the neighbour sent us before
    t.withdraw("a0", "n2", sent=5.0, now=5.1)
    assert t.adopt("a0", "n2", (f(50, 60),), expiry=9.0, keep_dropped=7.0) is not None
    assert t.install("a0", "n2", (f(0, 10),), expiry=9.0, keep_dropped=9.0, sent=4.0) is None


def test_a_row_that_arrives_after_a_newer_one_is_ignored():
    """Datagrams reorder: rows carry their sender's clock, the newest wins."""
    t = crt()
    t.install("a0", "n1", (f(0, 10),), expiry=9.0, keep_dropped=9.0, sent=2.0)
    assert t.install("a0", "n1", (f(50, 60),), expiry=9.0, keep_dropped=9.0, sent=1.0) is None
    assert [x.keys for x in t.row("a0", "n1").filters] == [IntervalSet.of(0, 10)]
    assert t.install("a0", "n1", (f(50, 60),), expiry=9.0, keep_dropped=9.0, sent=3.0) is not None


def test_a_withdrawal_wins_over_older_rows_and_loses_to_newer_ones():
    t = crt()
    t.install("a0", "n1", (f(0, 10),), expiry=9.0, keep_dropped=9.0, sent=5.0)
    assert not t.withdraw("a0", "n1", sent=4.0, now=5.1)  # the row is newer
    assert t.withdraw("a0", "n1", sent=6.0, now=6.1)
    # a row sent before the withdrawal, arriving after it: ignored
    assert t.install("a0", "n1", (f(0, 10),), expiry=9.0, keep_dropped=9.0, sent=5.5) is None
    assert t.row("a0", "n1") is None
    # one sent after it: taken; and withdrawals are forgotten in time
    assert t.install("a0", "n1", (f(0, 10),), expiry=9.0, keep_dropped=9.0, sent=7.0) is not None
    t.withdraw("a0", "n2", sent=8.0, now=8.0)
    t.expire(20.0, withdrawals_kept=7.0)
    assert t.install("a0", "n2", (f(0, 10),), expiry=29.0, keep_dropped=29.0, sent=1.0) is not None
