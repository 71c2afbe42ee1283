"""Subscriptions and events: validation, matching, plain-data and text round trips."""

import json
import math
import pickle
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vinifera.errors import SchemaError
from vinifera.expr import parse_subscription
from vinifera.schema import Attribute, AttrType, Schema
from vinifera.subscription import Event, Subscription

SCHEMA = Schema(
    [
        Attribute("temp", AttrType.FLOAT, -50.0, 50.0),
        Attribute("city", AttrType.STRING),
        Attribute("rain", AttrType.INT, 0, 500),
    ]
)

VALUES = {
    "temp": st.floats(-50.0, 50.0, allow_nan=False),
    "city": st.text(st.characters(exclude_categories=("Cs",)), max_size=6),
    "rain": st.integers(0, 500),
}


@st.composite
def subscriptions(draw):
    names = draw(st.lists(st.sampled_from(SCHEMA.names), min_size=1, unique=True))
    cons = {}
    for n in names:
        a, b = draw(VALUES[n]), draw(VALUES[n])
        cons[n] = (min(a, b), max(a, b))
    return Subscription.build(SCHEMA, cons)


@st.composite
def events(draw):
    names = draw(st.lists(st.sampled_from(SCHEMA.names), min_size=1, unique=True))
    return Event.build(SCHEMA, {n: draw(VALUES[n]) for n in names})


def test_build_normalizes_and_orders():
    s = Subscription.build(SCHEMA, {"rain": (1.0, 3), "temp": (-10, 0)})
    assert s.constraints == (("temp", -10.0, 0.0), ("rain", 1, 3))
    assert type(s.constraints[1][1]) is int and type(s.constraints[0][1]) is float
    assert s.attributes == ("temp", "rain")
    temp = SCHEMA.attribute("temp")
    assert s.key_ranges == {
        "temp": (temp.key(-10.0), temp.key(0.0)),
        "rain": (SCHEMA.attribute("rain").key(1), SCHEMA.attribute("rain").key(3)),
    }
    assert s.range_of("temp") == (-10.0, 0.0) and s.range_of("city") is None
    assert s.key_range("rain") == s.key_ranges["rain"] and s.key_range("city") is None
    assert s == Subscription.build(SCHEMA, {"temp": (-10.0, 0.0), "rain": (1, 3)})
    assert hash(s) == hash(Subscription.build(SCHEMA, {"temp": (-10.0, 0.0), "rain": (1, 3)}))


@pytest.mark.parametrize(
    "cons,match",
    [
        ({}, "at least one constraint"),
        ({"tmp": (0, 1)}, r"unknown attribute 'tmp' \(known: city, rain, temp\)"),
        ({"temp": (5, 1)}, r"inverted range for temp: \[5.0, 1.0\]"),
        ({"temp": (0, math.nan)}, "NaN"),
        ({"temp": (-math.inf, 0)}, "infinit"),
        ({"temp": (0, 51)}, "outside the domain"),
        ({"rain": (0, 2.5)}, "integer"),
        ({"city": (1, 2)}, "string"),
        ({"temp": (0, 1, 2)}, "pair"),
        ({"temp": 3}, "pair"),
    ],
)
def test_build_errors(cons, match):
    with pytest.raises(SchemaError, match=match):
        Subscription.build(SCHEMA, cons)


def test_immutable():
    s = Subscription.build(SCHEMA, {"temp": (0, 1)})
    with pytest.raises(AttributeError):
        s.constraints = ()
    e = Event.build(SCHEMA, {"temp": 0})
    with pytest.raises(AttributeError):
        e.items = ()
    with pytest.raises(TypeError):
        Subscription()
    with pytest.raises(TypeError):
        Event()


def naive_match(sub: Subscription, values: dict) -> bool:
    return all(n in values and lo <= values[n] <= hi for n, lo, hi in sub.constraints)


@settings(max_examples=300)
@given(subscriptions(), events())
def test_matching_agrees_with_naive(sub, ev):
    assert sub.matches(ev.values) == naive_match(sub, ev.values)


@settings(max_examples=200)
@given(subscriptions())
def test_matching_bounds_are_closed(sub):
    lows = {n: lo for n, lo, _ in sub.constraints}
    highs = {n: hi for n, _, hi in sub.constraints}
    assert sub.matches(lows) and sub.matches(highs)
    # Missing any constrained attribute means no match.
    assert not sub.matches({k: v for k, v in lows.items() if k != sub.attributes[0]})


def test_matching_examples():
    s = Subscription.build(SCHEMA, {"temp": (-10, 0), "city": ("Stockholm", "Stockholm")})
    assert s.matches({"temp": -5.0, "city": "Stockholm", "rain": 3})
    assert not s.matches({"temp": 0.5, "city": "Stockholm"})
    assert not s.matches({"temp": -5.0, "city": "Stockholmx"})
    assert not s.matches({"temp": -5.0})
    # any mapping, not only a dict
    assert s.matches(MappingProxyType({"temp": -5.0, "city": "Stockholm"}))
    assert not s.matches(MappingProxyType({"temp": 0.5, "city": "Stockholm"}))


@settings(max_examples=200)
@given(subscriptions())
def test_subscription_round_trips(sub):
    plain = sub.to_plain()
    assert Subscription.from_plain(SCHEMA, plain) == sub
    assert Subscription.from_plain(SCHEMA, json.loads(json.dumps(plain))) == sub
    assert parse_subscription(str(sub), SCHEMA) == sub
    assert pickle.loads(pickle.dumps(sub)) == sub


@settings(max_examples=200)
@given(events())
def test_event_round_trips(ev):
    assert Event.from_plain(SCHEMA, ev.to_plain()) == ev
    assert Event.from_plain(SCHEMA, json.loads(json.dumps(ev.to_plain()))) == ev
    assert pickle.loads(pickle.dumps(ev)) == ev
    assert list(ev.values) == [n for n, _ in ev.items]
    assert ev.keys() == {n: SCHEMA.attribute(n).key(v) for n, v in ev.items}


@pytest.mark.parametrize(
    "data",
    [
        None,
        "temp",
        {"temp": [0, 1]},
        [],
        [["temp", 0]],
        [["temp", 0, 1, 2]],
        [[1, 0, 1]],
        [["temp", 0, 1], ["temp", 0, 1]],
        [["temp", "a", 1]],
        [["nope", 0, 1]],
        ["abc"],
    ],
)
def test_subscription_from_plain_rejects(data):
    with pytest.raises(SchemaError):
        Subscription.from_plain(SCHEMA, data)


@pytest.mark.parametrize(
    "data",
    [
        None,
        {"temp": 1},
        [],
        [["temp"]],
        [["temp", 1, 2]],
        [[None, 1]],
        [["temp", 1], ["temp", 2]],
        [["temp", math.nan]],
        [["rain", True]],
        [["zzz", 1]],
    ],
)
def test_event_from_plain_rejects(data):
    with pytest.raises(SchemaError):
        Event.from_plain(SCHEMA, data)


def test_event_build():
    e = Event.build(SCHEMA, {"rain": 4, "temp": 1})
    assert e.items == (("temp", 1.0), ("rain", 4))
    assert e.values == {"temp": 1.0, "rain": 4}
    assert e == Event.build(SCHEMA, {"temp": 1.0, "rain": 4})
    assert e != Event.build(SCHEMA, {"temp": 1.0, "rain": 5})
    assert "temp=1.0" in repr(e)
    with pytest.raises(SchemaError, match="at least one"):
        Event.build(SCHEMA, {})
    with pytest.raises(SchemaError, match="outside"):
        Event.build(SCHEMA, {"rain": 501})


def test_str_renders_expression_language():
    s = Subscription.build(
        SCHEMA, {"city": ("Stockholm", "Stockholm"), "temp": (-10, 0), "rain": (2, 7)}
    )
    assert str(s) == 'temp in [-10.0, 0.0] and city == "Stockholm" and rain in [2, 7]'
    q = Subscription.build(SCHEMA, {"city": ('a"b\\c\n\t', "z'")})
    assert str(q) == r"""city in ["a\"b\\c\n\t", "z'"]"""
    assert parse_subscription(str(q), SCHEMA) == q
