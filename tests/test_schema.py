"""Attributes, value checking and TOML schemas."""

import json
import math
import pickle

import pytest

from vinifera.errors import SchemaError, ViniferaError
from vinifera.schema import MAX_STRING, Attribute, AttrType, Schema

WEATHER = """
[attributes.temp]
type = "float"
min = -50
max = 50.5

[attributes.city]
type = "string"

[attributes.rain]
type = "int"
min = 0
max = 500
"""


@pytest.fixture
def schema():
    return Schema.from_toml(WEATHER, "weather.toml")


def test_from_toml_keeps_order_and_types(schema):
    assert schema.names == ("temp", "city", "rain")
    assert [a.type for a in schema.attributes] == [AttrType.FLOAT, AttrType.STRING, AttrType.INT]
    temp = schema.attribute("temp")
    assert temp.min == -50.0 and type(temp.min) is float and temp.max == 50.5
    assert schema.attribute("city").min is None
    assert "temp" in schema and "nope" not in schema and 3 not in schema
    assert len(schema) == 3
    assert [a.name for a in schema] == list(schema.names)


def test_unknown_attribute_lists_known(schema):
    with pytest.raises(SchemaError, match=r"unknown attribute 'tmp' \(known: city, rain, temp\)"):
        schema.attribute("tmp")


def test_round_trips(schema, tmp_path):
    assert Schema.from_toml(schema.to_toml()) == schema
    assert Schema.from_dict(json.loads(json.dumps(schema.to_dict()))) == schema
    path = tmp_path / "s.toml"
    path.write_text(schema.to_toml())
    assert Schema.load(path) == schema
    assert hash(Schema.load(path)) == hash(schema)
    assert pickle.loads(pickle.dumps(schema)) == schema
    odd = Schema(
        [
            Attribute("x", AttrType.FLOAT, -1e-300, 1.7976931348623157e308),
            Attribute("y", AttrType.INT, -(1 << 63), (1 << 63) - 1),
        ]
    )
    assert Schema.from_toml(odd.to_toml()) == odd


def test_numeric_schema():
    s = Schema.numeric(3)
    assert s.names == ("a0", "a1", "a2")
    assert all(a.type is AttrType.FLOAT and a.full_range() == (0.0, 1000.0) for a in s)
    assert Schema.numeric(1, -1, 1).attribute("a0").full_range() == (-1.0, 1.0)
    with pytest.raises(SchemaError):
        Schema.numeric(0)


def test_errors_are_value_errors():
    assert issubclass(SchemaError, ViniferaError) and issubclass(ViniferaError, ValueError)


@pytest.mark.parametrize(
    "text,match",
    [
        ("", r"src\.toml: missing \[attributes\]"),
        ("x = 1\n[attributes.a]\ntype='int'\nmin=0\nmax=1", "src.toml: unknown top-level keys: x"),
        ("[attributes]", "src.toml: .*empty"),
        ("[attributes.a]\ntype = 'bool'", r"src\.toml: attribute 'a': unknown type 'bool'"),
        ("[attributes.a]\nmin = 0\nmax = 1", "attribute 'a': missing type"),
        ("[attributes.a]\ntype = 'float'\nmin = 0", "attribute 'a': missing max"),
        ("[attributes.a]\ntype = 'float'", "attribute 'a': missing min and max"),
        ("[attributes.a]\ntype = 'float'\nmin = 5\nmax = 1", "'a': inverted bounds"),
        ("[attributes.a]\ntype = 'int'\nmin = 0.5\nmax = 1", "'a': bounds of an int .* integers"),
        ("[attributes.a]\ntype = 'float'\nmin = nan\nmax = 1", "'a': bounds must be finite"),
        ("[attributes.a]\ntype = 'float'\nmin = 0\nmax = inf", "'a': bounds must be finite"),
        ("[attributes.a]\ntype = 'float'\nmin = true\nmax = 1", "'a': bounds .* must be numbers"),
        ("[attributes.a]\ntype = 'int'\nmin = 0\nmax = 1\nstep = 1", "'a': unknown keys step"),
        ("[attributes.a]\ntype = 'string'\nmin = 'a'", "'a': string attributes take no min"),
        ("[attributes.in]\ntype = 'string'", "'in': it is a keyword"),
        ("[attributes.AND]\ntype = 'string'", "'AND': it is a keyword"),
        ("[attributes.'2x']\ntype = 'string'", "invalid attribute name '2x'"),
        ("[attributes.'a-b']\ntype = 'string'", "invalid attribute name 'a-b'"),
        ("[attributes.a]\ntype = 'int'\nmin = 0\nmax = 9223372036854775808", "64-bit"),
        ("[attributes\ntype = 1", r"src\.toml: invalid TOML"),
        ("attributes = 3", r"src\.toml: \[attributes\] must be a table"),
        ("[attributes]\na = 3", "attribute 'a': expected a table"),
    ],
)
def test_toml_errors(text, match):
    with pytest.raises(SchemaError, match=match):
        Schema.from_toml(text, "src.toml")


def test_load_names_the_file(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("[attributes.a]\ntype = 'float'\n")
    with pytest.raises(SchemaError, match="bad.toml"):
        Schema.load(p)


def test_duplicate_and_empty_schemas():
    a = Attribute("a", AttrType.STRING)
    with pytest.raises(SchemaError, match="duplicate"):
        Schema([a, a])
    with pytest.raises(SchemaError):
        Schema([])


class TestCheck:
    def test_int(self):
        a = Attribute("n", AttrType.INT, -5, 5)
        assert a.check(3) == 3 and type(a.check(3)) is int
        assert a.check(3.0) == 3 and type(a.check(3.0)) is int
        for bad, msg in [
            (True, "integer"),
            (2.5, "integer"),
            ("3", "integer"),
            (math.nan, "NaN"),
            (math.inf, "infinit"),
            (6, "outside"),
            (-6, "outside"),
            (None, "integer"),
        ]:
            with pytest.raises(SchemaError, match=msg) as info:
                a.check(bad)
            assert "n" in str(info.value)

    def test_float(self):
        a = Attribute("t", AttrType.FLOAT, -1, 1)
        assert a.check(1) == 1.0 and type(a.check(1)) is float
        assert a.check(-0.5) == -0.5
        for bad, msg in [
            (False, "number"),
            ("0.5", "number"),
            (math.nan, "NaN"),
            (-math.inf, "infinit"),
            (1.0000001, r"outside the domain \[-1.0, 1.0\]"),
            (10**400, "outside"),
            (None, "number"),
        ]:
            with pytest.raises(SchemaError, match=msg) as info:
                a.check(bad)
            assert "t" in str(info.value)

    def test_what_is_used(self):
        a = Attribute("t", AttrType.FLOAT, 0, 1)
        with pytest.raises(SchemaError, match="lower bound 2.0 for t"):
            a.check(2, what="lower bound")

    def test_string(self):
        a = Attribute("c", AttrType.STRING)
        assert a.check("Stockholm") == "Stockholm"
        assert a.check("") == ""
        assert a.check(MAX_STRING) == MAX_STRING

        class S(str):
            pass

        assert type(a.check(S("x"))) is str
        for bad, msg in [
            (3, "string"),
            (b"x", "string"),
            ("a\ud800", "surrogate"),
            (MAX_STRING + "x", "MAX_STRING"),
        ]:
            with pytest.raises(SchemaError, match=msg):
                a.check(bad)


def test_attribute_constructor_validates():
    with pytest.raises(SchemaError):
        Attribute("x", AttrType.FLOAT, 1.0, 0.0)
    with pytest.raises(SchemaError):
        Attribute("x", AttrType.INT, 0, None)
    with pytest.raises(SchemaError):
        Attribute("x", "int", 0, 1)
    assert Attribute("x", AttrType.FLOAT, 0, 1) == Attribute("x", AttrType.FLOAT, 0.0, 1.0)
