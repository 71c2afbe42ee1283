"""`vinifera experiment`: grids, profiles, the result store, resuming, and
bad input, with real (tiny) simulations run by the installed command."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vinifera.churn_traces import bundled_trace_path
from vinifera.experiment import build, claims, figures, params, store, sweep
from vinifera.experiment.params import GridError

BIN = Path(sys.executable).parent / "vinifera"
# A tiny Fig. 3: Vinifera with K_f = 0 and 8 (our profile) and the baseline,
# on both workloads: 6 simulations of 30 nodes.
TINY = ["--nodes", "30", "--rounds", "12", "--seeds", "1", "--set", "friends=0,8"]


def vinifera(*args, timeout=300, **kw):
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=timeout, **kw)


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


# ----------------------------------------------------------------- grids


def test_every_figure_declares_the_grid_the_issue_lists():
    f = figures.FIGURES
    assert f["fig3"].grid["friends"] == (0, 2, 4, 6, 8) and f["fig3"].grid["nodes"] == (1000,)
    assert f["fig4a"].grid["nodes"] == (1000, 2000, 5000, 10000) == f["fig4b"].grid["nodes"]
    assert f["fig4c"].grid["attributes"] == (1, 2, 3, 4, 5) == f["fig4d"].grid["attributes"]
    assert f["fig4e"].grid["attributes"] == (1, 2, 3)
    assert f["fig4f"].grid["rate"] == (1.0, 2.0, 3.0, 4.0, 5.0)
    assert f["fig5"].grid["end_hours"] == (None,)  # the whole month
    for fig in f.values():
        assert fig.grid["seed"] == (1, 2, 3)
        assert set(fig.grid["system"]) == {"vinifera", "baseline"}
        assert set(fig.grid["profile"]) == {"ours", "paper"}
        assert set(fig.grid["subscriptions"]) == {"random", "skewed"}
        assert set(fig.grid) <= set(params.PARAMS)


def test_the_baseline_is_one_point_whatever_the_profile_and_friends():
    pts = figures.points(figures.FIGURES["fig3"].grid)
    base = [p for p in pts if p["system"] == "baseline"]
    assert len(base) == 2 * 3  # workloads x seeds
    assert all(p["profile"] is None and p["friends"] is None for p in base)
    assert len(pts) == 2 * 3 + 2 * 5 * 2 * 3  # + profiles x K_f x workloads x seeds


def test_profiles_follow_the_paper_and_our_defaults():
    point = {"system": "vinifera", "subscriptions": "random", "seed": 1, "rounds": 10}
    paper = build.sim_config({**point, "profile": "paper", "nodes": 1000})
    assert (paper.overlay.friends, paper.overlay.small_world) == (8, 0)  # ceil(log2 1000) - 2
    assert paper.content.identifier == "random"
    big = build.sim_config({**point, "profile": "paper", "nodes": 10000})
    assert (big.overlay.friends, big.overlay.small_world) == (12, 0)
    ours = build.sim_config({**point, "profile": "ours", "nodes": 1000})
    assert (ours.overlay.friends, ours.overlay.small_world) == (4, 4)
    assert ours.content.identifier == "subscription"
    # Fig. 3 sets the links; the paper's profile then differs in the identifiers only.
    swept = build.sim_config({**point, "profile": "paper", "nodes": 50, "friends": 6})
    assert (swept.overlay.friends, swept.overlay.small_world) == (6, 2)
    assert swept.content.identifier == "random"
    base = build.sim_config({**point, "system": "baseline", "profile": None, "nodes": 50})
    assert (base.overlay.friends, base.overlay.small_world) == (0, 8)
    assert base.content.rendezvous == "attribute"


def test_fig4f_publishes_multiples_of_the_capacity():
    point = {"system": "vinifera", "profile": "ours", "subscriptions": "random", "seed": 1}
    cfg = build.sim_config({**point, "nodes": 50, "rounds": 10, "rate": 3.0, "capacity": 10})
    assert cfg.content.capacity == 10 and cfg.events_per_round == 30.0


def test_keys_change_with_the_configuration_and_the_commit():
    point = {"system": "vinifera", "profile": "ours", "subscriptions": "random", "seed": 1}
    a = build.sim_config({**point, "nodes": 50, "rounds": 10})
    b = build.sim_config({**point, "nodes": 50, "rounds": 10, "seed": 2})
    assert build.point_key(a, "abc") == build.point_key(a, "abc")
    assert build.point_key(a, "abc") != build.point_key(b, "abc")
    assert build.point_key(a, "abc") != build.point_key(a, "abd")


def test_overrides_are_checked_against_the_figure():
    fig = figures.FIGURES["fig3"]
    assert figures.override(fig, {"friends": (0, 8)})["friends"] == (0, 8)
    with pytest.raises(GridError, match="fig3 has no parameter 'rate'"):
        figures.override(fig, {"rate": (1.0,)})
    with pytest.raises(GridError, match="must be <= 8"):
        params.parse_values("friends", "9")
    with pytest.raises(GridError, match="not an integer"):
        params.parse_values("nodes", "1e3")
    assert params.parse_seeds("3") == (1, 2, 3)
    assert params.parse_seeds("4,9") == (4, 9)
    with pytest.raises(GridError):
        params.parse_seeds("0")


def test_claims_name_metrics_the_rows_have():
    for name, cs in claims.CLAIMS.items():
        assert name in figures.FIGURES
        for c in cs:
            assert c.metric in (*figures.FIGURES[name].metrics, "load_max")
            assert c.relation in ("≈", "<", "≤", ">", "≥")


def test_verdicts():
    c = claims.Claim("traffic_overhead", "vinifera", "≈ 60%", 0.60)
    assert claims.verdict(c, 0.61) == "matches"
    assert claims.verdict(c, 0.30) == "beats it"
    assert claims.verdict(c, 0.80) == "misses it"
    hit = claims.Claim("hit_ratio", "vinifera", "high", 0.8)
    assert claims.verdict(hit, 0.99) == "beats it"
    below = claims.Claim("traffic_overhead", "vinifera", "< 10%", 0.10, "<")
    assert claims.verdict(below, 0.05) == "meets it" and claims.verdict(below, 0.2) == "misses it"


def test_a_claim_over_several_sizes_names_the_sizes():
    from vinifera.experiment.compare import compare

    fig = figures.FIGURES["fig4a"]
    rows = []
    for nodes, overhead in ((1000, 0.10), (2000, 0.20)):
        for system, profile in (("vinifera", "ours"), ("baseline", None)):
            params = {p: fig.grid[p][0] for p in fig.params}
            params.update(system=system, profile=profile, subscriptions="random", nodes=nodes)
            rows.append({**params, "traffic_overhead": overhead if profile else 0.6})
    ours = [c for c in compare(fig, rows) if c.variant == "vinifera (ours)"]
    assert ours and ours[0].ours == "0.15 (mean over nodes = 1000, 2000; 0.1–0.2)"


# ----------------------------------------------------------------- the store


def test_a_torn_last_line_is_cut_off_and_the_rest_kept(tmp_path):
    path = tmp_path / "results.jsonl"
    with store.Store(path) as s:
        s.add({"key": "a", "metrics": {"x": 1}})
        s.add({"key": "b", "metrics": {"x": 2}})
    with path.open("ab") as f:
        f.write(b'{"key": "c", "metr')  # killed mid-write
    with store.Store(path) as s:
        assert "a" in s and "b" in s and "c" not in s
        s.add({"key": "c", "metrics": {"x": 3}})
    assert [r["key"] for r in lines(path)] == ["a", "b", "c"]


def test_every_experiment_module_is_declared_simulated_or_not():
    """A result's key covers the sources a simulation runs; plotting or
    tabulating code may change without invalidating stored results."""
    here = Path(build.__file__).parent
    for path in here.glob("*.py"):
        name = f"vinifera/experiment/{path.name}"
        assert build.simulated(name) == (path.stem in ("build", "execute", "series", "trace"))
    assert build.simulated("vinifera/sim/driver.py") and build.simulated("vinifera/ring.py")
    assert build.simulated("churn_traces/formats.py")
    assert not build.simulated("vinifera/daemon/runner.py")
    assert not build.simulated("vinifera/wire/decode.py")


def test_code_commit_names_the_last_commit_of_the_simulated_code():
    commit = store.code_commit()
    assert commit and " " not in commit
    assert commit == store.code_commit()  # stable while nothing changes


# ----------------------------------------------------------------- the command


def test_a_tiny_fig3_writes_table_png_and_doc(tmp_path):
    out = tmp_path / "out"
    r = vinifera("experiment", "run", "fig3", *TINY, "--profile", "ours", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    records = lines(out / "results.jsonl")
    assert len(records) == 6 and len({x["key"] for x in records}) == 6
    for x in records:
        assert x["metrics"]["hit_ratio"] is not None
        assert x["metrics"]["false_positives"] == 0
    import pyarrow.parquet as pq

    summary = pq.read_table(out / "fig3" / "fig3.parquet").to_pylist()
    assert {s["variant"] for s in summary} == {"vinifera (ours)", "baseline"}
    assert len(summary) == 6 and all(s["seeds"] == 1 for s in summary)
    csv_text = (out / "fig3" / "fig3.csv").read_text()
    assert csv_text.splitlines()[0].startswith("variant,system,profile,subscriptions,friends")
    png = out / "fig3" / "fig3.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # A changed grid goes to the run's own doc, never to docs/evaluation.md.
    doc = (out / "evaluation.md").read_text()
    assert "<!-- BEGIN fig3 -->" in doc and "**Not the declared grid**" in doc
    assert "skewed: overhead > 32%" in doc  # the paper's number, beside ours
    assert "fig3/fig3.png" in doc
    assert "<!-- BEGIN fig5 -->" in doc  # every other figure has its placeholder

    # Run again: nothing is simulated, the same rows come out.
    again = vinifera("experiment", "run", "fig3", *TINY, "--profile", "ours", "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert "6 already in" in again.stderr and "0 to run" in again.stderr
    assert lines(out / "results.jsonl") == records
    assert pq.read_table(out / "fig3" / "fig3.parquet").to_pylist() == summary


def _sigint_as_at_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_an_interrupted_sweep_resumes_without_recomputing(tmp_path):
    out = tmp_path / "out"
    args = ["experiment", "run", "fig3", "--nodes", "40", "--rounds", "30", "--seeds", "1"]
    args += ["--set", "friends=0,4,8", "--profile", "ours", "--jobs", "1", "--out", str(out)]
    results = out / "results.jsonl"
    proc = subprocess.Popen(
        [str(BIN), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as a command typed at a terminal: a test run started in the
        # background of a script has SIGINT ignored, and children inherit that
        preexec_fn=_sigint_as_at_a_terminal,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if results.exists() and results.read_text().count("\n") >= 2:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    before = results.read_text()
    finished = before.count("\n")
    assert 2 <= finished < 8, "the sweep must be interrupted while points remain"

    r = vinifera(*args)
    assert r.returncode == 0, r.stderr
    assert f"{finished} already in" in r.stderr and f"{8 - finished} to run" in r.stderr
    after = results.read_text()
    assert after.startswith(before)  # finished points kept as they were
    keys = [x["key"] for x in lines(results)]
    assert len(keys) == 8 == len(set(keys))  # and never computed twice


def test_fig4e_and_fig5_end_to_end(tmp_path):
    """The two figures that are not lines: a load CDF, and series over a
    (bundled, synthetic) churn trace."""
    out = tmp_path / "out"
    common = ["--seeds", "1", "--profile", "paper", "--out", str(out)]
    r = vinifera(
        "experiment", "run", "fig4e", "--nodes", "30", "--rounds", "12",
        "--set", "attributes=1,2", "--set", "subscriptions=skewed", *common,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    import pyarrow.parquet as pq

    cdf = pq.read_table(out / "fig4e" / "fig4e-cdf.parquet").to_pylist()
    assert len(cdf) == 2 * 2 * 101  # variants x d x load grid
    for variant in ("vinifera (paper)", "baseline"):
        curve = [c["cdf_mean"] for c in cdf if c["variant"] == variant and c["attributes"] == 1]
        assert curve == sorted(curve) and curve[-1] == 1.0  # a CDF
    r = vinifera(
        "experiment", "run", "fig5", "--trace", str(bundled_trace_path()), "--end", "8",
        "--set", "round_seconds=1200", "--set", "window_hours=2",
        "--set", "subscriptions=random", *common,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    series = pq.read_table(out / "fig5" / "fig5-series.parquet").to_pylist()
    assert [s["start_hours"] for s in series if s["variant"] == "baseline"] == [0, 2, 4, 6]
    assert all(s["alive_nodes_mean"] > 0 for s in series)
    late = [s for s in series if s["start_hours"] >= 6]
    assert all(s["hit_ratio_mean"] is not None for s in late)
    doc = (out / "evaluation.md").read_text()
    assert "5b: ≈ 1/4 of the baseline" in doc and "× baseline" in doc


@pytest.mark.parametrize(
    "args, message",
    [
        (["fig9"], "unknown figure 'fig9'"),
        (["fig3", "--set", "colour=red"], "unknown parameter 'colour'"),
        (["fig3", "--set", "rate=2"], "fig3 has no parameter 'rate'"),
        (["fig3", "--set", "friends=9"], "friends=9: must be <= 8"),
        (["fig3", "--set", "nodes"], "expected KEY=VALUE"),
        (["fig3", "--nodes", "50", "--set", "nodes=60"], "already set"),
        (["fig5", "--nodes", "50"], "fig5 has no parameter 'nodes'"),
        (["fig5", "--trace", "/nonexistent.avt"], "not found"),
        (["fig3", "--seeds", "zero"], "--seeds"),
        (["fig3", "--master", "sparkk://x"], "not a Spark master URL"),
        (["fig3", "--master", "spark://127.0.0.1:1"], "cannot reach the Spark master"),
    ],
)
def test_bad_input_is_a_usage_error(tmp_path, args, message):
    r = vinifera("experiment", "run", *args, "--out", str(tmp_path), timeout=60)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "results.jsonl").exists() or not lines(tmp_path / "results.jsonl")


def test_list_and_dry_run(tmp_path):
    r = vinifera("experiment", "list")
    assert r.returncode == 0
    for name in figures.FIGURES:
        assert name in r.stdout
    r = vinifera("experiment", "run", "fig4a", "--dry-run", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "72 simulations" in r.stderr and r.stdout.count("todo") == 72
    assert not (tmp_path / "fig4a").exists()


def test_plan_shares_points_between_figures_on_the_same_simulations():
    commit = "test"
    a = sweep.plan(figures.FIGURES["fig4a"], {"nodes": (30,), "rounds": (10,)}, commit)
    b = sweep.plan(figures.FIGURES["fig4b"], {"nodes": (30,), "rounds": (10,)}, commit)
    assert [i.key for i in a.items] == [i.key for i in b.items]


def test_worker_refuses_other_sources():
    from vinifera.experiment.execute import WorkerMismatch, run_task

    point = {"system": "baseline", "profile": None, "subscriptions": "random", "seed": 1}
    point |= {"nodes": 20, "rounds": 5}
    task = {"point": point, "key": "k", "digest": "x", "fingerprint": "other", "log_dir": None}
    with pytest.raises(WorkerMismatch, match="other vinifera sources"):
        run_task(task)
    task["fingerprint"] = build.source_fingerprint()
    with pytest.raises(WorkerMismatch, match="another configuration"):
        run_task(task)


def test_logs_are_kept_where_asked(tmp_path):
    out, logs = tmp_path / "out", tmp_path / "logs"
    r = vinifera(
        "experiment", "run", "fig3", "--nodes", "20", "--rounds", "8", "--seeds", "1",
        "--set", "friends=4", "--set", "subscriptions=random", "--profile", "ours",
        "--out", str(out), "--log-dir", str(logs),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    keys = {x["key"] for x in lines(out / "results.jsonl")}
    assert {p.name for p in logs.iterdir()} == keys
    for key in keys:
        manifest = json.loads((logs / key / "manifest.json").read_text())
        assert manifest["config"]["seed"] == 1
        assert (logs / key / "sim.jsonl").stat().st_size > 0
