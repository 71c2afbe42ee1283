"""The content layer in the simulator: the docs/experiments.md metrics.

Default-suite tests use a few hundred nodes; the N = 1,000 acceptance runs
of the issue are marked slow (scripts/test.sh -m slow)."""

import math
from collections import Counter

import pytest

from vinifera.protocol.config import ContentConfig, OverlayConfig, profile
from vinifera.sim.config import ChurnStep, SimConfig
from vinifera.sim.driver import Simulation
from vinifera.subscription import Event


def run(system="vinifera", nodes=200, rounds=45, seed=2, **kw):
    kw.setdefault("events_per_round", 10)
    return Simulation(
        SimConfig.for_system(system, nodes=nodes, rounds=rounds, seed=seed, **kw)
    ).run()


def exact(summary, min_pairs=100):
    assert summary["expected_pairs"] > min_pairs
    assert summary["hit_ratio"] == 1.0, summary
    assert summary["false_positives"] == 0
    assert summary["duplicates"] == 0


def test_skewed_with_eight_friends_delivers_everything_exactly_once():
    exact(run(subscriptions="skewed", overlay=OverlayConfig(friends=8, small_world=0)))


def test_random_subscriptions():
    exact(run(nodes=150, subscriptions="random"))


def test_three_attributes():
    # every attribute constrained: matches are rarer, hence the lower floor
    exact(run(nodes=200, subscriptions="skewed", attributes=3), min_pairs=20)


def test_the_baseline_is_correct_too():
    exact(run("baseline", subscriptions="skewed"))


def test_keep_alives_spread_evenly_after_a_simultaneous_start():
    # Each node keeps its rows alive every third tick at a phase of its own.
    # Its first tick comes a period after it starts: a phase drawn at the
    # start fell on that tick for half the nodes (then 49% / 33% / 18%).
    sim = Simulation(
        SimConfig.for_system("vinifera", nodes=300, rounds=8, seed=4, subscriptions="skewed")
    )
    sim.run()
    period = sim.nodes[0].content.period
    phases = Counter(
        int(node.content.installation.next_keep_alive // period) % 3 for node in sim.nodes
    )
    assert sorted(phases) == [0, 1, 2]
    assert all(0.25 * 300 <= n <= 0.42 * 300 for n in phases.values()), phases


def test_every_driver_defaults_to_one_link_mix():
    """The simulator API, the command line and the daemon run Vinifera with
    the same links (the API once defaulted to K_f = 8, K_sw = 0, which
    routes at ~28 hops over our identifiers)."""
    from vinifera.daemon.settings import NodeSettings
    from vinifera.schema import Schema

    friends, small_world = profile("vinifera").friends, profile("vinifera").small_world
    overlay = SimConfig.for_system("vinifera", nodes=10, rounds=1).overlay
    assert (overlay.friends, overlay.small_world) == (friends, small_world)
    plain = SimConfig(nodes=10, rounds=1).overlay
    assert (plain.friends, plain.small_world) == (friends, small_world) == (4, 4)
    daemon = NodeSettings(schema=Schema.numeric(1)).overlay_config()
    assert (daemon.friends, daemon.small_world) == (friends, small_world)


@pytest.fixture(scope="module", params=["skewed", "random"])
def pair(request):
    return (
        request.param,
        run(subscriptions=request.param),
        run("baseline", subscriptions=request.param),
    )


def test_vinifera_paths_are_shorter_and_cost_fewer_uninterested_messages(pair):
    """Pushes to interested links shorten deliveries; the tree and the
    value rendezvous keep uninterested relays off the path."""
    _, vinifera, baseline = pair
    assert vinifera["path_length"] < baseline["path_length"]
    assert vinifera["traffic_overhead"] < baseline["traffic_overhead"]

    def uninterested(s):
        return s["traffic_overhead"] * s["event_messages"]

    assert uninterested(vinifera) < uninterested(baseline)


def test_vinifera_spreads_the_load_the_baseline_concentrates(pair):
    _, vinifera, baseline = pair
    assert vinifera["load_max"] < baseline["load_max"]
    assert baseline["load_max"] > 0.9  # its rendezvous relays nearly everything


def test_vinifera_overhead_against_the_baseline(pair):
    workload, vinifera, baseline = pair
    if workload == "skewed":
        assert vinifera["traffic_overhead"] < 0.8 * baseline["traffic_overhead"]
    else:
        # at 200 nodes random subscriptions give about the baseline's overhead
        # (as the paper finds at K_f = 0); the gain shows at 1,000 nodes
        assert vinifera["traffic_overhead"] < 1.1 * baseline["traffic_overhead"]


def test_capacity_drops_are_counted_and_hurt_the_baseline_more():
    from dataclasses import replace

    from vinifera.protocol.config import BASELINE_CONTENT

    v = Simulation(
        SimConfig(
            nodes=150, rounds=45, seed=2, events_per_round=10, content=ContentConfig(capacity=4)
        )
    ).run()
    b = SimConfig.for_system("baseline", nodes=150, rounds=45, seed=2, events_per_round=10)
    b = Simulation(replace(b, content=replace(BASELINE_CONTENT, capacity=4))).run()
    assert b["event_messages_dropped"] > 0
    assert v["hit_ratio"] > b["hit_ratio"]


def test_rows_that_overshoot_deliver_exactly_with_fewer_uninterested_copies():
    # 16 is the default (docs/decisions/rows-and-routing.md, "Rows that
    # overshoot a key only to a node sixteen times nearer"): a subscription's
    # rows stay among the nodes around its keys, where clockwise rows go the
    # long way round
    clockwise = run(nodes=150, subscriptions="skewed", content=ContentConfig(rows_overshoot=0))
    for overshoot in (1, 16):
        rows = run(
            nodes=150, subscriptions="skewed", content=ContentConfig(rows_overshoot=overshoot)
        )
        exact(rows)
        assert rows["traffic_overhead"] < 0.7 * clockwise["traffic_overhead"], overshoot


def test_crash_of_ten_percent_heals_within_bounded_rounds():
    kill, heal = 20, 10  # the bound: hit ratio 1.0 for events published 10 rounds after
    cfg = SimConfig.for_system(
        "vinifera",
        nodes=200,
        rounds=kill + 62,
        seed=4,
        events_per_round=10,
        churn=(ChurnStep(kill, "kill", fraction=0.1),),
        warmup_rounds=kill + heal,
    )
    sim = Simulation(cfg)
    content = cfg.content
    seen = {}

    def rows_from_dead():
        dead = set(sim.death_time)
        return [(a, nb) for a, n in sim.alive.items()
                for by_nb in n.content.crt.rows.values() for nb in by_nb if nb in dead]  # fmt: skip

    def ghost_rows():
        """Rows, anywhere, that match an event only dead subscribers wanted."""
        alive_subs = [n.subscription for n in sim.alive.values() if n.subscription is not None]
        out = []
        for d in sim.death_time:
            sub = sim.nodes[d].subscription
            lo, hi = sub.range_of("a0")
            event = Event.build(sim.schema, {"a0": (lo + hi) / 2})
            if any(s.matches(event.values) for s in alive_subs):
                continue
            key = event.keys()["a0"]
            out += [(a, nb) for a, n in sim.alive.items()
                    for nb, row in n.content.crt.rows.get("a0", {}).items()
                    if row.matches(key, event.keys(), sim.now)]  # fmt: skip
        return out

    def check(r):
        if r == kill - 1:
            seen["rows_before"] = sum(len(by) for n in sim.alive.values()
                                      for by in n.content.crt.rows.values())  # fmt: skip
        if r == kill + math.ceil(content.crt_expiry) + 1:
            seen["rows_from_dead"] = rows_from_dead()
        if r == kill + 2 * math.ceil(content.crt_expiry) + 2:
            seen["ghosts"] = ghost_rows()

    summary = sim.run(progress=check)
    assert len(sim.death_time) == 20
    # a dead neighbour's rows expire without keep-alives; then what they
    # carried leaves the rows downstream, and what those dropped expires
    assert seen["rows_before"] > 0
    assert seen["rows_from_dead"] == []
    assert seen["ghosts"] == []
    exact(summary)


def test_balancing_moves_identifiers_and_keeps_every_delivery():
    on = run(nodes=200, rounds=60, seed=3)
    off = run(nodes=200, rounds=60, seed=3, content=ContentConfig(balancing=False))
    assert on["identifier_moves"] > 0 and off["identifier_moves"] == 0
    exact(on)


def balancing_pair(nodes, rounds, seed):
    """Skewed, the command line's mix, balancing on and off: each run's
    summary and its nodes' rendezvous loads (events per period lately),
    busiest first."""
    common = dict(nodes=nodes, rounds=rounds, seed=seed, subscriptions="skewed",
                  events_per_round=10)  # fmt: skip
    out = []
    for content in (ContentConfig(), ContentConfig(balancing=False)):
        sim = Simulation(SimConfig.for_system("vinifera", content=content, **common))
        summary = sim.run()
        loads = sorted((n.content.load() for n in sim.nodes if n is not None), reverse=True)
        out.append((summary, loads))
    return out


@pytest.mark.slow
def test_balancing_lowers_the_busiest_rendezvous_load_on_every_seed():
    """What Karger-Ruhl balancing moves is rendezvous load: at 300 nodes,
    seeds 1-6, the busiest rendezvous has 0.3-0.4 events per period on
    against 0.4-0.7 off, on every seed. (The busiest *forwarding* load is
    a tree relay in the hot cluster, which identifiers do not move: on
    against off 1.444 / 1.432 over those seeds, N = 1,000 0.856 / 0.836
    over seeds 1-3; docs/decisions/delivery-efficiency.md.)"""
    for seed in (1, 2, 3):
        (on, on_loads), (off, off_loads) = balancing_pair(300, 60, seed)
        exact(off)
        assert on["identifier_moves"] > 0 and on["hit_ratio"] == 1.0
        assert on_loads[0] < off_loads[0] and sum(on_loads[:10]) < sum(off_loads[:10]), seed


# ---------------------------------------------------------------- N = 1,000


@pytest.mark.slow
@pytest.mark.parametrize("subscriptions", ["skewed", "random"])
def test_thousand_nodes_exact_delivery(subscriptions):
    """The paper's link mix (K_f = 8, K_sw = 0). With no small-world links
    an event crosses a subscription's arc along the ring: paths average
    25-29 hops and reach 90, about 5 rounds at the default latency, so the
    tail sits at the 5-round deadline and which pairs miss it by a few
    hundredths of a round depends on the draw (random: 1 pair of 24,402 at
    13e3151, none at b6fa2aa, 7 since 9f05e8c; docs/decisions/links.md,
    "The paper's mix: a tail at the deadline"). What the
    mix guarantees: every expected pair delivered, once, to the right
    nodes, within 10 rounds, and all but that tail within 5."""
    sim = Simulation(
        SimConfig.for_system(
            "vinifera",
            nodes=1000,
            rounds=100,
            seed=1,
            subscriptions=subscriptions,
            events_per_round=10,
            overlay=OverlayConfig(friends=8, small_world=0),
            deadline_rounds=10,  # events published by round 90, so each has 10 rounds
        )
    )
    exact(sim.run())
    sim.ledger.deadline = 5.0
    at_five = sim.ledger.summary()
    assert at_five["hit_ratio"] >= 0.999, at_five


@pytest.mark.slow
def test_thousand_nodes_three_attributes():
    exact(run(nodes=1000, rounds=100, seed=1, subscriptions="skewed", attributes=3))


@pytest.fixture(scope="module", params=["skewed", "random"])
def thousand_pair(request):
    """Vinifera with the command line's link mix (K_f = 4, K_sw = 4) beside
    the baseline, N = 1,000, as the table of docs/decisions/links.md, "The
    link mix"."""
    common = dict(nodes=1000, rounds=100, seed=1, subscriptions=request.param)
    return run(**common), run("baseline", **common)


@pytest.mark.slow
def test_thousand_nodes_vinifera_costs_less_than_the_baseline(thousand_pair):
    v, b = thousand_pair
    assert v["hit_ratio"] == 1.0 and b["hit_ratio"] == 1.0
    assert v["false_positives"] == v["duplicates"] == 0
    assert v["traffic_overhead"] < b["traffic_overhead"]
    assert v["load_max"] < b["load_max"]


@pytest.mark.slow
def test_thousand_nodes_vinifera_paths_are_shorter_than_the_baseline(thousand_pair):
    v, b = thousand_pair
    assert v["path_length"] < b["path_length"]


@pytest.mark.slow
def test_thousand_nodes_balancing_lowers_the_busiest_rendezvous_load():
    """As at 300 nodes, on each of three seeds."""
    for seed in (1, 2, 3):
        (on, on_loads), (off, off_loads) = balancing_pair(1000, 100, seed)
        assert on["hit_ratio"] == 1.0 and off["hit_ratio"] == 1.0
        assert on["identifier_moves"] > 0
        assert on_loads[0] < off_loads[0] and sum(on_loads[:10]) < sum(off_loads[:10]), seed
