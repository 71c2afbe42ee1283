"""Subscriptions and events as typed Spark columns, and matching.

Reproduces vinifera.subscription exactly: an event matches a subscription
when, for every constrained attribute, the event has a value and
lo <= value <= hi. Values are typed by the schema as Attribute.check does:

- float: any JSON number, as a double (Python's float() of an int rounds
  the same way as Spark's long -> double); NaN and infinities refused;
- int: an integral number, compared exactly as a 64-bit integer;
- string: compared by code point (Spark's binary UTF-8 order is the same).

Values outside the attribute's domain, unknown or repeated attributes, and
inverted or empty subscriptions make the record invalid, as they make the
Python constructors raise. One difference, documented: the reader cannot tell
a JSON string that spells a number from the number itself.

Column names are positional (e0, lo0, hi0 for the schema's first attribute)
so that attribute names never clash with anything.

For the expected-pairs join, every value is also put in one of BUCKETS
buckets by a non-decreasing function of the value: lo <= v <= hi implies
bucket(lo) <= bucket(v) <= bucket(hi), so joining a subscription's bucket
range with the event's bucket finds every match (and a few candidates that
the exact test then drops).
"""

from __future__ import annotations

from decimal import Decimal

from pyspark.sql import Column
from pyspark.sql import functions as F

from vinifera.schema import Attribute, AttrType, Schema

BUCKETS = 1024
_INF = float("inf")


def e_col(i: int) -> str:
    return f"e{i}"


def lo_col(i: int) -> str:
    return f"lo{i}"


def hi_col(i: int) -> str:
    return f"hi{i}"


def _typed(attr: Attribute, text: Column) -> tuple[Column, Column]:
    """(typed value, whether the text is a valid value of attr)."""
    if attr.type is AttrType.STRING:
        return text, text.isNotNull()
    if attr.type is AttrType.FLOAT:
        v = text.try_cast("double")
        ok = (
            v.isNotNull()
            & ~F.isnan(v)
            & (F.abs(v) != _INF)
            & (v >= F.lit(attr.min))
            & (v <= F.lit(attr.max))
        )
        return v, ok
    # INT: exact through a wide decimal, so 64-bit bounds compare exactly.
    d = text.try_cast("decimal(38,10)")
    ok = (
        d.isNotNull()
        & (d == F.floor(d))
        & (d >= F.lit(Decimal(attr.min)))
        & (d <= F.lit(Decimal(attr.max)))
    )
    return F.when(ok, d.cast("long")), ok


def _pick(lists: Column, name: str) -> tuple[Column, Column]:
    """(elements of a [[name, ...], ...] list whose first item is name, their count)."""
    found = F.filter(lists, lambda x: F.get(x, 0) == F.lit(name))
    return found, F.size(found)


def _shape_ok(lists: Column, schema: Schema, width: int) -> Column:
    names = F.array(*[F.lit(a.name) for a in schema])
    return (
        (F.size(lists) >= 1)
        & F.forall(lists, lambda x: (F.size(x) == width) & F.array_contains(names, F.get(x, 0)))
        & (F.size(F.array_distinct(F.transform(lists, lambda x: F.get(x, 0)))) == F.size(lists))
    )


def event_columns(values: Column, schema: Schema) -> tuple[list[Column], Column]:
    """([e0, e1, ...] typed values, null where absent; validity of the event)."""
    cols = []
    ok = values.isNotNull() & _shape_ok(values, schema, 2)
    for i, attr in enumerate(schema):
        found, n = _pick(values, attr.name)
        v, valid = _typed(attr, F.get(F.get(found, 0), 1))
        cols.append(F.when(n == 1, v).alias(e_col(i)))
        ok = ok & ((n == 0) | valid)
    return cols, F.coalesce(ok, F.lit(False))


def subscription_columns(sub: Column, schema: Schema) -> tuple[list[Column], Column]:
    """([lo0, hi0, lo1, hi1, ...], validity). A null sub is valid (no
    subscription) and has every bound null; an invalid one should be read
    as none too."""
    cols = []
    ok = _shape_ok(sub, schema, 3)
    for i, attr in enumerate(schema):
        found, n = _pick(sub, attr.name)
        item = F.get(found, 0)
        lo, lo_ok = _typed(attr, F.get(item, 1))
        hi, hi_ok = _typed(attr, F.get(item, 2))
        cols += [F.when(n == 1, lo).alias(lo_col(i)), F.when(n == 1, hi).alias(hi_col(i))]
        ok = ok & ((n == 0) | (lo_ok & hi_ok & (lo <= hi)))
    return cols, sub.isNull() | F.coalesce(ok, F.lit(False))


def matches(schema: Schema, sub=F.col, event=F.col) -> Column:
    """Whether the event columns match the subscription columns (False when
    there is no subscription). `sub` and `event` map a column name to a
    Column, to pick sides of a join."""
    constrained = F.lit(False)
    result = F.lit(True)
    for i in range(len(schema)):
        lo, hi, v = sub(lo_col(i)), sub(hi_col(i)), event(e_col(i))
        constrained = constrained | lo.isNotNull()
        result = result & (lo.isNull() | (v.isNotNull() & (lo <= v) & (v <= hi)))
    return F.coalesce(constrained & result, F.lit(False))


def bucket(attr: Attribute, v: Column) -> Column:
    """A non-decreasing map of attr's values onto [0, BUCKETS)."""
    if attr.type is AttrType.STRING:
        # The first two UTF-8 bytes, big-endian: binary order is code-point order.
        hexed = F.rpad(F.substring(F.hex(v), 1, 4), 4, "0")
        first = F.conv(hexed, 16, 10).cast("long")
        return F.floor(first * BUCKETS / 65536).cast("int")
    span = float(attr.max) - float(attr.min)
    if span <= 0:
        return F.lit(0)
    b = (v.cast("double") - F.lit(float(attr.min))) / F.lit(span) * F.lit(float(BUCKETS))
    # Clamped before the cast: Spark's ANSI mode refuses overflowing casts.
    return F.floor(F.least(F.greatest(b, F.lit(0.0)), F.lit(BUCKETS - 1.0))).cast("int")


def index_attribute(schema: Schema) -> tuple[Column, Column, Column]:
    """For a subscription row: (attribute index, lowest bucket, highest
    bucket) of the constrained attribute spanning the fewest buckets."""
    best_i = best_lo = best_hi = None
    for i, attr in enumerate(schema):
        lo = bucket(attr, F.col(lo_col(i)))
        hi = bucket(attr, F.col(hi_col(i)))
        here = F.col(lo_col(i)).isNotNull()
        if best_i is None:
            best_i, best_lo, best_hi = F.when(here, F.lit(i)), F.when(here, lo), F.when(here, hi)
            continue
        better = here & (best_i.isNull() | (hi - lo < best_hi - best_lo))
        best_i = F.when(better, F.lit(i)).otherwise(best_i)
        best_lo = F.when(better, lo).otherwise(best_lo)
        best_hi = F.when(better, hi).otherwise(best_hi)
    return best_i, best_lo, best_hi


def event_buckets(schema: Schema) -> Column:
    """For an event row: an array of (ix, b) for each attribute it has a value for."""
    items = [
        F.when(
            F.col(e_col(i)).isNotNull(),
            F.struct(F.lit(i).alias("ix"), bucket(attr, F.col(e_col(i))).alias("b")),
        )
        for i, attr in enumerate(schema)
    ]
    return F.filter(F.array(*items), lambda x: x.isNotNull())
