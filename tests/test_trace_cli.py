"""`vinifera trace ...` through click's test runner."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from skype_trace import SKYPE_PATH

from vinifera.churn_traces import bundled_trace_path, read_trace, trace_stats
from vinifera.cli.trace import trace


def run(*args: str):
    return CliRunner().invoke(trace, [str(a) for a in args])


def test_stats_json_on_bundled_trace():
    path = bundled_trace_path()
    result = run("stats", path, "--json")
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert got == json.loads(json.dumps(trace_stats(read_trace(path))))
    assert {
        "nodes",
        "sessions",
        "session_median_h",
        "session_mean_h",
        "population_mean",
        "population_min",
        "population_max",
        "joins_per_hour",
        "leaves_per_hour",
        "glitches",
        "startup",
    } <= set(got)
    assert got["nodes"] == 300


def test_stats_json_on_skype():
    if not SKYPE_PATH.is_file():
        pytest.skip(f"Skype trace not available at {SKYPE_PATH}")
    got = json.loads(run("stats", SKYPE_PATH, "--json").stdout)
    assert (got["nodes"], got["sessions"]) == (2081, 29217)
    assert got["session_median_h"] == pytest.approx(5.1, abs=0.05)
    assert got["population_mean"] == pytest.approx(690, abs=1)
    assert [round(g["time_h"]) for g in got["glitches"]] == [101, 194, 252, 420, 529]


def test_stats_table_and_probe_seconds():
    result = run("stats", bundled_trace_path(), "--probe-seconds", "600")
    assert result.exit_code == 0
    assert "nodes" in result.stdout and "session length (h)" in result.stdout
    assert "start-up flash crowd" in result.stdout


def test_bad_file_exits_2_with_file_and_line(tmp_path):
    bad = tmp_path / "bad.avt"
    bad.write_text("a 1 0 5\n# comment\nb 2 0 5 9\n")
    result = run("stats", bad)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {bad}:3: node b: odd number of times (3)"
    ]
    assert "Traceback" not in result.output
    evt = tmp_path / "bad.evt"
    evt.write_text("0 a up\n5 a left\n")
    result = run("convert", evt, tmp_path / "out.avt")
    assert result.exit_code == 2
    assert f"{evt}:2: unknown keyword 'left'" in result.stderr
    assert not (tmp_path / "out.avt").exists()


def test_missing_file_and_unknown_format_exit_2(tmp_path):
    assert run("stats", tmp_path / "none.avt").exit_code == 2
    (tmp_path / "t.txt").write_text("a 1 0 5\n")
    result = run("stats", tmp_path / "t.txt")
    assert result.exit_code == 2 and "unknown trace format" in result.stderr


def test_synth_is_deterministic_and_readable(tmp_path):
    a, b, c = tmp_path / "a.avt", tmp_path / "b.avt", tmp_path / "c.avt"
    for path, seed in ((a, 5), (b, 5), (c, 6)):
        result = run("synth", "--out", path, "--seed", seed, "--nodes", 120, "--days", 2)
        assert result.exit_code == 0, result.output
        assert "120 nodes" in result.stdout
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    evt = tmp_path / "s.evt"
    result = run("synth", "--out", evt, "--seed", 5, "--nodes", 120, "--days", 2)
    assert result.exit_code == 0
    assert read_trace(evt) == read_trace(a)


def test_synth_format_and_flash_crowd_options(tmp_path):
    out = tmp_path / "plain.trace"
    result = run(
        "synth", "--out", out, "--nodes", 200, "--days", 2, "--no-flash-crowd", "--format", "evt"
    )
    assert result.exit_code == 0
    assert out.read_text().splitlines()[2].split()[2] in ("up", "down")
    assert run("synth", "--out", tmp_path / "x.trace").exit_code == 2
    # a format the suffix contradicts would give a file trace stats refuses
    clash = run("synth", "--out", tmp_path / "x.avt", "--nodes", 20, "--days", 1, "--format", "evt")
    assert clash.exit_code == 2 and "the suffix says avt" in clash.output
    assert not (tmp_path / "x.avt").exists()


def test_convert_round_trip(tmp_path):
    evt, avt = tmp_path / "t.evt", tmp_path / "t.avt"
    assert run("convert", bundled_trace_path(), evt).exit_code == 0
    assert run("convert", evt, avt).exit_code == 0
    assert read_trace(avt) == read_trace(bundled_trace_path())


def test_filter_says_what_it_did(tmp_path):
    out = tmp_path / "f.avt"
    result = run(
        "filter",
        bundled_trace_path(),
        out,
        "--glitches",
        "--skip-startup",
        "--end",
        "48",
        "--compress",
        "60",
    )
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "glitches: none found" in text
    assert "start-up flash crowd" in text and "skipped" in text
    assert "window: kept 4.09 h .. 48.00 h" in text
    assert "compress: times divided by 60" in text
    tr = read_trace(out)
    assert tr.end == round((48 * 3600 - 14720) / 60)  # the crowd completes at 14,720 s


def test_filter_empty_window_exits_2(tmp_path):
    result = run("filter", bundled_trace_path(), tmp_path / "f.avt", "--start", "10", "--end", "5")
    assert result.exit_code == 2 and "empty window" in result.stderr


def test_help_explains():
    result = run("--help")
    assert result.exit_code == 0
    for cmd in ("stats", "synth", "convert", "filter"):
        assert cmd in result.stdout
    assert ".avt" in result.stdout and "up|down" in result.stdout
    assert "--skip-startup" in run("filter", "--help").stdout


@pytest.mark.parametrize(
    ("text", "suffix", "line"),
    [
        ("n1 1 0 99999999999999999999999\n", ".avt", 1),  # hung at 438 MB before
        ("# end: 100000000000\nn1 1 0 5\n", ".avt", 1),  # 20 s and 457 MB before
        ("0 n1 up\n99999999999999999999999 n1 down\n", ".evt", 2),
    ],
)
def test_absurd_times_are_refused_with_the_line(tmp_path, text, suffix, line):
    bad = tmp_path / f"absurd{suffix}"
    bad.write_text(text)
    result = run("stats", bad)
    assert result.exit_code == 2, result.output
    err = result.stderr.strip().splitlines()
    assert len(err) == 1 and f"{bad}:{line}:" in err[0]
    assert "past the latest a trace may name" in err[0]


def test_a_ten_year_trace_is_still_read(tmp_path):
    from vinifera.churn_traces.formats import MAX_TRACE_SECONDS

    ok = tmp_path / "long.avt"
    ok.write_text(f"n1 1 0 {MAX_TRACE_SECONDS}\n")
    assert read_trace(ok).end == MAX_TRACE_SECONDS
