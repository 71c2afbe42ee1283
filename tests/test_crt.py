"""The content routing table as a pure data structure."""

from hypothesis import given, settings
from hypothesis import strategies as st

from vinifera.protocol.crt import Crt
from vinifera.ranges import IntervalSet
from vinifera.schema import Schema
from vinifera.subscription import Subscription

SCHEMA = Schema.numeric(2)


def sub(lo, hi, lo1=0.0, hi1=1000.0):
    return Subscription.build(SCHEMA, {"a0": (lo, hi), "a1": (lo1, hi1)})


def keys(lo, hi):
    return IntervalSet.of(*sorted((SCHEMA.attribute("a0").key(lo), SCHEMA.attribute("a0").key(hi))))


def test_entries_from_one_neighbour_aggregate_into_one_row():
    crt = Crt(100, 100)
    assert crt.upsert("a0", "n1", "s1", sub(10, 20), keys(10, 20), 5.0, 0.0)
    assert crt.upsert("a0", "n1", "s2", sub(15, 30), keys(15, 30), 5.0, 0.0)
    assert crt.summary() == {"a0": {"rows": 1, "entries": 2}}
    # a refresh that changes nothing is not news
    assert not crt.upsert("a0", "n1", "s1", sub(10, 20), keys(10, 20), 6.0, 0.0)


def test_matching_uses_key_ranges_and_the_full_subscription():
    crt = Crt(100, 100)
    crt.upsert("a0", "n1", "s1", sub(10, 20, 0, 50), keys(10, 20), 5.0, 0.0)
    crt.upsert("a0", "n2", "s2", sub(10, 20, 60, 90), keys(10, 20), 5.0, 0.0)
    k = SCHEMA.attribute("a0").key(15.0)
    assert crt.matching_neighbours("a0", k, {"a0": 15.0, "a1": 40.0}, 1.0, None) == ["n1"]
    assert crt.matching_neighbours("a0", k, {"a0": 15.0, "a1": 70.0}, 1.0, None) == ["n2"]
    assert crt.matching_neighbours("a0", k, {"a0": 15.0, "a1": 40.0}, 1.0, "n1") == []
    far = SCHEMA.attribute("a0").key(500.0)
    assert crt.matching_neighbours("a0", far, {"a0": 15.0, "a1": 40.0}, 1.0, None) == []


def test_expiry_deaggregates_exactly_the_silent_owner():
    crt = Crt(100, 100)
    crt.upsert("a0", "n1", "s1", sub(10, 20), keys(10, 20), 5.0, 0.0)
    crt.upsert("a0", "n1", "s2", sub(40, 50), keys(40, 50), 9.0, 0.0)
    assert crt.expire(6.0, -1.0) == [("a0", "s1")]
    assert crt.owners("a0") == ["s2"]
    assert crt.owner_demand("a0", "s1") == (None, IntervalSet())
    assert crt.owner_demand("a0", "s2")[1] == keys(40, 50)


def test_departed_owner_and_neighbour_are_forgotten():
    crt = Crt(100, 100)
    crt.upsert("a0", "n1", "s1", sub(10, 20), keys(10, 20), 5.0, 0.0)
    crt.upsert("a0", "n2", "s1", sub(10, 20), keys(21, 25), 5.0, 0.0)
    crt.upsert("a0", "n2", "s2", sub(40, 50), keys(40, 50), 5.0, 0.0)
    assert crt.drop_owner("s1") == [("a0", "s1")]
    assert len(crt) == 1
    assert crt.drop_neighbour("n2") == [("a0", "s2")]
    assert len(crt) == 0 and crt.attributes() == []


def test_shrunk_ranges_stay_matchable_until_their_expiry():
    # make-before-break: the keys a neighbour stops asking for keep their
    # old route until the new one has had time to form
    crt = Crt(100, 100)
    crt.upsert("a0", "n1", "s1", sub(10, 20), keys(10, 20), 5.0, 0.0)
    assert not crt.upsert("a0", "n1", "s1", sub(10, 20), keys(10, 15), 8.0, 0.0)  # shrink: not news
    k = SCHEMA.attribute("a0").key(18.0)
    values = {"a0": 18.0, "a1": 1.0}
    assert crt.matching_neighbours("a0", k, values, 7.0, None) == ["n1"]
    assert crt.expire(9.0, -1.0) == [("a0", "s1")]
    assert crt.matching_neighbours("a0", k, values, 9.0, None) == []


def test_an_owner_silent_too_long_expires_whatever_refreshes_its_entry():
    # relays refreshing each other around a loop cannot keep a dead owner alive
    crt = Crt(100, 100)
    crt.upsert("a0", "n1", "s1", sub(10, 20), keys(10, 20), 50.0, heard=3.0)
    crt.upsert("a0", "n1", "s2", sub(10, 20), keys(10, 20), 50.0, heard=9.0)
    assert crt.expire(10.0, owner_silent_since=5.0) == [("a0", "s1")]
    assert crt.owners("a0") == ["s2"]


def test_caps_refuse_and_count():
    crt = Crt(max_entries_per_row=2, max_rows_per_attribute=1)
    assert crt.upsert("a0", "n1", "s1", sub(1, 2), keys(1, 2), 5.0, 0.0)
    assert crt.upsert("a0", "n1", "s2", sub(1, 2), keys(1, 2), 5.0, 0.0)
    assert not crt.upsert("a0", "n1", "s3", sub(1, 2), keys(1, 2), 5.0, 0.0)
    assert not crt.upsert("a0", "n2", "s4", sub(1, 2), keys(1, 2), 5.0, 0.0)
    assert crt.refused == 2 and len(crt) == 2


intervals = st.lists(
    st.tuples(st.integers(0, 10_000), st.integers(0, 500)).map(lambda t: (t[0], t[0] + t[1])),
    min_size=1,
    max_size=6,
)


@settings(max_examples=80, deadline=None)
@given(parts=st.lists(st.tuples(st.sampled_from(["n1", "n2", "n3"]), intervals), min_size=1))
def test_aggregation_never_loses_a_subscribers_range(parts):
    crt = Crt(1000, 1000)
    s = sub(1, 2)
    asked: dict[str, IntervalSet] = {}
    for nb, ivs in parts:
        ranges = IntervalSet.from_intervals(ivs)
        crt.upsert("a0", nb, "s1", s, ranges, 10.0, 0.0)
        asked[nb] = asked.get(nb, IntervalSet()) | ranges
    _, demand = crt.owner_demand("a0", "s1")
    for ranges in asked.values():
        # everything ever asked through any neighbour is still routed onward
        assert demand.covers(ranges)
        for lo, hi in ranges.intervals:
            for key in (lo, hi, (lo + hi) // 2):
                assert crt.rows["a0"]
                assert any(
                    e.holds(key, 5.0) for row in crt.rows["a0"].values() for e in row.values()
                )


def brute_force(crt: Crt, attr, key, values, now, exclude):
    out = []
    for nb, row in crt.rows.get(attr, {}).items():
        if nb != exclude and any(
            e.expiry >= now and e.holds(key, now) and e.sub.matches(values) for e in row.values()
        ):
            out.append(nb)
    return out


ops = st.lists(
    st.tuples(
        st.sampled_from(["upsert", "upsert", "remove", "query"]),
        st.integers(0, 5),  # neighbour
        st.integers(0, 7),  # owner
        st.floats(0, 1000),
        st.floats(0, 600),  # width: some entries are wide
        st.floats(0, 1000),  # event value
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(ops)
def test_the_key_index_finds_exactly_what_a_scan_finds(operations):
    crt = Crt(100, 100)
    for i, (op, nb, owner, lo, width, value) in enumerate(operations):
        now = float(i)
        if op == "upsert":
            hi = min(1000.0, lo + width)
            crt.upsert("a0", nb, owner, sub(lo, hi), keys(lo, hi), now + 5, now)
        elif op == "remove":
            crt.remove("a0", nb, owner)
        else:
            values = {"a0": value, "a1": 500.0}
            key = SCHEMA.attribute("a0").key(value)
            for exclude in (None, nb):
                assert crt.matching_neighbours("a0", key, values, now, exclude) == brute_force(
                    crt, "a0", key, values, now, exclude
                )
