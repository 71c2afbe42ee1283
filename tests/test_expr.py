"""The subscription/event expression language and its error messages."""

import math
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vinifera.errors import ExprError, SchemaError
from vinifera.expr import format_value, parse_event, parse_subscription
from vinifera.schema import MAX_STRING, Attribute, AttrType, Schema
from vinifera.subscription import Event, Subscription

SCHEMA = Schema(
    [
        Attribute("temp", AttrType.FLOAT, -50.0, 50.0),
        Attribute("city", AttrType.STRING),
        Attribute("rain", AttrType.INT, 0, 500),
    ]
)


def sub(**cons):
    return Subscription.build(SCHEMA, cons)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("temp in [-10, 0]", sub(temp=(-10, 0))),
        ('temp in[-10,0]and city=="Stockholm"', sub(temp=(-10, 0), city=("Stockholm",) * 2)),
        ("temp IN [1e1, 2.5E+1] AND rain == 3", sub(temp=(10, 25), rain=(3, 3))),
        ("city == 'O\\'Hare'", sub(city=("O'Hare",) * 2)),
        ("temp >= 0 and temp <= 10", sub(temp=(0, 10))),
        ("temp <= 10 and temp >= 0", sub(temp=(0, 10))),
        ("temp in [-20, 20] and temp in [0, 30] and temp >= 5", sub(temp=(5, 20))),
        ("temp >= -.5", sub(temp=(-0.5, 50))),
        ("temp <= +.5", sub(temp=(-50, 0.5))),
        ("rain > 5", sub(rain=(6, 500))),
        ("rain < 5", sub(rain=(0, 4))),
        ("rain >= 5.0", sub(rain=(5, 500))),
        ("rain == 1e2", sub(rain=(100, 100))),
        ("temp > 0", sub(temp=(math.nextafter(0.0, 1.0), 50))),
        ("temp < 0", sub(temp=(-50, math.nextafter(0.0, -1.0)))),
        ('city >= "m"', sub(city=("m", MAX_STRING))),
        ('city <= "m"', sub(city=("", "m"))),
        ("  rain == 0  ", sub(rain=(0, 0))),
    ],
)
def test_parse(text, expected):
    assert parse_subscription(text, SCHEMA) == expected


def test_strict_comparisons_exclude_the_value():
    s = parse_subscription("temp > 1.5 and rain < 10", SCHEMA)
    assert not s.matches({"temp": 1.5, "rain": 3})
    assert s.matches({"temp": math.nextafter(1.5, 2), "rain": 9})
    assert not s.matches({"temp": 2.0, "rain": 10})


def err(text: str) -> ExprError:
    with pytest.raises(ExprError) as info:
        parse_subscription(text, SCHEMA)
    e = info.value
    rendered = str(e)
    lines = rendered.split("\n")
    # reason, the text, a caret line pointing at the position.
    assert lines[0] == e.reason and lines[1] == "  " + text
    assert lines[2] == "  " + " " * e.position + "^" * e.length
    assert e.text == text
    return e


@pytest.mark.parametrize(
    "text,position,length,reason",
    [
        # unknown attribute
        (
            'tmp in [-10, 0] and city == "Stockholm"',
            0,
            3,
            "unknown attribute 'tmp' (known: city, rain, temp)",
        ),
        ("temp == 1 and Temp == 2", 14, 4, "unknown attribute 'Temp'"),
        # out of domain
        ("temp in [-10, 51]", 14, 2, "outside the domain [-50.0, 50.0]"),
        ("rain == -1", 8, 2, "outside the domain [0, 500]"),
        ("rain == 1e999999999", 8, 11, "outside the domain"),
        # NaN and infinities
        ("temp == nan", 8, 3, "NaN and infinities are not allowed"),
        ("temp in [-inf, 0]", 9, 4, "NaN and infinities are not allowed"),
        ("temp <= Infinity", 8, 8, "NaN and infinities are not allowed"),
        ("temp == 1e400", 8, 5, "NaN and infinities are not allowed"),
        # inverted and empty ranges
        ("temp in [5, 1]", 8, 6, "inverted range for temp: [5.0, 1.0]"),
        ("temp >= 0 and temp < -5", 14, 9, "leaves nothing of temp"),
        ("rain == 3 and rain == 4", 14, 9, "leaves nothing of rain"),
        ("rain < 0", 5, 3, "rain < 0 is empty"),
        ("temp > 50", 5, 4, "temp > 50.0 is empty"),
        # type mismatches
        ('temp == "x"', 8, 3, "temp is a float attribute: expected a number"),
        ("city == 5", 8, 1, "city is a string attribute: quote the value"),
        ("city == Stockholm", 8, 9, "string values must be quoted"),
        ("rain == 2.5", 8, 3, "rain is an int attribute: 2.5 is not an integer"),
        ("rain in [1, 1e-999999999]", 12, 12, "not an integer"),
        ('city < "b"', 5, 1, "strict comparison < is not supported"),
        # syntax
        ("", 0, 1, "empty subscription"),
        ("   ", 3, 1, "empty subscription"),
        ("temp in [1, 2", 13, 1, "expected ']'"),
        ("temp in 1, 2]", 8, 1, "expected '['"),
        ("temp in [1 2]", 11, 1, "expected ','"),
        ("temp == 1 or rain == 2", 10, 2, "expected 'and' or end of input"),
        ("temp == 1 and", 13, 1, "expected an attribute name"),
        ("temp == 1 and and rain == 2", 14, 3, "keyword"),
        ("temp = 1", 5, 1, "unexpected character '='"),
        ("temp 1", 5, 1, "expected 'in' or a comparison"),
        ("temp == 1.2.3", 8, 5, "malformed number"),
        ("temp == ", 8, 1, "expected a value for temp"),
        ('city == "abc', 8, 4, "unterminated string"),
        ('city == "a\\qb"', 10, 2, "unknown escape"),
        ("temp == 1 ]", 10, 1, "expected 'and' or end of input"),
    ],
)
def test_errors_point_at_the_problem(text, position, length, reason):
    e = err(text)
    assert (e.position, e.length) == (position, length), str(e)
    assert reason in e.reason
    assert isinstance(e, SchemaError) and isinstance(e, ValueError)


def test_error_display_example():
    e = err('tmp in [-10, 0] and city == "Stockholm"')
    assert str(e) == (
        "unknown attribute 'tmp' (known: city, rain, temp)\n"
        '  tmp in [-10, 0] and city == "Stockholm"\n'
        "  ^^^"
    )
    again = pickle.loads(pickle.dumps(e))
    assert (again.reason, again.text, again.position, str(again)) == (
        e.reason,
        e.text,
        e.position,
        str(e),
    )


def test_error_display_multiline():
    with pytest.raises(ExprError) as info:
        parse_subscription("temp == 1\nand tmp == 2", SCHEMA)
    assert info.value.position == 14
    assert str(info.value).split("\n")[1:] == ["  and tmp == 2", "      ^^^"]


def test_not_a_string():
    with pytest.raises(TypeError):
        parse_subscription(3, SCHEMA)


@settings(max_examples=200)
@given(st.text(st.sampled_from(list("temp rain city in and [],.-+0159e\"'=<>")), max_size=30))
def test_parser_either_parses_or_raises_expr_error(text):
    try:
        s = parse_subscription(text, SCHEMA)
    except ExprError as e:
        assert 0 <= e.position <= len(text)
        assert "^" in str(e).split("\n")[-1]
    else:
        assert parse_subscription(str(s), SCHEMA) == s


@settings(max_examples=200)
@given(
    st.floats(allow_nan=False, allow_infinity=False)
    | st.integers(-(10**6), 10**6)
    | st.text(st.characters(exclude_categories=("Cs",)), max_size=8)
)
def test_format_value_round_trips(v):
    if isinstance(v, str):
        schema = Schema([Attribute("x", AttrType.STRING)])
        v = min(v, MAX_STRING)
    elif isinstance(v, int):
        schema = Schema([Attribute("x", AttrType.INT, -(10**6), 10**6)])
    else:
        schema = Schema(
            [Attribute("x", AttrType.FLOAT, -1.7976931348623157e308, 1.7976931348623157e308)]
        )
    s = parse_subscription(f"x == {format_value(v)}", schema)
    assert s.constraints[0][1] == v and type(s.constraints[0][1]) is type(v)


class TestParseEvent:
    def test_values(self):
        e = parse_event(["temp=3", "city=Stockholm", "rain=12"], SCHEMA)
        assert e == Event.build(SCHEMA, {"temp": 3.0, "city": "Stockholm", "rain": 12})
        assert parse_event(["city=New York"], SCHEMA).values == {"city": "New York"}
        assert parse_event(['city="a=b"'], SCHEMA).values == {"city": "a=b"}
        assert parse_event(["city='it\\'s'"], SCHEMA).values == {"city": "it's"}
        assert parse_event(["city=42"], SCHEMA).values == {"city": "42"}
        assert parse_event(["city="], SCHEMA).values == {"city": ""}
        assert parse_event(['city="abc'], SCHEMA).values == {"city": '"abc'}  # taken literally
        assert parse_event([" temp = -1.5e1 "], SCHEMA).values == {"temp": -15.0}

    @pytest.mark.parametrize(
        "items,bad,position,reason",
        [
            (["temp=3", "tmp=4"], "tmp=4", 0, "unknown attribute 'tmp'"),
            (["temp"], "temp", 0, "expected name=value"),
            (["=3"], "=3", 0, "missing attribute name"),
            (["temp=abc"], "temp=abc", 5, "expected a number"),
            (["temp=nan"], "temp=nan", 5, "NaN and infinities"),
            (["temp=-inf"], "temp=-inf", 5, "NaN and infinities"),
            (["temp=99"], "temp=99", 5, "outside the domain"),
            (["rain=1.5"], "rain=1.5", 5, "not an integer"),
            (["temp=1", "temp=2"], "temp=2", 0, "given twice"),
            (['city="ab"c"'], 'city="ab"c"', 5, "unexpected text after the quoted value"),
        ],
    )
    def test_errors_name_the_item(self, items, bad, position, reason):
        with pytest.raises(ExprError) as info:
            parse_event(items, SCHEMA)
        assert info.value.text == bad
        assert info.value.position == position
        assert reason in info.value.reason
        assert bad in str(info.value)

    def test_empty_and_wrong_types(self):
        with pytest.raises(SchemaError):
            parse_event([], SCHEMA)
        with pytest.raises(TypeError):
            parse_event("temp=3", SCHEMA)
