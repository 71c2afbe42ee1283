"""The optional compiled build (scripts/build_compiled.sh) runs the same
source: the simulator writes byte for byte the same logs and summary with
it as with the .py files (VINIFERA_PURE=1 runs those despite the build).
Runs only where the build is present (scripts/setup.sh makes it where a C
compiler is)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vinifera import native
from vinifera.churn_traces import bundled_trace_path

BIN = Path(sys.executable).parent
TIMING = ("wall_seconds", "node_rounds_per_second")

pytestmark = pytest.mark.skipif(
    not native.in_use(), reason="no compiled build (scripts/build_compiled.sh)"
)


def _simulate(log_dir: Path, args: list[str], pure: bool) -> dict:
    env = {**os.environ, "VINIFERA_PURE": "1" if pure else "0"}
    out = subprocess.run(
        [str(BIN / "vinifera"), "sim", "run", *args, "--log-dir", str(log_dir), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    for key in TIMING:  # the only figures allowed to differ
        summary.pop(key)
    return summary


def _which(pure: bool) -> str:
    env = {**os.environ, "VINIFERA_PURE": "1" if pure else "0"}
    code = "from vinifera.protocol import node; print(node.__file__)"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout


def test_pure_python_runs_the_source_despite_the_build():
    assert _which(pure=True).strip().endswith("node.py")
    assert not _which(pure=False).strip().endswith(".py")


@pytest.mark.parametrize(
    "args",
    [
        ["--nodes", "200", "--rounds", "40"],
        ["--trace", str(bundled_trace_path()), "--round-seconds", "300", "--end", "10"],
    ],
    ids=["200-nodes", "bundled-trace"],
)
def test_compiled_and_pure_python_write_the_same_bytes(tmp_path, args):
    pure = _simulate(tmp_path / "pure", args, pure=True)
    compiled = _simulate(tmp_path / "compiled", args, pure=False)
    assert json.dumps(compiled) == json.dumps(pure)
    for name in ("sim.jsonl", "summary.json"):
        a = (tmp_path / "pure" / name).read_bytes()
        b = (tmp_path / "compiled" / name).read_bytes()
        assert len(a) > 1000 or name == "summary.json"
        assert a == b, f"{name} differs"


def test_compiled_on_two_workers_writes_the_bytes_of_pure_python_on_one(tmp_path):
    """The workers exchange compiled messages (sim/transfer.py's reducers)."""
    args = ["--nodes", "150", "--rounds", "20"]
    pure = _simulate(tmp_path / "pure", args, pure=True)
    compiled = _simulate(tmp_path / "two", [*args, "--workers", "2"], pure=False)
    assert json.dumps(compiled) == json.dumps(pure)
    for name in ("sim.jsonl", "summary.json"):
        assert (tmp_path / "pure" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
