"""One simulation on several processes (vinifera/sim/parallel.py): the
result and the log of one process, byte for byte."""

from __future__ import annotations

import json
import random
from bisect import bisect_right
from pathlib import Path

import pytest
from click.testing import CliRunner
from skype_trace import SKYPE_PATH as SKYPE

from vinifera.churn_traces import read_bundled_trace, window
from vinifera.cli.main import main
from vinifera.protocol.content import subscription_identifier
from vinifera.ring import RING_SIZE
from vinifera.sim import parallel
from vinifera.sim.config import ChurnStep, SimConfig
from vinifera.sim.driver import Simulation
from vinifera.sim.logwriter import LOG_FILE_NAME
from vinifera.sim.network import NetworkModel
from vinifera.sim.replay import TraceReplay, load_replay

TIMING = ("wall_seconds", "node_rounds_per_second")


def run(config: SimConfig, workers: int, log_dir: Path) -> tuple[dict, bytes]:
    summary = parallel.run_parallel(config, workers, log_dir)
    stable = {k: v for k, v in summary.items() if k not in TIMING}
    return stable, (log_dir / LOG_FILE_NAME).read_bytes()


@pytest.fixture
def crossings(monkeypatch):
    """Queue entries this process handed to another worker."""
    sent = []
    real = parallel.Partition.send

    def send(self, dest, entry):
        sent.append(entry)
        real(self, dest, entry)

    monkeypatch.setattr(parallel.Partition, "send", send)
    return sent


def test_two_workers_give_the_summary_and_log_of_one(tmp_path, crossings):
    cfg = SimConfig(nodes=120, rounds=12, seed=4, events_per_round=10.0)
    one = run(cfg, 1, tmp_path / "one")
    assert not crossings
    two = run(cfg, 2, tmp_path / "two")
    assert len(crossings) > 100  # messages did cross between the processes
    assert one[0]["expected_pairs"] > 0 and one[0]["hit_ratio"] > 0.9
    assert two == one


def test_three_workers_replay_a_trace_as_one_process(tmp_path, crossings):
    tr = window(read_bundled_trace(), 0, 10 * 3600)
    rp = TraceReplay(tr, 600, measure_from=6 * 3600)
    cfg = SimConfig.for_trace(rp, events_per_round=10, seed=3)
    one = run(cfg, 1, tmp_path / "one")
    three = run(cfg, 3, tmp_path / "three")
    assert crossings
    assert one[0]["rejoins"] > 0 and one[0]["departures"] > 0
    assert three == one


def test_loss_crashes_and_the_baseline_as_one_process(tmp_path):
    cfg = SimConfig(
        nodes=150,
        rounds=16,
        seed=2,
        system="baseline",
        events_per_round=5.0,
        network=NetworkModel(loss=0.05),
        churn=(ChurnStep(8, "kill", fraction=0.1), ChurnStep(10, "leave", fraction=0.05)),
    )
    one = run(cfg, 1, tmp_path / "one")
    assert one[0]["messages_lost"] > 0 and one[0]["kill_round"] == 8
    assert run(cfg, 2, tmp_path / "two") == one


def test_without_a_log_workers_sum_copies_and_merge_rounds_late_to_the_same_summary():
    """Without a log, workers sum recv and drop records where they are made
    (ledger.Receipts), and worker 0 merges a round once every worker has
    reported it, as it runs on: the summary of one process still."""
    tr = window(read_bundled_trace(), 0, 10 * 3600)
    rp = TraceReplay(tr, 600, measure_from=6 * 3600)
    lossy = NetworkModel(loss=0.05)
    for cfg in (SimConfig.for_trace(rp, events_per_round=10, seed=3, network=lossy),
                SimConfig(nodes=150, rounds=16, seed=2, events_per_round=5.0, network=lossy,
                          churn=(ChurnStep(8, "kill", fraction=0.1),))):  # fmt: skip
        one = parallel.run_parallel(cfg, 1)
        assert one["event_messages"] > 0 and one["load_max"] > 0
        two = parallel.run_parallel(cfg, 2)
        assert {k: v for k, v in two.items() if k not in TIMING} == {
            k: v for k, v in one.items() if k not in TIMING
        }


def test_several_workers_need_a_minimum_latency(tmp_path):
    cfg = SimConfig(nodes=10, rounds=2, seed=1, network=NetworkModel(latency_min=0.0))
    with pytest.raises(ValueError, match="minimum latency"):
        parallel.run_parallel(cfg, 2)
    out = CliRunner().invoke(
        main,
        [
            "sim",
            "run",
            "--nodes",
            "10",
            "--rounds",
            "2",
            "--workers",
            "2",
            "--latency",
            "0:0.1",
        ],  # fmt: skip
    )
    assert out.exit_code == 2 and "minimum --latency" in out.output


def test_cli_workers_write_the_same_run(tmp_path):
    outs = []
    for w in (1, 2):
        d = tmp_path / f"w{w}"
        args = ["sim", "run", "--nodes", "60", "--rounds", "8", "--workers", str(w),
                "--log-dir", str(d), "--json"]  # fmt: skip
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 0, res.output
        summary = {k: v for k, v in json.loads(res.output).items() if k not in TIMING}
        outs.append((summary, (d / "summary.json").read_bytes(), (d / LOG_FILE_NAME).read_bytes()))
    assert outs[0] == outs[1]


def test_arcs_cut_where_identifiers_will_fall_not_at_range_centres():
    # 500 narrow ranges at 0.30 and 500 wide ones over 0.35-0.65: the
    # centres' median (0.5) would put three quarters of the nodes below it
    rng = random.Random(5)
    q = RING_SIZE // 100
    spans = [(30 * q, 30 * q + 1000) for _ in range(500)]
    spans += [(35 * q, 65 * q) for _ in range(500)]
    (cut,) = parallel._expected_quantiles(spans, 2)
    below = sum(rng.randrange(lo, hi + 1) < cut for lo, hi in spans)
    assert 470 <= below <= 530
    centres = sorted((lo + hi) // 2 for lo, hi in spans)
    assert sum(rng.randrange(lo, hi + 1) < centres[500] for lo, hi in spans) > 700


@pytest.mark.skipif(not SKYPE.exists(), reason="needs ../shared/traces/skype-superpeers.avt")
def test_the_skype_replay_s_arcs_hold_as_many_nodes_as_identifiers_fall_in():
    # a popular bucket's wide ranges straddle the middle of the ring: cut at
    # the ranges' centres, 902 of the first day's 1,633 nodes fell below it
    replay = load_replay(SKYPE, round_seconds=240.0, end_hours=24.0, publishing=True)
    sim = Simulation(SimConfig.for_trace(replay, seed=1, subscriptions="skewed"))
    for workers in (2, 3):
        cuts = parallel._splits(sim, workers)
        counts = [0] * workers
        for i, sub in enumerate(sim.trace_subs):
            ident = subscription_identifier(sub, sub.attributes[0], random.Random(i))
            counts[bisect_right(cuts, ident)] += 1
        share = len(sim.trace_subs) / workers
        assert all(abs(c - share) < 0.05 * share for c in counts), counts
