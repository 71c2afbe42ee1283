"""scripts/compile_if_possible.sh, which scripts/setup.sh (and so both README
commands) runs: the compiled build where it can be made, one line where it
cannot, nothing when the build is current."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from vinifera import native

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "compile_if_possible.sh"


def run(env: dict) -> subprocess.CompletedProcess:
    bash = shutil.which("bash") or "/bin/bash"
    return subprocess.run([bash, str(SCRIPT)], capture_output=True, text=True, env=env, timeout=60)


def test_without_a_c_compiler_one_line_says_pure_python(tmp_path):
    bin_dir = tmp_path / "bin"  # a PATH with what the script needs, but no cc or gcc
    bin_dir.mkdir()
    for tool in ("dirname",):
        os.symlink(shutil.which(tool), bin_dir / tool)
    env = {k: v for k, v in os.environ.items() if k != "VINIFERA_PURE"}
    out = run({**env, "PATH": str(bin_dir)})
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() == [
        "note: no C compiler (cc, gcc): pure Python, the simulator about half as fast"
    ]


def test_vinifera_pure_skips_the_build():
    out = run({**os.environ, "VINIFERA_PURE": "1"})
    assert out.returncode == 0 and out.stdout.startswith("pure Python (VINIFERA_PURE=1)")


@pytest.mark.skipif(not native.in_use(), reason="no compiled build here")
def test_a_current_build_is_left_alone():
    before = sorted(p.stat().st_mtime_ns for p in (ROOT / "vinifera").rglob("*.so"))
    out = run({k: v for k, v in os.environ.items() if k != "VINIFERA_PURE"})
    assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
    assert sorted(p.stat().st_mtime_ns for p in (ROOT / "vinifera").rglob("*.so")) == before
