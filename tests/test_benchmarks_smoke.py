"""The benchmarks do not rot unseen (issue 74 item 6, in part): every one
imports and parses its arguments, and the daemon benchmarks of issue 75 run
at a tiny size, printing their figures without recording them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
# library modules of the benchmarks, and those that take no options
NOT_SCRIPTS = {"record.py", "duckdb_metrics.py", "trace_replay.py"}


@pytest.mark.parametrize(
    "script", sorted(p.name for p in BENCH.glob("*.py") if p.name not in NOT_SCRIPTS)
)
def test_every_benchmark_imports_and_parses_its_options(script):
    out = subprocess.run([sys.executable, str(BENCH / script), "--help"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0 and "usage:" in out.stdout, out.stderr[-2000:]


@pytest.mark.parametrize(
    "args, expect",
    [
        (["admission_memory.py", "--datagrams", "3000"], "MiB after"),
        (["signing_overhead.py", "--events", "50"], "check_us"),
        (["datagram_sizes.py", "--nodes", "6", "--rounds", "15"], "largest_sent"),
        (["hostile_flood.py", "--hosts", "2", "--rate", "20", "--seconds", "1"],
         "honest_events_delivered"),
    ],
)  # fmt: skip
def test_the_daemon_benchmarks_run_at_a_tiny_size(args, expect):
    out = subprocess.run([sys.executable, str(BENCH / args[0]), *args[1:], "--no-record"],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0 and expect in out.stdout, (out.stdout[-1000:], out.stderr[-2000:])
