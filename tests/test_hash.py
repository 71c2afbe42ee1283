"""Order preservation of the attribute hash onto the ring."""

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from vinifera.ring import RING_MAX
from vinifera.schema import MAX_STRING, Attribute, AttrType, SchemaError

INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
FINITE = st.floats(allow_nan=False, allow_infinity=False)
STRINGS = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)


@st.composite
def int_attr_and_values(draw):
    a, b = sorted((draw(INT64), draw(INT64)))
    assume(a != b)
    attr = Attribute("x", AttrType.INT, a, b)
    v = draw(st.integers(a, b))
    u = draw(st.integers(a, b))
    return attr, v, u


@st.composite
def float_attr_and_values(draw):
    # + 0.0 turns -0.0 into 0.0: floats(0.0, -0.0) is an empty strategy.
    a, b = sorted((draw(FINITE) + 0.0, draw(FINITE) + 0.0))
    assume(a != b)
    attr = Attribute("x", AttrType.FLOAT, a, b)
    vals = st.floats(a, b, allow_nan=False, allow_infinity=False)
    return attr, draw(vals), draw(vals)


@settings(max_examples=300)
@given(int_attr_and_values())
def test_int_hash_monotone_and_in_ring(t):
    attr, v, u = t
    kv, ku = attr.key(v), attr.key(u)
    assert 0 <= kv <= RING_MAX
    if v < u:
        assert kv <= ku
    if attr.min < attr.max:
        assert attr.key(attr.min) == 0
        assert attr.key(attr.max) == RING_MAX


@settings(max_examples=300)
@given(float_attr_and_values())
def test_float_hash_monotone_and_in_ring(t):
    attr, v, u = t
    kv, ku = attr.key(v), attr.key(u)
    assert 0 <= kv <= RING_MAX
    if v < u:
        assert kv <= ku
    if attr.min < attr.max:
        assert attr.key(attr.min) == 0
        assert attr.key(attr.max) == RING_MAX


AWKWARD = [
    0.0,
    -0.0,
    5e-324,
    -5e-324,
    2.2250738585072014e-308,
    1e-300,
    0.1,
    0.2,
    0.30000000000000004,
    1.0,
    math.nextafter(1.0, 2.0),
    1e16,
    1e300,
    1.7976931348623157e308,
    -1.7976931348623157e308,
    -1e300,
    -1.0,
]


@pytest.mark.parametrize(
    "lo,hi",
    [
        (-1.7976931348623157e308, 1.7976931348623157e308),
        (0.0, 5e-324),
        (-1.0, 1.0),
        (0.0, 1000.0),
        (1e300, 1.7976931348623157e308),
    ],
)
def test_float_hash_awkward_values_sorted(lo, hi):
    attr = Attribute("x", AttrType.FLOAT, lo, hi)
    vals = sorted({v for v in AWKWARD if lo <= v <= hi} | {lo, hi})
    keys = [attr.key(v) for v in vals]
    assert keys == sorted(keys)
    assert keys[0] == 0 and keys[-1] == RING_MAX


def test_full_double_range_is_not_degenerate():
    # max - min overflows to inf here; the hash must still spread values.
    attr = Attribute("x", AttrType.FLOAT, -1.7976931348623157e308, 1.7976931348623157e308)
    assert attr.key(0.0) == 1 << 63
    assert 0 < attr.key(-1e308) < attr.key(1e308) < RING_MAX


@settings(max_examples=300)
@given(STRINGS, STRINGS)
def test_string_hash_monotone(v, u):
    attr = Attribute("s", AttrType.STRING)
    assume(v <= MAX_STRING and u <= MAX_STRING)
    kv, ku = attr.key(v), attr.key(u)
    assert 0 <= kv <= RING_MAX
    if v < u:
        assert kv <= ku
    if attr.key(v) < attr.key(u):
        assert v < u


def test_string_hash_bounds_and_prefix_resolution():
    attr = Attribute("s", AttrType.STRING)
    assert attr.key("") == 0
    assert attr.key(MAX_STRING) == RING_MAX
    assert attr.full_range() == ("", MAX_STRING)
    # Distinct within the first 8 bytes means distinct keys.
    assert attr.key("a") < attr.key("b") < attr.key("é") < attr.key("\U0001f600")
    # Beyond 8 bytes strings collide (monotone, not injective).
    assert attr.key("abcdefgh1") == attr.key("abcdefgh2")


def test_degenerate_domain_is_refused():
    # One value would send the whole attribute to a single rendezvous.
    for t, v in ((AttrType.INT, 7), (AttrType.FLOAT, 2.5)):
        with pytest.raises(SchemaError, match="empty domain"):
            Attribute("x", t, v, v)


def test_int_hash_is_exact():
    attr = Attribute("x", AttrType.INT, 0, 2)
    assert [attr.key(v) for v in (0, 1, 2)] == [0, RING_MAX // 2, RING_MAX]
