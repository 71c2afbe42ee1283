"""The delivery-efficiency measures in a real simulation (docs/metrics.md):
what the `had` flag, the `rendezvous` record and the limits of the final
graph say, checked against the log records themselves."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from click.testing import CliRunner

from vinifera.cli.main import main
from vinifera.sim.config import SimConfig
from vinifera.sim.driver import Simulation
from vinifera.sim.limits import path_limits


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("metrics")
    cfg = SimConfig.for_system("vinifera", nodes=120, rounds=30, seed=5, subscriptions="skewed",
                               events_per_round=6)  # fmt: skip
    sim = Simulation(cfg, log_dir=log_dir)
    summary = sim.run()
    records = [json.loads(line) for line in (log_dir / "sim.jsonl").open()]
    return sim, summary, records


def test_a_node_has_each_event_from_its_first_copy_on(run):
    """`had` is false on a node's first handled copy of an event (unless it
    published it) and true on every other (a copy held for the ring is
    logged when it is handled, after later ones); the redundancy the
    summary reports is the share of copies with `had`."""
    sim, summary, records = run
    publisher = {r["eid"]: r["node"] for r in records if r["ev"] == "publish"}
    seen = defaultdict(list)
    for r in records:
        if r["ev"] == "recv":
            seen[(r["eid"], r["node"])].append(r["had"])
    assert seen
    for (eid, node), flags in seen.items():
        assert flags.count(False) == (publisher[eid] != node), (eid, node, flags)
    counted = [r for r in records if r["ev"] in ("recv", "drop") and r["eid"] in sim.ledger.events]
    redundant = sum(r["had"] for r in counted)
    assert redundant > 0  # pushes and the tree overlap
    assert summary["event_messages_redundant"] == redundant
    assert summary["redundancy"] == round(redundant / len(counted), 6)


def test_every_event_reaches_a_rendezvous_no_shorter_than_the_graph_allows(run):
    sim, summary, records = run
    routed = {r["eid"] for r in records if r["ev"] == "rendezvous"}
    assert set(sim.ledger.events) <= routed
    limits = path_limits(sim)
    assert limits["limit_pairs_left_out"] == 0
    # measured on the graph the events used; the final graph barely differs
    assert summary["route_hops"] >= limits["limit_route_hops"] > 0
    assert summary["path_length"] >= limits["limit_direct_path"] > 0
    assert limits["limit_rendezvous_path"] >= limits["limit_direct_path"]
    assert 0 < summary["node_overhead"] < 1


def test_sim_run_prints_the_limits_and_refuses_them_on_several_workers():
    runner = CliRunner()
    base = ["sim", "run", "--nodes", "60", "--rounds", "16", "--json", "--limits"]
    res = runner.invoke(main, base)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["route_hops"] >= out["limit_route_hops"] > 0
    res = runner.invoke(main, [*base, "--workers", "2"])
    assert res.exit_code == 2 and "--limits needs one worker" in res.output
