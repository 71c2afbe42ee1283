"""The report's words and tables, from results made by hand (no Spark)."""

from __future__ import annotations

from types import SimpleNamespace

from vinifera.analysis.report import collapse, findings
from vinifera.measures import LEDGER_KEYS


def window(i, alive=10, joins=0, departures=0, hit=1.0, events=2):
    # every window carries every ledger key (analysis/tables.py WINDOW_COLUMNS)
    return {**dict.fromkeys(LEDGER_KEYS, 0), "false_positives": i % 2, "routes": 0,
            "route_hops_total": 0, "window": i, "start": float(i), "end": float(i + 1),
            "alive_nodes": alive,
            "joins": joins, "departures": departures, "events_published": events,
            "expected_pairs": 4 * events, "delivered_pairs": round(4 * events * hit),
            "hops_total": 8 * events, "event_messages": 10 * events,
            "event_messages_uninterested": 3 * events, "hit_ratio": hit,
            "traffic_overhead": 0.3, "path_length": 2.0, "load_max": 0.5 + i / 100,
            "load_p95": 0.4}  # fmt: skip


def test_windows_without_joins_or_departures_collapse_and_changes_stay_apart():
    ws = [window(0), window(1), window(2), window(3, alive=10, departures=2),
          window(4, alive=8), window(5, alive=8), window(6, alive=8, hit=0.5)]  # fmt: skip
    rows = collapse(ws)
    assert [r["window"] for r in rows] == ["0–2", "3", "4–6"]
    first = rows[0]
    assert first["events_published"] == 6 and first["expected_pairs"] == 24
    assert first["traffic_overhead"] == 0.3 and first["path_length"] == round(48 / 24, 6)
    assert first["load_max"] == 0.52 and first["load_p95"] is None  # a max; p95 not additive
    assert first["false_positives"] == 1  # counts add up: windows 0, 1, 2 had 0, 1, 0
    assert rows[1]["load_p95"] == 0.4  # a single window keeps it
    last = rows[2]  # hit ratios 1.0, 1.0 and 0.5: over the sums
    assert last["expected_pairs"] == 24 and last["hit_ratio"] == round(20 / 24, 6)


def run(label, **summary):
    base = {"hit_ratio": 1.0, "expected_pairs": 100, "events_published": 10,
            "traffic_overhead": 0.5, "path_length": 8.0, "load_max": 1.0, "load_p95": 0.5,
            "false_positives": 0, "duplicates": 0}  # fmt: skip
    return SimpleNamespace(spec=SimpleNamespace(label=label), summary={**base, **summary})


def test_findings_compare_each_run_with_the_baseline_by_ratio():
    text = "\n".join(
        findings(
            [run("vinifera", traffic_overhead=0.1, path_length=4.0, load_max=0.4), run("baseline")]
        )  # fmt: skip
    )
    assert "## Findings" in text
    line = next(x for x in text.splitlines() if "vinifera against baseline" in x)
    assert "5.0× lower traffic overhead (0.100 vs 0.500)" in line
    assert "2.5× lower load max (0.400 vs 1.000)" in line
    assert "2.0× shorter path length (4.00 vs 8.00)" in line
    assert "the same hit ratio (1.000)" in line and "the same load 95th percentile" in line


def test_two_hit_ratio_series_both_at_one_are_both_visible(tmp_path, monkeypatch):
    """Before: one line hid the other, the axis went past 1.0."""
    from vinifera.analysis import plots

    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figures.append(fig) or path)
    results = [
        SimpleNamespace(spec=SimpleNamespace(label=label, kind="simulator"),
                        windows=[window(i) for i in range(6)], summary={})
        for label in ("vinifera", "baseline")
    ]  # fmt: skip
    plots.hit_ratio(results, tmp_path / "hit.png")
    ax = figures[0].axes[0]
    lines = [line for line in ax.get_lines() if line.get_label() in ("vinifera", "baseline")]
    assert len(lines) == 2
    assert all(list(line.get_ydata()) == [1.0] * 6 for line in lines)
    looks = {
        (line.get_marker(), line.get_linestyle(), line.get_markerfacecolor()) for line in lines
    }
    assert len(looks) == 2  # told apart though they coincide
    assert ax.get_ylim()[1] == 1.0 and not any(line.get_clip_on() for line in lines)


def test_a_paper_value_at_an_x_of_its_own_gets_a_labelled_tick():
    """Before: Fig. 3's K_f = 8 marker sat past the last tick, unlabelled."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from vinifera.experiment import plots
    from vinifera.experiment.claims import CLAIMS
    from vinifera.experiment.figures import FIGURES

    fig3 = FIGURES["fig3"]
    claims = [c for c in CLAIMS["fig3"] if c.x is not None and c.value is not None]
    assert claims and max(c.x for c in claims) == 8
    _, ax = plt.subplots()
    plots._lines(ax, fig3, [], claims[0].metric, claims)
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert "8" in labels
