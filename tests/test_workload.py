"""The reference workloads of docs/experiments.md."""

import random
from collections import Counter

import pytest

from vinifera.schema import Attribute, AttrType, Schema
from vinifera.subscription import Event, Subscription
from vinifera.workload import Workload

N = 4000


def bucket(v: float) -> int:
    return min(int(v // 20.0), 49)  # 50 buckets over [0, 1000]


def top5_share(values) -> float:
    counts = Counter(bucket(v) for v in values)
    return sum(c for _, c in counts.most_common(5)) / len(values)


def test_skewed_events_concentrate():
    w = Workload("skewed", Schema.numeric(1), random.Random(1))
    rng = random.Random(2)
    share = top5_share([w.event_values(rng)["a0"] for _ in range(N)])
    # Zipf(1) over 50 buckets puts ~51% of the mass on the top 5; uniform 10%.
    assert share > 0.40


def test_skewed_follows_the_ranking():
    w = Workload("skewed", Schema.numeric(1), random.Random(1))
    ranking = w.bucket_ranking("a0")
    assert sorted(ranking) == list(range(50))
    rng = random.Random(3)
    counts = Counter(bucket(w.event_values(rng)["a0"]) for _ in range(N))
    # The most popular bucket has weight 1/H(50) ~ 22%.
    assert 0.18 < counts[ranking[0]] / N < 0.27
    assert counts[ranking[0]] > counts[ranking[1]] > counts[ranking[9]]


def test_random_events_do_not_concentrate():
    w = Workload("random", Schema.numeric(1), random.Random(1))
    rng = random.Random(2)
    assert top5_share([w.event_values(rng)["a0"] for _ in range(N)]) < 0.15


@pytest.mark.parametrize("kind", ["random", "skewed"])
def test_subscriptions_have_reference_shape(kind):
    schema = Schema.numeric(3)
    w = Workload(kind, schema, random.Random(7))
    rng = random.Random(8)
    widths = []
    for _ in range(1000):
        s = w.subscription(rng)
        assert isinstance(s, Subscription)
        assert s.attributes == ("a0", "a1", "a2")  # every attribute constrained
        for _, lo, hi in s.constraints:
            assert 0.0 <= lo <= hi <= 1000.0
            assert hi - lo <= 100.0 + 1e-9
            if lo > 0.0 and hi < 1000.0:  # not clipped
                assert hi - lo >= 10.0 - 1e-9
                widths.append(hi - lo)
    assert 50 < sum(widths) / len(widths) < 60  # uniform in [10, 100] has mean 55
    assert min(widths) < 15 and max(widths) > 95


def test_skewed_subscriptions_concentrate_per_attribute():
    schema = Schema.numeric(2)
    w = Workload("skewed", schema, random.Random(11))
    assert w.bucket_ranking("a0") != w.bucket_ranking("a1")  # independent per attribute
    rng = random.Random(12)
    subs = [w.subscription(rng) for _ in range(N)]
    for i, name in enumerate(schema.names):
        centres = [(s.constraints[i][1] + s.constraints[i][2]) / 2 for s in subs]
        assert top5_share(centres) > 0.35, name


@pytest.mark.parametrize("kind", ["random", "skewed"])
def test_determinism(kind):
    schema = Schema.numeric(2)

    def draw(seed_w, seed_d):
        w = Workload(kind, schema, random.Random(seed_w))
        rng = random.Random(seed_d)
        return [w.subscription(rng) for _ in range(20)] + [w.event(rng) for _ in range(20)]

    assert draw(1, 2) == draw(1, 2)
    assert draw(1, 2) != draw(1, 3)
    if kind == "skewed":
        assert draw(1, 2) != draw(5, 2)


def test_events_are_valid_events():
    schema = Schema.numeric(2)
    w = Workload("random", schema, random.Random(1))
    rng = random.Random(2)
    for _ in range(200):
        e = w.event(rng)
        assert isinstance(e, Event)
        assert set(e.values) == {"a0", "a1"}
        assert all(0.0 <= v <= 1000.0 for v in e.values.values())


def test_int_attributes():
    schema = Schema([Attribute("n", AttrType.INT, 0, 9), Attribute("m", AttrType.INT, 0, 1000)])
    w = Workload("random", schema, random.Random(1), width_min=2, width_max=4)
    rng = random.Random(2)
    counts = Counter(w.event_values(rng)["n"] for _ in range(5000))
    assert set(counts) == set(range(10))  # both ends reachable
    assert max(counts.values()) < 2 * min(counts.values())
    for _ in range(500):
        s = w.subscription(rng)
        for _, lo, hi in s.constraints:
            assert type(lo) is int and type(hi) is int and lo <= hi
            assert hi - lo <= 4
    ws = Workload("skewed", schema, random.Random(1), buckets=5)
    vals = [ws.event_values(rng)["m"] for _ in range(500)]
    assert all(type(v) is int and 0 <= v <= 1000 for v in vals)


def test_rejects_bad_configuration():
    with pytest.raises(ValueError, match="kind"):
        Workload("zipf", Schema.numeric(1), random.Random(1))
    with pytest.raises(ValueError, match="string"):
        Workload("random", Schema([Attribute("c", AttrType.STRING)]), random.Random(1))
    with pytest.raises(ValueError):
        Workload("random", Schema.numeric(1), random.Random(1), width_min=50, width_max=10)
    with pytest.raises(ValueError):
        Workload("skewed", Schema.numeric(1), random.Random(1), buckets=0)
