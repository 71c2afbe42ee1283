"""scripts/demo.sh, the README's main command, run as written: twice into
the same folder (the second run replaces the first's logs; before, the
simulator refused the folder that held them)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_demo_runs_twice_into_the_same_folder(tmp_path):
    for _ in range(2):
        out = subprocess.run(["bash", str(ROOT / "scripts" / "demo.sh"), str(tmp_path)],
                             capture_output=True, text=True, timeout=900)  # fmt: skip
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.strip().splitlines()[-1] == f"report: {tmp_path}/analysis/report.md"
