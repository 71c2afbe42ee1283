"""The ledger's pair counting (vinifera/ledger.py) against a direct reading
of docs/metrics.md: every (life, event) pair tested one by one, the
subscription in force looked up for each. The ledger counts the same pairs
by stretches of events and a column of first-constraint values; whatever
the lives, subscription changes, ties and deliveries, the counts agree."""

from __future__ import annotations

import bisect
import math
from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from vinifera.ledger import Ledger, Receipts
from vinifera.schema import Schema
from vinifera.subscription import Subscription

SCHEMA = Schema.numeric(2, 0.0, 10.0)
NODES = ("n0", "n1", "n2", "n3")
# coarse times and values, so that ties (equal times, values on a bound) are common
TIMES = st.integers(0, 40).map(lambda i: i / 2)
VALUES = st.integers(0, 20).map(lambda i: i / 2)


def subscription_at(ledger: Ledger, node: str, t: float) -> Subscription | None:
    history = ledger.subs.get(node, [])
    i = bisect.bisect_right([h[0] for h in history], t) - 1
    return history[i][1] if i >= 0 else None


def counted_pair_by_pair(ledger: Ledger, records: list[dict]) -> dict:
    """docs/metrics.md's expected pairs, delivered pairs, hops, false
    positives and duplicates: lives, subscriptions and events read off the
    ledger, deliveries off the records themselves."""
    by_pair = defaultdict(list)
    for rec in records:
        if rec["ev"] == "deliver" and rec["eid"] in ledger.events:
            by_pair[(rec["eid"], rec["node"])].append((rec["t"], rec["hops"]))
    expected = delivered = hops = 0
    for node, lives in ledger.lives.items():
        for join, death in lives:
            for eid, (t, event) in ledger.events.items():
                if t < join or t + ledger.deadline > death:
                    continue
                sub = subscription_at(ledger, node, t)
                if sub is None or not sub.matches(event.values):
                    continue
                expected += 1
                got = by_pair.get((eid, node))
                if got and got[0][0] <= t + ledger.deadline:
                    delivered += 1
                    hops += got[0][1]
    false_positives = duplicates = 0
    for (eid, node), deliveries in by_pair.items():
        duplicates += len(deliveries) - 1
        for t, _ in deliveries:
            sub = subscription_at(ledger, node, t)
            if sub is None or not sub.matches(ledger.events[eid][1].values):
                false_positives += 1
    return {
        "expected_pairs": expected,
        "delivered_pairs": delivered,
        "path_length": round(hops / delivered, 6) if delivered else None,
        "false_positives": false_positives,
        "duplicates": duplicates,
    }


@st.composite
def subscriptions(draw):
    constraints = {}
    for name in draw(st.sets(st.sampled_from(["a0", "a1"]), min_size=1)):
        lo, hi = sorted((draw(VALUES), draw(VALUES)))
        constraints[name] = (lo, hi)
    return Subscription.build(SCHEMA, constraints).to_plain()


@st.composite
def histories(draw):
    """Log records in time order: joins, subscription changes (None is an
    unsubscription), leaves and crashes (sometimes missing: a node that
    joins twice without leaving), publications and deliveries."""
    records = []
    for node in NODES:
        for _ in range(draw(st.integers(0, 5))):
            kind = draw(st.sampled_from(["join", "subscribe", "leave", "crash"]))
            rec = {"t": draw(TIMES), "node": node, "ev": kind}
            if kind in ("join", "subscribe"):
                rec["sub"] = draw(st.none() | subscriptions())
            records.append(rec)
    for eid in range(draw(st.integers(0, 12))):
        names = draw(st.sets(st.sampled_from(["a0", "a1"]), min_size=1))
        values = [[name, draw(VALUES)] for name in sorted(names)]
        t = draw(TIMES)
        records.append({"t": t, "node": "n0", "ev": "publish", "eid": eid, "values": values})
        for node in draw(st.lists(st.sampled_from(NODES), max_size=5)):
            at = t + draw(st.integers(0, 8)) / 2
            records.append({"t": at, "node": node, "ev": "deliver", "eid": eid,
                            "hops": draw(st.integers(0, 9))})  # fmt: skip
    # time order; at equal times publications first, as the ledger asks
    records.sort(key=lambda r: (r["t"], r["ev"] != "publish"))
    return records


@settings(max_examples=300, deadline=None)
@given(histories(), TIMES, st.sampled_from([0.5, 2.0, 5.0]))
def test_pairs_are_counted_as_one_by_one(records, start, deadline):
    ledger = Ledger(SCHEMA, start, math.inf, deadline)
    for rec in records:
        ledger.feed(rec)
    summary = ledger.summary()
    expected = counted_pair_by_pair(ledger, records)
    assert {k: summary[k] for k in expected} == expected


def test_a_life_ends_where_the_deadline_would_outlast_it():
    """Boundaries by hand: an event counts for a life that spans its whole
    deadline (death == t + deadline included), not for one that does not."""
    ledger = Ledger(SCHEMA, 0.0, 100.0, 5.0)
    sub = Subscription.build(SCHEMA, {"a0": (1.0, 2.0)}).to_plain()
    ledger.feed({"t": 0.0, "node": "a", "ev": "join", "sub": sub})
    ledger.feed({"t": 0.0, "node": "b", "ev": "join", "sub": sub})
    ledger.feed({"t": 10.0, "node": "x", "ev": "publish", "eid": 1, "values": [["a0", 2.0]]})
    ledger.feed({"t": 10.0, "node": "x", "ev": "publish", "eid": 2, "values": [["a0", 2.5]]})
    ledger.feed({"t": 11.0, "node": "a", "ev": "deliver", "eid": 1, "hops": 3})
    ledger.feed({"t": 14.9, "node": "b", "ev": "crash"})
    ledger.feed({"t": 15.0, "node": "a", "ev": "leave"})
    summary = ledger.summary()
    assert summary["expected_pairs"] == 1  # a's; b died before the deadline; event 2 matches nobody
    assert summary["delivered_pairs"] == 1 and summary["path_length"] == 3


def test_a_repeated_delivery_is_one_duplicate_and_the_first_one_counts():
    ledger = Ledger(SCHEMA, 0.0, 100.0, 5.0)
    sub = Subscription.build(SCHEMA, {"a0": (1.0, 2.0)}).to_plain()
    ledger.feed({"t": 0.0, "node": "a", "ev": "join", "sub": sub})
    ledger.feed({"t": 10.0, "node": "x", "ev": "publish", "eid": 1, "values": [["a0", 2.0]]})
    ledger.feed({"t": 11.0, "node": "a", "ev": "deliver", "eid": 1, "hops": 4})
    ledger.feed({"t": 12.0, "node": "a", "ev": "deliver", "eid": 1, "hops": 2})
    ledger.feed({"t": 13.0, "node": "a", "ev": "subscribe", "sub": None})
    ledger.feed({"t": 14.0, "node": "a", "ev": "deliver", "eid": 1, "hops": 1})
    summary = ledger.summary()
    assert summary["delivered_pairs"] == 1 and summary["path_length"] == 4
    assert summary["duplicates"] == 2
    assert summary["false_positives"] == 1  # the third, after unsubscribing


def test_an_event_published_as_the_subscription_changes_counts_once_under_the_new_one():
    ledger = Ledger(SCHEMA, 0.0, 100.0, 5.0)
    wide = Subscription.build(SCHEMA, {"a0": (0.0, 5.0)}).to_plain()
    narrow = Subscription.build(SCHEMA, {"a0": (1.0, 2.0)}).to_plain()
    ledger.feed({"t": 0.0, "node": "a", "ev": "join", "sub": wide})
    ledger.feed({"t": 10.0, "node": "x", "ev": "publish", "eid": 1, "values": [["a0", 2.0]]})
    ledger.feed({"t": 10.0, "node": "x", "ev": "publish", "eid": 2, "values": [["a0", 3.0]]})
    ledger.feed({"t": 10.0, "node": "a", "ev": "subscribe", "sub": narrow})
    summary = ledger.summary()
    # event 1 under the narrow one; event 2 matches only the wide one
    assert summary["expected_pairs"] == 1
    assert summary == {**summary, **counted_pair_by_pair(ledger, [])}


@st.composite
def copies(draw):
    """Publications (some before the window) and recv / drop records of
    their copies and of unknown events, in time order, among nodes alive
    throughout."""
    records = [{"t": 0.0, "node": node, "ev": "join", "sub": None} for node in NODES]
    for eid in range(draw(st.integers(0, 6))):
        t = draw(TIMES)
        records.append({"t": t, "node": "n0", "ev": "publish", "eid": eid, "values": [["a0", 1.0]]})
        for _ in range(draw(st.integers(0, 6))):
            rec = {
                "t": t + draw(st.integers(0, 8)) / 2,
                "node": draw(st.sampled_from(NODES)),
                "ev": draw(st.sampled_from(["recv", "drop"])),
                "eid": draw(st.sampled_from([eid, 99])),  # 99: never published
                "match": draw(st.booleans()),
            }
            if rec["ev"] == "recv":
                rec["fwd"] = draw(st.integers(0, 2))
            else:
                rec["up"] = draw(st.booleans())
            rec["attr"] = draw(st.sampled_from([None, "a0"]))
            rec["had"] = draw(st.booleans())
            records.append(rec)
    records.sort(key=lambda r: (r["t"], r["ev"] != "publish"))
    return records


@settings(max_examples=200, deadline=None)
@given(copies(), TIMES, st.integers(1, 4))
def test_receipts_summed_in_stretches_count_as_records_fed_one_by_one(records, start, stretches):
    """sim/parallel.py's workers sum recv and drop records (Receipts) and
    the ledger adds each sum after the publishes of its stretch: the same
    counts, loads and overhead as feeding every record."""
    one = Ledger(SCHEMA, start, 15.0, 2.0)
    for rec in records:
        one.feed(rec)
    summed = Ledger(SCHEMA, start, 15.0, 2.0)
    cut = max(1, len(records) // stretches)
    for i in range(0, len(records), cut):
        receipts = Receipts()
        for rec in records[i : i + cut]:
            if rec["ev"] in ("recv", "drop"):
                receipts.add(rec)
            else:
                summed.feed(rec)
        summed.add_receipts(receipts)
    assert summed.summary() == one.summary()
    assert summed.forwarded == one.forwarded
    assert (summed.received, summed.received_uninterested, summed.dropped) == (
        one.received, one.received_uninterested, one.dropped)  # fmt: skip
    assert summed.messages == one.messages


def _copy(t, node, ev, eid, match, had, attr="a0", up=False, fwd=0):
    rec = {"t": t, "node": node, "ev": ev, "eid": eid, "match": match, "had": had, "attr": attr}
    if ev == "recv":
        rec["fwd"] = fwd
    else:
        rec["up"] = up
    return rec


def test_redundancy_node_overhead_and_drops_by_kind_by_hand():
    """Two events. Event 1 reaches a (interested) twice and b (not) once:
    node-based overhead 1/2, one redundant copy of three. Event 2 reaches
    c (not) only, then c drops a redundant push, a dropped up copy
    reaches d and a dropped down copy reaches a: 1/1 (drops are no node's
    first copy). Mean over events: (0.5 + 1.0) / 2."""
    ledger = Ledger(SCHEMA, 0.0, 100.0, 5.0)
    for node in ("a", "b", "c", "d"):
        ledger.feed({"t": 0.0, "node": node, "ev": "join", "sub": None})
    ledger.feed({"t": 10.0, "node": "x", "ev": "publish", "eid": 1, "values": [["a0", 2.0]]})
    ledger.feed({"t": 10.0, "node": "x", "ev": "publish", "eid": 2, "values": [["a0", 3.0]]})
    for rec in (
        _copy(10.1, "a", "recv", 1, True, False, fwd=1),
        _copy(10.2, "b", "recv", 1, False, False),
        _copy(10.3, "a", "recv", 1, True, True, attr=None),
        _copy(10.1, "c", "recv", 2, False, False),
        _copy(10.2, "c", "drop", 2, False, True, attr=None),
        _copy(10.2, "d", "drop", 2, False, False, up=True),
        _copy(10.2, "a", "drop", 2, False, False),
    ):
        ledger.feed(rec)
    s = ledger.summary()
    assert s["event_messages"] == 7 and s["event_messages_redundant"] == 2
    assert s["redundancy"] == round(2 / 7, 6)
    assert s["node_overhead"] == 0.75
    assert (s["dropped_up"], s["dropped_down"], s["dropped_push"]) == (1, 1, 1)
    assert s["dropped_redundant"] == 1 and s["event_messages_dropped"] == 3


def test_the_route_to_the_rendezvous_is_the_first_record_of_each_tree():
    """Per (event, attribute), the first rendezvous record by time counts
    (a stale ring's later one does not); events outside the window do not."""
    ledger = Ledger(SCHEMA, 5.0, 100.0, 5.0)
    ledger.feed({"t": 1.0, "node": "x", "ev": "publish", "eid": 9, "values": [["a0", 1.0]]})
    ledger.feed({"t": 10.0, "node": "x", "ev": "publish", "eid": 1,
                 "values": [["a0", 2.0], ["a1", 1.0]]})  # fmt: skip
    ledger.feed({"t": 10.0, "node": "x", "ev": "publish", "eid": 2, "values": [["a0", 3.0]]})
    for t, eid, attr, hops in ((1.5, 9, "a0", 9), (10.0, 2, "a0", 0), (10.5, 1, "a0", 4),
                               (10.6, 1, "a1", 2), (11.0, 1, "a0", 7)):  # fmt: skip
        ledger.feed({"t": t, "node": "r", "ev": "rendezvous", "eid": eid, "attr": attr,
                     "hops": hops})  # fmt: skip
    assert ledger.summary()["route_hops"] == 2.0  # (0 + 4 + 2) / 3
    assert Ledger(SCHEMA, 0.0, 1.0, 5.0).summary()["route_hops"] is None
