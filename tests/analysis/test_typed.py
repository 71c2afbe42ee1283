"""Spark's matching and validation equal vinifera.subscription's, on int,
float and string attributes, including the values where a careless
translation goes wrong: 64-bit integers beyond a double's precision, code
points beyond ASCII, bounds, missing and unknown attributes."""

from __future__ import annotations

import json
import random

import pytest

from vinifera.errors import SchemaError
from vinifera.schema import Schema
from vinifera.subscription import Event, Subscription

pytest.importorskip("pyspark")

SCHEMA = Schema.from_toml(
    """
[attributes.n]
type = "int"
min = -9223372036854775808
max = 9223372036854775807
[attributes.f]
type = "float"
min = -1.5
max = 1.5
[attributes.s]
type = "string"
"""
)
BIG = 2**53
INTS = [BIG, BIG + 1, BIG - 1, -BIG - 1, 0, 7, -(2**63), 2**63 - 1, 3.0, 2.5]
FLOATS = [0.1, 0.2, 0.30000000000000004, 0.3, -1.5, 1.5, 1, 0, 2.0, 1e-300]
STRINGS = ["", "a", "ab", "b", "é", "e\u0301", "日本", "\U0001f600", "Z", "abc"]
VALUES = {"n": INTS, "f": FLOATS, "s": STRINGS}


def _python(cls, schema, plain):
    try:
        return cls.from_plain(schema, plain)
    except SchemaError:
        return None


def cases(rng: random.Random, count: int) -> list[tuple[list, list]]:
    out = []
    for _ in range(count):
        sub = []
        for name in rng.sample(["n", "f", "s"], rng.randint(1, 3)):
            a, b = rng.choice(VALUES[name]), rng.choice(VALUES[name])
            if rng.random() < 0.8:
                a, b = sorted((a, b))  # mostly valid ranges, some inverted
            sub.append([name, a, b] if rng.random() < 0.8 else [name, a, a])
        values = [[n, rng.choice(VALUES[n])] for n in ("n", "f", "s") if rng.random() < 0.8]
        out.append((sub, values))
    # Invalid on purpose: unknown attribute, duplicate, wrong arity, wrong type, empty.
    out += [
        ([["zz", 1, 2]], [["zz", 1]]),
        ([["n", 1, 2], ["n", 1, 2]], [["n", 1], ["n", 2]]),
        ([["n", 1]], [["n", 1, 2]]),
        ([["f", "x", "y"]], [["f", True]]),
        ([], []),
        ([["f", -2.0, 0.0]], [["f", 2.0]]),
    ]
    return out


def test_matching_and_validation_equal_python(spark, tmp_path, log_writer):
    from pyspark.sql import functions as F

    from vinifera.analysis import typed
    from vinifera.analysis.reading import read_records

    rows = cases(random.Random(7), 400)
    # Carry each case in a record the reader parses, as logs would.
    log_writer(tmp_path / "cases.jsonl",
               [{"v": 1, "t": float(i), "node": "n", "ev": "publish", "eid": i, "values": v,
                 "sub": s} for i, (s, v) in enumerate(rows)])  # fmt: skip
    records = read_records(spark, str(tmp_path))
    ecols, eok = typed.event_columns(F.col("values"), SCHEMA)
    scols, sok = typed.subscription_columns(F.col("sub"), SCHEMA)
    step = records.select("eid", eok.alias("eok"), sok.alias("sok"), *ecols, *scols)
    got = {
        r["eid"]: (r["eok"], r["sok"], r["m"])
        for r in step.select("*", typed.matches(SCHEMA).alias("m")).collect()
    }
    for i, (sub, values) in enumerate(rows):
        s = _python(Subscription, SCHEMA, sub)
        e = _python(Event, SCHEMA, values)
        case = json.dumps([sub, values])
        assert got[i][0] == (e is not None), case
        assert got[i][1] == (s is not None), case
        if e is not None and s is not None:  # the analysis reads invalid ones as none
            assert got[i][2] == s.matches(e.values), case
    assert sum(1 for v in got.values() if all(v)) > 20  # the cases do match sometimes


def test_buckets_never_split_a_match(spark):
    """lo <= v <= hi implies bucket(lo) <= bucket(v) <= bucket(hi): buckets of
    sorted values never decrease."""
    from pyspark.sql import functions as F

    from vinifera.analysis import typed

    kinds = {"int": "bigint", "float": "double", "string": "string"}
    for attr in SCHEMA:
        typed_values = sorted(
            e.values[attr.name]
            for x in VALUES[attr.name]
            if (e := _python(Event, SCHEMA, [[attr.name, x]])) is not None
        )
        df = spark.createDataFrame(
            list(enumerate(typed_values)), f"rank int, v {kinds[attr.type.value]}"
        )
        got = df.select("rank", typed.bucket(attr, F.col("v")).alias("b")).orderBy("rank")
        buckets = [r["b"] for r in got.collect()]
        assert buckets == sorted(buckets), attr.name
        assert all(0 <= b < typed.BUCKETS for b in buckets), attr.name
