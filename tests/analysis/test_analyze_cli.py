"""User errors of `vinifera analyze` are usage errors with a clear message,
found before Spark starts (no JVM, no traceback)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from vinifera.cli.main import main


def run(*args):
    return CliRunner().invoke(main, ["analyze", *args])


@pytest.fixture
def logs(tmp_path):
    d = tmp_path / "logs"
    d.mkdir()
    (d / "n1.jsonl").write_text(json.dumps({"v": 1, "t": 0.0, "node": "1", "ev": "join"}) + "\n")
    return d


def test_missing_dir(tmp_path):
    res = run(str(tmp_path / "nope"), "--out", str(tmp_path / "o"))
    assert res.exit_code == 2 and "no such directory" in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)


def test_no_logs(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("x")
    res = run(str(tmp_path / "empty"), "--out", str(tmp_path / "o"))
    assert res.exit_code == 2 and "no *.jsonl or *.jsonl.gz" in res.output


def test_no_manifest_needs_a_schema(logs, tmp_path):
    res = run(str(logs), "--out", str(tmp_path / "o"))
    assert res.exit_code == 2 and "--schema" in res.output


def test_bad_schema(logs, tmp_path):
    bad = tmp_path / "schema.toml"
    bad.write_text('[attributes.x]\ntype = "complex"\n')
    res = run(str(logs), "--out", str(tmp_path / "o"), "--schema", str(bad))
    assert res.exit_code == 2 and "unknown type" in res.output


def test_bad_master(logs, tmp_path):
    res = run(str(logs), "--out", str(tmp_path / "o"), "--master", "locl[2]")
    assert res.exit_code == 2 and "not a Spark master URL" in res.output


def test_a_master_nobody_answers_on_is_one_line_before_spark_starts(logs, tmp_path):
    """Before: 65 s of Spark retrying, then a 45-line Java stack."""
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    master = f"spark://127.0.0.1:{port}"
    schema = tmp_path / "s.toml"
    schema.write_text('[attributes.a0]\ntype = "float"\nmin = 0\nmax = 1\n')
    res = run(str(logs), "--out", str(tmp_path / "o"), "--schema", str(schema), "--master", master)
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert f"no Spark master answers (127.0.0.1:{port}: Connection refused)" in lines[-1]
    assert "starting Spark" not in res.output and "Traceback" not in res.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["--window", "0"], "--window"),
        (["--from", "5", "--until", "5"], "must be after"),
        (["--conf", "novalue"], "KEY=VALUE"),
    ],
)
def test_bad_options(logs, tmp_path, args, message):
    res = run(str(logs), "--out", str(tmp_path / "o"), *args)
    assert res.exit_code == 2 and message in res.output


def test_valid_masters():
    from vinifera.analysis.session import valid_master

    for ok in ("local", "local[*]", "local[2]", "local[4,3]", "spark://h:7077", "yarn",
               "k8s://https://h:443"):  # fmt: skip
        assert valid_master(ok), ok
    for bad in ("", "local[0]", "local[x]", "spark:/h", "http://h"):
        assert not valid_master(bad), bad


def test_library_never_imports_the_analysis():
    from pathlib import Path

    import vinifera

    lib = Path(vinifera.__file__).parent
    offenders = [
        str(p)
        for p in lib.rglob("*.py")
        if "vinifera.analysis" in p.read_text() or "from vinifera import analysis" in p.read_text()
    ]
    assert offenders == []


def test_other_commands_do_not_load_spark():
    import subprocess
    import sys

    code = "import sys, vinifera.cli.main; print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_spark_start_failure_is_said_by_its_cause_from_the_log(tmp_path):
    from vinifera.analysis.session import failure_cause

    log = tmp_path / "spark.log"
    log.write_text(
        "25/12/02 04:40:01 WARN StandaloneAppClient$ClientEndpoint: Failed to connect to master\n"
        "25/12/02 04:41:01 ERROR StandaloneSchedulerBackend: Application has been killed. "
        "Reason: All masters are unresponsive! Giving up.\n"
    )
    stack = RuntimeError("Cannot call methods on a stopped SparkContext.\n" + "\tat x.y\n" * 40)
    assert failure_cause(stack, log) == (
        "StandaloneSchedulerBackend: Application has been killed. Reason: All masters are "
        "unresponsive! Giving up."
    )
    assert failure_cause(stack, tmp_path / "none.log") == (
        "Cannot call methods on a stopped SparkContext."
    )
