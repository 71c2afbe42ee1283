"""The interval-set algebra against a Python-set model, and the link utility."""

from functools import reduce

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vinifera.ranges import IntervalSet, interval_overlap_utility
from vinifera.ring import RING_MAX

U = 40  # small universe [0, U) so random sets overlap, touch and nest often


@st.composite
def intervals(draw, lo=0, hi=U - 1):
    a = draw(st.integers(lo, hi))
    b = draw(st.integers(lo, hi))
    return (min(a, b), max(a, b))


interval_lists = st.lists(intervals(), max_size=6)
sets = interval_lists.map(IntervalSet.from_intervals)


def model(s: IntervalSet) -> set[int]:
    return {x for lo, hi in s for x in range(lo, hi + 1)}


def model_of(pairs) -> set[int]:
    return {x for lo, hi in pairs for x in range(lo, hi + 1)}


def assert_normal(s: IntervalSet) -> None:
    iv = s.intervals
    assert isinstance(iv, tuple)
    for lo, hi in iv:
        assert lo <= hi
    for (_, h1), (l2, _) in zip(iv, iv[1:], strict=False):
        assert l2 > h1 + 1  # sorted, disjoint and non-adjacent


@settings(max_examples=200)
@given(interval_lists)
def test_normalization(pairs):
    s = IntervalSet.from_intervals(pairs)
    assert_normal(s)
    assert model(s) == model_of(pairs)
    # The normal form is canonical: equal sets are equal objects.
    assert s == IntervalSet.from_intervals(reversed(pairs))
    assert hash(s) == hash(IntervalSet.from_intervals(sorted(pairs)))


@settings(max_examples=200)
@given(sets, sets)
def test_algebra_matches_set_model(a, b):
    ma, mb = model(a), model(b)
    for got, want in [(a | b, ma | mb), (a & b, ma & mb), (a - b, ma - mb), (b - a, mb - ma)]:
        assert_normal(got)
        assert model(got) == want
    assert a.union(b) == a | b and a.intersection(b) == a & b and a.difference(b) == a - b
    assert a.covers(b) == (mb <= ma)
    assert a.intersects(b) == bool(ma & mb) == b.intersects(a)
    assert a.measure() == len(ma)
    assert a.union_measure(b) == len(ma | mb) == b.union_measure(a)
    assert a.is_empty == (not ma) == (not a)


@settings(max_examples=200)
@given(sets, intervals(-3, U + 3))
def test_point_and_interval_queries(a, iv):
    ma = model(a)
    lo, hi = iv
    for x in range(-2, U + 2):
        assert (x in a) == (x in ma) == a.contains(x)
    span = set(range(lo, hi + 1))
    assert a.intersects_interval(lo, hi) == bool(span & ma)
    assert a.covers_interval(lo, hi) == (span <= ma)
    if ma:
        assert (a.lo, a.hi) == (min(ma), max(ma))


@settings(max_examples=200)
@given(st.lists(sets, min_size=1, max_size=6))
def test_aggregation_never_loses_a_range(parts):
    agg = reduce(IntervalSet.union, parts, IntervalSet())
    for p in parts:
        assert agg.covers(p)
    assert model(agg) == set().union(*map(model, parts))
    # De-aggregation: removing one part keeps everything another part needs.
    rest = agg - parts[0]
    for p in parts[1:]:
        assert (rest | parts[0]).covers(p)
        assert not rest.intersects(parts[0])


def test_constructors_and_views():
    empty = IntervalSet()
    assert not empty and empty.is_empty and empty.measure() == 0 and empty.intervals == ()
    assert empty == IntervalSet.from_intervals([])
    with pytest.raises(ValueError):
        _ = empty.lo
    with pytest.raises(ValueError):
        _ = empty.hi
    with pytest.raises(ValueError):
        IntervalSet.of(3, 2)
    with pytest.raises(ValueError):
        IntervalSet.from_intervals([(0, 1), (5, 4)])
    s = IntervalSet.from_intervals([(5, 9), (0, 2), (3, 3), (11, 12)])
    assert s.intervals == ((0, 3), (5, 9), (11, 12))
    assert list(s) == [(0, 3), (5, 9), (11, 12)]
    assert (s.lo, s.hi, s.measure()) == (0, 12, 11)
    assert eval(repr(s)) == s  # repr is constructor syntax
    assert repr(empty) == "IntervalSet()"
    full = IntervalSet.of(0, RING_MAX)
    assert full.measure() == RING_MAX + 1
    assert {s, IntervalSet.from_intervals(list(s))} == {s}
    assert s != (0, 3)


def test_immutability():
    s = IntervalSet.of(1, 2)
    with pytest.raises(AttributeError):
        s.foo = 1  # type: ignore[attr-defined]


@settings(max_examples=300)
@given(intervals(), intervals())
def test_utility_against_model(a, b):
    ma, mb = model_of([a]), model_of([b])
    u = interval_overlap_utility(*a, *b)
    assert u == interval_overlap_utility(*b, *a)
    assert 0.0 <= u <= 1.0
    assert u == pytest.approx(len(ma & mb) / len(ma | mb))
    assert (u == 1.0) == (a == b)
    assert (u == 0.0) == (not ma & mb)


def test_utility_exact_on_huge_intervals():
    assert interval_overlap_utility(0, RING_MAX, 0, RING_MAX) == 1.0
    # The ratio rounds to 1.0 in floating point but the intervals differ.
    assert interval_overlap_utility(0, RING_MAX, 1, RING_MAX) < 1.0
    assert interval_overlap_utility(0, 9, 10, 19) == 0.0
    assert interval_overlap_utility(0, 9, 5, 14) == 5 / 15
