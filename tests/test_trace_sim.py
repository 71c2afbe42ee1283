"""Trace-driven simulation: nodes join and depart as a churn trace says
(`vinifera sim run --trace`, vinifera/sim/replay.py)."""

from __future__ import annotations

import gc
import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from vinifera.churn_traces import bundled_trace_path, read_bundled_trace, window
from vinifera.cli.main import main
from vinifera.gcpolicy import RetiredNodes
from vinifera.protocol.actions import Deliver
from vinifera.protocol.config import ContentConfig
from vinifera.sim.config import SimConfig
from vinifera.sim.driver import Simulation
from vinifera.sim.logwriter import LOG_FILE_NAME
from vinifera.sim.replay import TraceReplay

# What the 48 h Skype replay reaches at 240 s per round
# (docs/decisions/churn.md, "Trace replays at 240 s per round"):
HIT_REACHED = 0.99  # 48 h at 240 s per round: 0.9947 with pushes (0.984 without)
from skype_trace import SKYPE_PATH  # noqa: E402

HOUR = 3600


def replay(hours=10, round_seconds=300, measure_from=6 * HOUR, **kw) -> TraceReplay:
    """The bundled synthetic trace (300 nodes, 3 days): its first `hours`."""
    tr = window(read_bundled_trace(), 0, hours * HOUR)
    return TraceReplay(tr, round_seconds, measure_from=measure_from, **kw)


def records(log_dir: Path) -> list[dict]:
    with open(log_dir / LOG_FILE_NAME, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


@pytest.fixture(scope="module")
def crash_run(tmp_path_factory):
    rp = replay()
    log_dir = tmp_path_factory.mktemp("crash")
    sim = Simulation(SimConfig.for_trace(rp, events_per_round=10, seed=3), log_dir=log_dir)
    return rp, sim, sim.run(), records(log_dir)


def test_alive_population_follows_the_trace(crash_run):
    rp, _, summary, recs = crash_run
    lives = defaultdict(list)  # node -> [[join, death]]
    for r in recs:
        if r["ev"] == "join":
            lives[r["node"]].append([r["t"], float("inf")])
        elif r["ev"] in ("crash", "leave"):
            assert lives[r["node"]][-1][1] == float("inf"), "departed twice"
            lives[r["node"]][-1][1] = r["t"]
    checked = 0
    # Half a round in: trace times (k + 1/2) * S are whole seconds, away from churn ties.
    for k in range(0, rp.rounds):
        t = k + 0.5
        logged = sum(1 for ls in lives.values() for j, d in ls if j <= t < d)
        assert logged == rp.online_at(t * rp.round_seconds), f"round {k}"
        checked += logged > 0
    assert checked > 100
    assert summary["alive_nodes"] == rp.online_at(rp.trace.end - 1)


def test_every_session_joins_with_its_subscription_and_every_end_is_a_crash(crash_run):
    rp, sim, summary, recs = crash_run
    names = rp.node_names
    joins = [r for r in recs if r["ev"] == "join"]
    crashes = Counter(r["node"] for r in recs if r["ev"] == "crash")
    assert not any(r["ev"] == "leave" for r in recs)
    per_node = defaultdict(list)
    for r in joins:
        per_node[r["node"]].append(r)
    assert set(per_node) == {str(a) for a in range(len(names))}
    ends_inside = 0
    for address, name in enumerate(names):
        sessions = rp.trace.sessions[name]
        mine = per_node[str(address)]
        # one join per session, at its start, always with the node's one subscription
        assert [r["t"] * rp.round_seconds for r in mine] == pytest.approx([s for s, _ in sessions])
        assert len({json.dumps(r["sub"]) for r in mine}) == 1 and mine[0]["sub"]
        # a fresh incarnation each time: a new identifier per session
        if len(mine) > 1:
            assert len({r["id"] for r in mine}) == len(mine)
        inside = sum(1 for _, e in sessions if e < rp.trace.end)
        assert crashes[str(address)] == inside
        ends_inside += inside
    assert summary["joins"] == len(joins) == rp.trace.session_count
    assert summary["rejoins"] == rp.trace.session_count - len(names) > 0
    # Each replaced incarnation is counted (and discarded: see below).
    assert sim.retired_nodes.retired == summary["rejoins"]
    assert summary["departures"] == ends_inside > 0


def test_replay_delivers_exactly_and_nearly_everything(crash_run):
    _, _, summary, _ = crash_run
    assert summary["warmup_rounds"] == 72  # 6 h at 300 s per round
    assert summary["expected_pairs"] > 3000
    assert summary["false_positives"] == 0
    assert summary["duplicates"] == 0
    # 300 s rounds are coarse for this trace (5 joins and 5 crashes per hour
    # among ~130 nodes); docs/decisions/churn.md ("Acknowledged event copies,
    # and the round length") has the hit ratio against the round length
    # (this run: 0.997 with aggregated rows; per-owner entries gave 0.997,
    # 0.988 before push, 0.927 before catch-up and heirs).
    assert summary["hit_ratio"] >= 0.99


def test_event_retry_is_what_keeps_delivery_up_under_churn(crash_run):
    rp, _, with_retry, _ = crash_run
    cfg = SimConfig.for_trace(
        rp, events_per_round=10, seed=3, content=ContentConfig(event_retry=False)
    )
    without = Simulation(cfg).run()
    assert without["expected_pairs"] == with_retry["expected_pairs"]
    # Misses without retry / with it, seeds 1-3: 4x, 18x and 20x (the hit
    # ratio 0.007-0.028 lower); 12x, 20x and 4x with the simulator's single
    # network stream before per-node streams (0.013-0.030 lower).
    missed_with, missed_without = 1 - with_retry["hit_ratio"], 1 - without["hit_ratio"]
    assert missed_without > 3 * missed_with and missed_without > 0.005


def _tree_only(rp, **content):
    """The crash_run replay with pushes off (the tree alone delivers)."""
    cfg = ContentConfig(push=False, **content)
    return Simulation(SimConfig.for_trace(rp, events_per_round=10, seed=3, content=cfg)).run()


def test_catch_up_serves_the_subscribers_the_tree_reaches_late(crash_run):
    rp, _, _, _ = crash_run
    with_catch_up, without = _tree_only(rp), _tree_only(rp, catch_up=0)
    assert without["expected_pairs"] == with_catch_up["expected_pairs"]
    assert without["duplicates"] == with_catch_up["duplicates"] == 0
    # this run: 0.947 without, 0.994 with
    assert without["hit_ratio"] < with_catch_up["hit_ratio"] - 0.015


def test_pushes_reach_newcomers_before_their_subscription_is_in_the_tree(crash_run):
    """A newcomer's links know its subscription from its profile at once;
    its subscription reaches the tree periods later. Catch-up is off on
    both sides: with it the tree alone serves nearly every newcomer."""
    rp, _, _, _ = crash_run
    cfg = SimConfig.for_trace(rp, events_per_round=10, seed=3, content=ContentConfig(catch_up=0))
    with_push, without = Simulation(cfg).run(), _tree_only(rp, catch_up=0)
    assert without["expected_pairs"] == with_push["expected_pairs"]
    assert with_push["duplicates"] == with_push["false_positives"] == 0
    # this run: 0.947 without, 0.985 with
    assert with_push["hit_ratio"] > without["hit_ratio"] + 0.02


def test_graceful_departures_log_leaves(tmp_path):
    rp = replay(hours=6, round_seconds=900, measure_from=None, departures="leave")
    summary = Simulation(SimConfig.for_trace(rp, events_per_round=2), log_dir=tmp_path).run()
    evs = Counter(r["ev"] for r in records(tmp_path))
    assert evs["crash"] == 0
    assert evs["leave"] == summary["departures"] > 0
    assert summary["false_positives"] == 0 and summary["duplicates"] == 0


class CyclicGarbageAtEachRetirement(RetiredNodes):
    """Collects at every retirement and keeps what only the cyclic collector
    could free (the incarnation retired just before: the driver still holds
    the newest one while it reports it)."""

    def __init__(self) -> None:
        super().__init__()
        self.cyclic: Counter = Counter()

    def retire(self) -> None:
        super().retire()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            gc.collect()
        finally:
            gc.set_debug(0)
        self.cyclic.update(type(o).__qualname__ for o in gc.garbage)
        gc.garbage.clear()
        gc.collect()


def test_a_retired_incarnation_leaves_no_cyclic_garbage():
    """Node.discard breaks a replaced incarnation's cycles (layers that refer
    to each other, handler tables of bound methods), so reference counting
    frees it and the simulator need not walk every live node to find it."""
    rp = replay(hours=16, round_seconds=900, measure_from=None)  # 39 rejoins
    sim = Simulation(SimConfig.for_trace(rp, events_per_round=5, seed=4))
    sim.retired_nodes = retired = CyclicGarbageAtEachRetirement()
    summary = sim.run()
    assert retired.retired == summary["rejoins"] > 20
    assert summary["delivered_pairs"] > 0
    assert not retired.cyclic, retired.cyclic.most_common(10)


def test_same_seed_same_bytes(tmp_path):
    outs = []
    for run in ("a", "b"):
        rp = replay(hours=5, round_seconds=900, measure_from=None)
        Simulation(
            SimConfig.for_trace(rp, events_per_round=5, seed=9), log_dir=tmp_path / run
        ).run()
        outs.append((tmp_path / run / LOG_FILE_NAME).read_bytes())
    assert outs[0] == outs[1]
    assert b'"ev":"crash"' in outs[0] and b'"ev":"deliver"' in outs[0]


def test_replay_validates_its_input():
    tr = window(read_bundled_trace(), 0, HOUR)
    for bad in (0, -5, float("nan")):
        with pytest.raises(ValueError, match="round_seconds"):
            TraceReplay(tr, bad)
    with pytest.raises(ValueError, match="departures"):
        TraceReplay(tr, 60, departures="vanish")
    with pytest.raises(ValueError, match="measure_from"):
        TraceReplay(tr, 60, measure_from=2 * HOUR)
    with pytest.raises(ValueError, match="use for_trace"):
        SimConfig(nodes=5, rounds=3, replay=TraceReplay(tr, 60))


# ---------------------------------------------------------------- the CLI


def cli(*args):
    return CliRunner().invoke(main, ["sim", "run", *map(str, args)])


def test_cli_replay_writes_manifest_and_summary(tmp_path):
    out = tmp_path / "run"
    res = cli(
        "--trace", bundled_trace_path(), "--round-seconds", 900, "--start", 2, "--end", 8,
        "--glitches", "filter", "--events-per-round", 3, "--log-dir", out, "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    manifest = json.loads((out / "manifest.json").read_text())
    r = manifest["config"]["replay"]
    assert r["round_seconds"] == 900 and r["rounds"] == 24 == summary["rounds"]
    assert r["start_hours"] == 2 and r["end_hours"] == 8
    assert r["glitches"] == "filter" and r["glitches_filtered"] == []
    assert r["departures"] == "crash" == summary["departure_kind"]
    # the flash crowd of the synthetic trace ends at 4.09 h: 2.09 h into this window
    assert r["startup"]["time_h"] == pytest.approx(2.09, abs=0.01)
    assert r["measure_from_hours"] == 3 and summary["warmup_rounds"] == 12
    assert len(r["trace_md5"]) == 32
    assert json.loads((out / "summary.json").read_text())["expected_pairs"] > 0


def test_cli_measure_from_overrides_the_default(tmp_path):
    res = cli(
        "--trace", bundled_trace_path(), "--round-seconds", 1800, "--end", 6,
        "--measure-from", 1.5, "--events-per-round", 1, "--log-dir", tmp_path, "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    r = json.loads((tmp_path / "manifest.json").read_text())["config"]["replay"]
    assert r["measure_from_hours"] == 1.5 and r["measure_from_source"] == "--measure-from"
    assert json.loads(res.stdout)["warmup_rounds"] == 3


@pytest.mark.parametrize(
    "args, message",
    [
        (["--trace", "/nonexistent/x.avt"], "does not exist"),
        (["--round-seconds", 0], "not in the range x>0"),
        (["--start", 5, "--end", 5], "must be before --end"),
        (["--start", 80], "before the trace ends"),
        (["--nodes", 10], "--nodes does not go with --trace"),
        (["--measure-from", 9, "--end", 8], "not inside the replay"),
        (["--round-seconds", 1800, "--end", 6], "nothing to measure"),
    ],
)
def test_cli_rejects_bad_replays(args, message):
    if "--trace" not in args:
        args = ["--trace", bundled_trace_path(), *args]
    res = cli(*args)
    assert res.exit_code == 2
    assert message in res.output


def test_cli_rejects_a_window_without_nodes(tmp_path):
    f = tmp_path / "tiny.avt"
    f.write_text("# end: 20000\na 1 0 100\nb 1 50 200\n")
    res = cli("--trace", f, "--start", 1, "--end", 2)
    assert res.exit_code == 2 and "no trace node is up" in res.output


def test_cli_trace_options_need_a_trace():
    res = cli("--round-seconds", 60)
    assert res.exit_code == 2 and "--round-seconds needs --trace" in res.output


# ---------------------------------------------------------------- Skype, 48 h


@pytest.fixture(scope="module")
def skype_48h():
    """The issue's acceptance run (docs/decisions/churn.md, "Trace replays
    at 240 s per round"):
    the first 48 h of the Skype trace, all its nodes, 240 s per round,
    measured from 4 h (the default: after the start-up flash crowd)."""
    if not SKYPE_PATH.is_file():
        pytest.skip(f"Skype trace not available at {SKYPE_PATH}")
    res = cli("--trace", SKYPE_PATH, "--round-seconds", 240, "--end", 48, "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.mark.slow
def test_skype_48_hours_exact_and_mostly_delivered(skype_48h):
    s = skype_48h
    assert s["warmup_rounds"] == 60  # measured from 4 h
    assert s["trace_nodes"] > 1300 and s["rounds"] == 720
    assert s["false_positives"] == 0
    assert s["duplicates"] == 0
    assert s["hit_ratio"] >= HIT_REACHED


@pytest.fixture(scope="module")
def skype_48h_120():
    """The issue's bar: the same replay at 120 s per round (1,440 rounds,
    about 90 min here; docs/decisions/churn.md, "Trace replays at 240 s per
    round"): hit ratio >= 0.99 (0.9928)."""
    if not SKYPE_PATH.is_file():
        pytest.skip(f"Skype trace not available at {SKYPE_PATH}")
    res = cli("--trace", SKYPE_PATH, "--round-seconds", 120, "--end", 48, "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.mark.slow
def test_skype_48_hours_at_120_s_rounds_meets_the_issue(skype_48h_120):
    s = skype_48h_120
    assert s["warmup_rounds"] == 120 and s["rounds"] == 1440  # measured from 4 h
    assert s["false_positives"] == 0
    assert s["duplicates"] == 0
    assert s["hit_ratio"] >= 0.99


def test_a_restarted_node_does_not_deliver_again_what_it_delivered_before():
    import random

    from vinifera.protocol import messages as m
    from vinifera.protocol.config import OverlayConfig
    from vinifera.protocol.node import Node
    from vinifera.protocol.profile import Profile
    from vinifera.schema import Schema
    from vinifera.subscription import Event, Subscription

    schema = Schema.numeric(1)
    sub = Subscription.build(schema, {"a0": (10, 20)})
    event = Event.build(schema, {"a0": 15})

    def node(seed):
        return Node(7, schema, OverlayConfig(), random.Random(seed), subscription=sub)

    first = node(1)
    first.start(0.0)
    eid, actions = first.publish(1.0, event)  # it matches: delivered to itself
    assert any(type(a) is Deliver and a.eid == eid for a in actions)
    assert any(getattr(a, "record", {}).get("ev") == "deliver" for a in actions)
    copy = m.EventMessage(Profile(8, 1, None), eid, event, "a0", 0, 3, False)
    for restored in (True, False):
        again = node(2)
        if restored:
            again.restore_delivered(first.delivered_journal())
        again.start(2.0)
        evs = [getattr(a, "record", {}).get("ev") for a in again.receive(2.5, copy)]
        assert ("deliver" in evs) is not restored
