"""`vinifera analyze` over simulator runs equals the simulator's own summary
(computed by vinifera/ledger.py from the same records), through the CLI
as a user runs it: Vinifera with a crash wave, a join wave and a congestion
cap, beside the baseline, in one report."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from vinifera.cli.main import main

pytest.importorskip("pyspark")

SIM = ["sim", "run", "--nodes", "100", "--rounds", "30", "--events-per-round", "5", "--json"]
RUNS = {
    "vinifera": [
        "--kill-fraction",
        "0.2",
        "--kill-at",
        "18",
        "--join",
        "20",
        "--join-at",
        "20",
        "--capacity",
        "4",
    ],  # fmt: skip
    "baseline": ["--system", "baseline"],
}


@pytest.fixture(scope="module")
def analyzed(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("sim")
    runner = CliRunner()
    for system, extra in RUNS.items():
        res = runner.invoke(main, [*SIM, *extra, "--log-dir", str(root / system)])
        assert res.exit_code == 0, res.output
    out = root / "analysis"
    res = runner.invoke(
        main,
        ["analyze", str(root / "vinifera"), str(root / "baseline"), "--out", str(out), "--json"],
    )
    assert res.exit_code == 0, res.output
    return root, json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("system", list(RUNS))
def test_every_metric_equals_the_simulators(analyzed, system):
    from vinifera.analysis.metrics import LEDGER_KEYS

    root, printed = analyzed
    sim = json.loads((root / system / "summary.json").read_text())
    got = printed["runs"][system]
    for key in LEDGER_KEYS:
        want = sim[key]
        if isinstance(want, float):
            assert got[key] == pytest.approx(want, abs=1e-9, rel=0), key
        else:
            assert got[key] == want, key
    assert got["malformed_lines"] == 0


def test_the_churn_run_exercises_what_it_should(analyzed):
    _, printed = analyzed
    v = printed["runs"]["vinifera"]
    assert v["hit_ratio"] < 1.0  # the crash wave loses pairs
    assert v["event_messages_dropped"] > 0  # the congestion cap bites


def test_one_report_with_both_runs(analyzed):
    root, printed = analyzed
    report = root / "analysis" / "report.md"
    assert printed["report"] == str(report)
    text = report.read_text()
    assert "| metric | vinifera | baseline |" in text
    assert "vinifera, 100 nodes, 30 rounds, seed 1" in text  # the inputs name the run
    windows = (root / "analysis" / "vinifera" / "tables" / "windows.csv").read_text().splitlines()
    assert len(windows) == 1 + 10  # rounds 15..25, one window per round
    # The crash wave at round 18 shows in the alive-node column.
    header = windows[0].split(",")
    alive = [int(row.split(",")[header.index("alive_nodes")]) for row in windows[1:]]
    assert alive[:3] == [100, 100, 100] and alive[4] == 80 and alive[-1] == 100
