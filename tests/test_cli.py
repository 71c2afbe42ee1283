"""The command line, run as a user would: installed console scripts."""

import json
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def run(*args, check=False):
    return subprocess.run(
        [str(BIN / args[0]), *map(str, args[1:])],
        capture_output=True,
        text=True,
        check=check,
        timeout=120,
    )


def test_sim_run_json_has_the_documented_fields(tmp_path):
    out = run(
        "vinifera",
        "sim",
        "run",
        "--nodes",
        "60",
        "--rounds",
        "15",
        "--seed",
        "5",
        "--friends",
        "6",
        "--small-world",
        "2",
        "--log-dir",
        str(tmp_path),
        "--json",
    )
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    for key in (
        "nodes",
        "rounds",
        "seed",
        "ring_correct_fraction",
        "max_degree",
        "mean_friend_utility",
        "random_pair_utility",
        "wall_seconds",
        "node_rounds_per_second",
    ):
        assert key in summary
    assert summary["nodes"] == 60 and summary["rounds"] == 15 and summary["seed"] == 5
    assert summary["max_degree"] <= 10
    assert out.stderr == ""  # no progress bar with --json
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["config"]["seed"] == 5
    assert manifest["config"]["overlay"]["friends"] == 6
    stable = json.loads((tmp_path / "summary.json").read_text())
    assert "wall_seconds" not in stable
    assert stable["ring_correct_fraction"] == summary["ring_correct_fraction"]
    assert (tmp_path / "sim.jsonl").stat().st_size > 0


def test_balancing_flags_reach_the_recorded_configuration(tmp_path):
    """--no-push-shedding keeps identifier moves; --no-balancing stops both."""
    seen = {}
    for flag in ("--no-push-shedding", "--no-balancing"):
        log_dir = tmp_path / flag.strip("-")
        out = run(
            "vinifera", "sim", "run", "--nodes", "20", "--rounds", "4", flag,
            "--log-dir", str(log_dir), "--json",
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        content = json.loads((log_dir / "manifest.json").read_text())["config"]["content"]
        seen[flag] = (content["balancing"], content["shed_pushes"])
    assert seen == {"--no-push-shedding": (True, False), "--no-balancing": (False, True)}


def test_set_reaches_the_recorded_configuration_with_each_fields_type(tmp_path):
    out = run(
        "vinifera", "sim", "run", "--nodes", "20", "--rounds", "4", "--set", "push_from=any",
        "--set", "push_max_hops=none", "--set", "push_fanout=3", "--set", "route_lookahead=false",
        "--set", "push_new_links=2.5", "--set", "small_world_below_sample=true",
        "--set", "ring_backups=2", "--log-dir", str(tmp_path), "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    config = json.loads((tmp_path / "manifest.json").read_text())["config"]
    assert config["overlay"]["small_world_below_sample"] is True  # OverlayConfig's fields too
    assert config["overlay"]["ring_backups"] == 2
    content = config["content"]
    pushes = (content["push_from"], content["push_max_hops"], content["push_fanout"])
    assert pushes == ("any", None, 3)
    assert content["route_lookahead"] is False and content["push_new_links"] == 2.5


def test_set_refuses_unknown_names_and_values_of_the_wrong_kind():
    for bad, says in (
        ("bogus=1", "push_from"),  # the known names are listed
        ("bogus=1", "ring_backups"),  # the overlay's too
        ("small_world_below_sample=3", "true or false"),
        ("push", "NAME=VALUE"),
        ("push=3", "true or false"),
        ("push_from=sideways", "push_from must be"),
        ("push_max_hops=0", "push_max_hops must be"),
    ):
        out = run("vinifera", "sim", "run", "--nodes", "5", "--rounds", "2", "--set", bad)
        assert out.returncode == 2, (bad, out.stderr)
        assert says in out.stderr and "Traceback" not in out.stderr, (bad, out.stderr)


def test_a_run_too_short_to_measure_says_so_and_churn_past_the_end_is_refused():
    out = run("vinifera", "sim", "run", "--nodes", "10", "--rounds", "5")
    assert out.returncode == 0 and "run 11 rounds or more" in out.stderr, out.stderr
    longer = run("vinifera", "sim", "run", "--nodes", "10", "--rounds", "11")
    assert "nothing will be measured" not in longer.stderr
    for flags in (["--kill-at", "50", "--kill-fraction", "0.1"], ["--join-at", "5", "--join", "2"]):
        out = run("vinifera", "sim", "run", "--nodes", "10", "--rounds", "5", *flags)
        assert out.returncode == 2 and "past the last round (4)" in out.stderr, out.stderr
        assert "Traceback" not in out.stderr


def test_more_workers_than_select_can_watch_run_and_more_than_nodes_are_refused():
    """34 workers hold 1,122 sockets: past select()'s 1,024 descriptors."""
    args = ("vinifera", "sim", "run", "--nodes", "68", "--rounds", "3", "-e", "0", "--json")
    many = run(*args, "--workers", "34")
    assert many.returncode == 0, many.stderr[-2000:]
    one = run(*args)
    drop = ("wall_seconds", "node_rounds_per_second", "workers")
    same = [{k: v for k, v in json.loads(o.stdout).items() if k not in drop} for o in (many, one)]
    assert same[0] == same[1]
    out = run("vinifera", "sim", "run", "--nodes", "10", "--rounds", "3", "--workers", "11")
    assert out.returncode == 2 and "more than the 10 nodes" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_a_log_dir_that_holds_a_run_is_refused_unless_forced(tmp_path):
    args = ("vinifera", "sim", "run", "--nodes", "10", "--rounds", "3", "-e", "0",
            "--log-dir", str(tmp_path))  # fmt: skip
    assert run(*args).returncode == 0
    before = (tmp_path / "sim.jsonl").read_bytes()
    again = run(*args, "--seed", "2")
    assert again.returncode == 2 and "already holds sim run's logs" in again.stderr, again.stderr
    assert (tmp_path / "sim.jsonl").read_bytes() == before  # nothing lost
    assert run(*args, "--seed", "2", "--force").returncode == 0
    assert (tmp_path / "sim.jsonl").read_bytes() != before
    swarm = run("vinifera", "swarm", "up", "--nodes", "2", "--duration", "1",
                "--log-dir", str(tmp_path))  # fmt: skip
    assert swarm.returncode == 2 and "holds a simulation's logs" in swarm.stderr, swarm.stderr
    assert "Traceback" not in swarm.stderr + again.stderr


def test_sim_run_human_output(tmp_path):
    out = run("vinifera", "sim", "run", "--nodes", "20", "--rounds", "5")
    assert out.returncode == 0, out.stderr
    assert "ring_correct_fraction" in out.stdout
    assert "logs in" not in out.stdout
    logs = tmp_path / "logs"
    out = run("vinifera", "sim", "run", "--nodes", "20", "--rounds", "5", "--log-dir", logs)
    assert out.stdout.splitlines()[-1] == (
        f"logs in {logs}; metrics: vinifera analyze {logs} --out {logs / 'analysis'}"
    )


def test_sim_run_refuses_half_a_kill():
    out = run("vinifera", "sim", "run", "--nodes", "20", "--kill-fraction", "0.2")
    assert out.returncode == 2
    assert "--kill-at" in out.stderr


def test_sim_run_refuses_bad_latency():
    out = run("vinifera", "sim", "run", "--latency", "0.5:0.1")
    assert out.returncode == 2
    assert "--latency" in out.stderr


def test_help_explains():
    out = run("vinifera", "sim", "run", "--help")
    assert out.returncode == 0 and "--kill-fraction" in out.stdout
    out = run("vinifera-node", "--help")
    assert out.returncode == 0 and "subscribe" in out.stdout


def test_node_check_validates_schema_and_expression(tmp_path):
    schema = tmp_path / "schema.toml"
    schema.write_text(
        '[attributes.temp]\ntype = "float"\nmin = -50\nmax = 50\n'
        '[attributes.city]\ntype = "string"\n'
    )
    ok = run(
        "vinifera-node", "check", "--schema", str(schema), 'temp in [-10, 0] and city == "Oslo"'
    )
    assert ok.returncode == 0, ok.stderr
    assert "temp" in ok.stdout and "Oslo" in ok.stdout
    bad = run("vinifera-node", "check", "--schema", str(schema), "temp in [-10, 99]")
    assert bad.returncode == 2
    assert "^" in bad.stderr and "99" in bad.stderr
    schema.write_text('[attributes.temp]\ntype = "float"\nmin = 5\nmax = 1\n')
    bad = run("vinifera-node", "check", "--schema", str(schema))
    assert bad.returncode == 2 and "temp" in bad.stderr


def test_small_world_aim_reaches_the_overlay_and_a_bad_value_is_refused(tmp_path):
    """--small-world-aim sets OverlayConfig.small_world_aim_octaves (the
    manifest says which ran; 2 by default) and one out of 0-8 is a usage
    error naming the option, before anything runs."""
    for flag, want in (((), 2), (("--small-world-aim", "0"), 0)):
        log = tmp_path / f"aim{want}"
        base = ("vinifera", "sim", "run", "--nodes", "30", "--rounds", "4", "--log-dir", str(log))
        out = run(*base, *flag)
        assert out.returncode == 0, out.stderr
        manifest = json.loads((log / "manifest.json").read_text())
        assert f'"small_world_aim_octaves": {want}' in json.dumps(manifest)
    out = run("vinifera", "sim", "run", "--nodes", "30", "--rounds", "4", "--small-world-aim", "9")
    assert out.returncode == 2
    assert "--small-world-aim" in out.stderr
