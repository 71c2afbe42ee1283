"""Every metric is declared once (vinifera/measures.py): the ledger carries
exactly the declared keys, in order; every place that shows a metric names
a declared one; docs/metrics.md defines each. Spark's equality with the
ledger, key for key over LEDGER_KEYS, is tested in tests/analysis."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vinifera import measures
from vinifera.experiment import report as experiment_report
from vinifera.experiment import table as experiment_table
from vinifera.ledger import Ledger
from vinifera.schema import Schema
from vinifera.sim.config import SimConfig
from vinifera.sim.driver import Simulation

ROOT = Path(__file__).resolve().parents[1]


def test_the_ledger_summary_is_the_declared_metrics_in_order():
    assert tuple(Ledger(Schema.numeric(1), 0.0, 10.0, 1.0).summary()) == measures.LEDGER_KEYS
    summary = Simulation(
        SimConfig(nodes=30, rounds=8, warmup_rounds=2, seed=2, events_per_round=4.0)
    ).run()
    ledger_part = [k for k in summary if k in measures.BY_KEY]
    assert tuple(ledger_part) == measures.LEDGER_KEYS
    assert summary["hit_ratio"] == measures.ratio(
        summary["delivered_pairs"], summary["expected_pairs"]
    )


def test_every_declaration_is_whole():
    assert len(measures.BY_KEY) == len(measures.METRICS)  # no key twice
    for m in measures.METRICS:
        assert m.kind in ("count", "ratio"), m.key
        assert m.better in ("lower", "higher", None), m.key
        assert m.across in ("sum", "ratio", "max", "none"), m.key
        assert (m.across == "ratio") == (m.of is not None), m.key
        assert m.label and m.short, m.key
    with pytest.raises(KeyError, match="no metric 'hops'"):
        measures.metric("hops")


def test_everything_that_shows_a_metric_names_a_declared_one():
    pytest.importorskip("pyspark")
    from vinifera.analysis import report

    shown = [
        *report._METRICS,
        *report._COMPARED,
        *experiment_table.METRICS,
        *(k for k, _ in experiment_report.NUMBER_COLUMNS),
    ]
    cli = (ROOT / "cli" / "analyze.py").read_text()
    block = re.search(r"keys = \((.*?)\)", cli, re.S)
    assert block, "cli/analyze.py's table keys moved: update this test"
    shown += re.findall(r'"(\w+)"', block.group(1))
    for key in shown:
        measures.metric(key)  # KeyError names an undeclared one


def test_docs_metrics_defines_every_declared_metric():
    text = (ROOT / "docs" / "metrics.md").read_text().lower()
    missing = [
        m.key for m in measures.METRICS if f"`{m.key}`" not in text and f"**{m.label}**" not in text
    ]
    assert missing == []
