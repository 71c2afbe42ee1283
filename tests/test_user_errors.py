"""Mistakes a user makes get answers in the user's words: exit 2, no
traceback, and what to do instead."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import vinifera
from vinifera.cli.main import main
from vinifera.schema import Schema


def run(*args):
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize(
    "latency, message",
    [("5", "expected MIN:MAX"), ("a:b", "must be numbers"), ("0.5:0.1", "latency_min")],
)
def test_a_bad_latency_says_what_it_expects(latency, message):
    res = run("sim", "run", "--nodes", "5", "--rounds", "2", "--latency", latency)
    assert res.exit_code == 2 and message in res.output
    assert "unpack" not in res.output and not isinstance(res.exception, ValueError)


@pytest.mark.parametrize("name, text", [("t.avt", ""), ("t.evt", "# only a comment\n")])
def test_an_empty_trace_is_an_error(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    swarm = ("swarm", "up", "--trace", str(path), "--log-dir", str(tmp_path / "l"))
    for args in (("trace", "stats", str(path)), ("sim", "run", "--trace", str(path)), swarm):
        res = run(*args)
        assert res.exit_code == 2 and "empty trace" in res.output, (args, res.output)


def test_an_asyncio_caller_is_told_the_node_runs_on_trio():
    async def main_():
        async with vinifera.Node(Schema.numeric(1, 0, 1000), subscription="a0 in [0, 10]"):
            pass

    with pytest.raises(RuntimeError, match="runs on trio.*trio.run"):
        asyncio.run(main_())


def test_swarm_status_and_down_need_a_swarm_folder(tmp_path):
    for cmd in ("status", "down"):
        res = run("swarm", cmd, str(tmp_path))
        assert res.exit_code == 2 and "not a swarm's log folder" in res.output


def test_swarm_status_and_down_of_an_ended_swarm(tmp_path):
    manifest = {"kind": "swarm", "state": "ended", "ended": "2026-01-01T00:00:00+00:00",
                "runner_pid": 1, "events_published": 7,
                "slots": {"0": {"address": "127.1.0.1:7000", "control": str(tmp_path / "n0.sock"),
                                "pid": None, "up": False}}}  # fmt: skip
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    res = run("swarm", "status", str(tmp_path))
    assert res.exit_code == 0 and "ended 2026-01-01" in res.output and "0 of 1 slots" in res.output
    res = run("swarm", "down", str(tmp_path))
    assert res.exit_code == 0 and "not running" in res.output


def test_every_option_of_the_swarm_and_analyze_commands_has_help():
    from vinifera.cli.analyze import analyze
    from vinifera.cli.swarm import swarm

    commands = [analyze, *swarm.commands.values()]
    for cmd in commands:
        for p in cmd.params:
            if p.param_type_name == "option" and p.name != "help":
                assert p.help, f"{cmd.name} --{p.name} has no help"


def test_no_help_text_shows_an_unbounded_range_as_none():
    """click described an unbounded FloatRange as "FLOAT RANGE [x<=None]"."""
    import click

    from vinifera.cli.node import main as node_main

    def walk(cmd, path):
        yield path
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                yield from walk(sub, [*path, name])

    for group in (main, node_main):
        for path in walk(group, []):
            res = CliRunner().invoke(group, [*path, "--help"])
            assert res.exit_code == 0, path
            assert "None]" not in res.output, (path, res.output)


def test_a_node_on_a_port_in_use_says_so_in_one_line():
    """The real command in a real process: trio wraps the bind's OSError in
    an exception group, which used to print 40 lines."""
    import socket
    import subprocess
    import sys
    from pathlib import Path

    schema = Path(__file__).resolve().parents[1] / "compose" / "schema.toml"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        host, port = taken.getsockname()
        address = f"{host}:{port}"
        node = Path(sys.executable).parent / "vinifera-node"
        out = subprocess.run(
            [str(node), "run", "--listen", address, "--schema", str(schema)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        f"Error: cannot run the node on {address}: Address already in use"
    ]


def test_a_stale_compiled_build_is_one_line_and_exit_2_where_nothing_catches_it():
    """As in a `vinifera` command, which imports the package before any
    handler of its own; an importer that catches ImportError still can."""
    import subprocess
    import sys

    fake = (
        "import vinifera.native as n; n.built = lambda: True; "
        "n.stale_sources = lambda: ['vinifera/ring.py']; "
    )
    out = subprocess.run([sys.executable, "-c", fake + "n.setup()"], capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert out.returncode == 2
    assert len(out.stderr.splitlines()) == 1 and "stale (vinifera/ring.py" in out.stderr
    catching = fake + "\ntry:\n    n.setup()\nexcept ImportError:\n    print('ok')"
    caught = subprocess.run(
        [sys.executable, "-c", catching],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert caught.returncode == 0 and caught.stdout == "ok\n", caught.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400"])
def test_a_number_that_is_not_finite_is_refused_by_every_command(tmp_path, value):
    """click's FloatRange lets NaN through every bound and infinity through
    every lower bound; trio or int() then raised a traceback."""
    from vinifera.cli.node import main as node_main

    schema = str(Path(__file__).resolve().parents[1] / "compose" / "schema.toml")
    key = tmp_path / "net.key"
    key.write_text("k" * 32)
    cases = [
        (node_main, ["run", "--schema", schema, "--period", value]),
        (node_main, ["run", "--schema", schema, "--peer-rate", value]),
        (node_main, ["run", "--schema", schema, "--replay-skew", value]),
        (
            node_main,
            ["run", "--schema", schema, "--replay-skew", value, "--network-key-file", str(key)],
        ),
        (main, ["sim", "run", "--nodes", "5", "--rounds", "2", "--loss", value]),
        (main, ["sim", "run", "--nodes", "5", "--rounds", "2", "--latency", f"0:{value}"]),
        (main, ["analyze", str(tmp_path), "--from", value]),
    ]
    for command, args in cases:
        res = CliRunner().invoke(command, args)
        assert res.exit_code == 2, (args, res.output, res.exception)
        said = "finite" in res.output or "not in the range" in res.output
        assert said and "Traceback" not in res.output, (args, res.output)


def test_a_schema_with_a_one_value_domain_is_refused(tmp_path):
    from vinifera.cli.node import main as node_main

    path = tmp_path / "s.toml"
    path.write_text('[attributes.a0]\ntype = "float"\nmin = 2.5\nmax = 2.5\n')
    for args in (["check", "--schema", str(path)], ["run", "--schema", str(path)]):
        res = CliRunner().invoke(node_main, args)
        assert res.exit_code == 2, (args, res.output)
        assert "empty domain" in res.output and "Traceback" not in res.output


def test_a_node_on_an_address_that_is_not_this_hosts_says_so_in_one_line():
    import subprocess
    import sys

    schema = Path(__file__).resolve().parents[1] / "compose" / "schema.toml"
    node = Path(sys.executable).parent / "vinifera-node"
    out = subprocess.run(
        [str(node), "run", "--listen", "203.0.113.5:7000", "--schema", str(schema)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        "Error: cannot run the node on 203.0.113.5:7000: Cannot assign requested address"
    ]
