"""The README's "Using it", "--workers" and "Local swarms" commands, run as
written in a shell from a folder of their own (issue 73: every README
command is run by a test or CI). Replaced, and only these: the trace's
placeholder path by the trace; the cluster master by local Spark; the
whole month of the --workers line by its first 4 hours. `logs/` (daemon
logs without a manifest) comes from two daemons run as "Running peers"
shows, `runs/swarm` from the README's first swarm line. The netns line
needs root, ip and iptables, and is skipped without them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from readme_blocks import ROOT, block, wait_installed
from skype_trace import SKYPE_PATH as SKYPE

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not SKYPE.exists(), reason="the Skype trace is not available"),
]
PLACEHOLDER = "/path/to/skype-superpeers.avt"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A fresh folder that has the checkout's .venv and examples, as a
    user's checkout has."""
    for name in (".venv", "examples"):
        (tmp_path / name).symlink_to(ROOT / name)
    return tmp_path


def sh(work: Path, line: str, timeout: float = 900) -> subprocess.CompletedProcess:
    out = subprocess.run(line, shell=True, cwd=work, capture_output=True, text=True,
                         timeout=timeout)  # fmt: skip
    assert out.returncode == 0, f"{line}\n{out.stderr[-2000:]}"
    return out


def daemon_logs(work: Path) -> None:
    """logs/: two daemons' logs (examples/schema.toml), three events published."""
    logs = work / "logs"
    logs.mkdir()
    first = subprocess.Popen(
        [".venv/bin/vinifera-node", "run", "--listen", "127.0.0.1:0", "--schema",
         "examples/schema.toml", "--subscribe", "temp in [0, 10]", "--log-file",
         str(logs / "n0.jsonl"), "--control", str(work / "n0.sock")],
        cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    nodes = [first]
    try:
        while '"started"' not in (line := first.stderr.readline()):
            assert line, "the first node exited"
        address = json.loads(line)["node"]
        nodes.append(subprocess.Popen(
            [".venv/bin/vinifera-node", "run", "--listen", "127.0.0.1:0", "--bootstrap", address,
             "--schema", "examples/schema.toml", "--subscribe", 'city == "Oslo"', "--log-file",
             str(logs / "n1.jsonl"), "--control", str(work / "n1.sock")],
            cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        ))  # fmt: skip
        wait_installed([".venv/bin/vinifera-node", "status", "--control", str(work / "n1.sock")],
                       work)  # fmt: skip
        for temp in (3, 7, 9):
            sh(
                work,
                f".venv/bin/vinifera-node publish --control {work / 'n0.sock'} temp={temp} "
                "city=Oslo",
            )
        time.sleep(3)
    finally:
        for n in nodes:
            n.terminate()
            n.wait(timeout=20)


def test_the_using_it_commands_work_as_written(work):
    lines = block("## Using it")
    assert len(lines) == 10 and sum(PLACEHOLDER in ln for ln in lines) == 2
    daemon_logs(work)
    sh(work, block("### Local swarms")[0])  # runs/swarm, as the README makes it
    for line in lines:
        line = line.replace(PLACEHOLDER, str(SKYPE)).replace(" --master spark://head:7077", "")
        out = sh(work, line)
        if " sim run " in line and "--json" in line:
            summary = json.loads(out.stdout)
            assert summary["hit_ratio"] >= 0.99 and summary["false_positives"] == 0, line
        if " analyze " in line:
            folder = work / line.split("--out ")[1].split()[0]
            assert (folder / "report.md").exists(), line
    assert json.loads((work / "runs/kill/manifest.json").read_text())["argv"]
    assert (work / "runs/skype/sim.jsonl").stat().st_size > 0
    assert (work / "synthetic.avt").stat().st_size > 0
    sh(work, ".venv/bin/vinifera trace stats synthetic.avt")  # what synth wrote is a trace


def test_the_workers_line_works_as_written(work):
    (line,) = block("### A simulation on several cores")
    line = line.replace(PLACEHOLDER, str(SKYPE)) + " --end 4"
    summary = json.loads(sh(work, line).stdout)
    assert summary["hit_ratio"] >= 0.99 and summary["duplicates"] == 0


def test_the_local_swarm_commands_work_as_written(work):
    up, traced, netns = block("### Local swarms")
    status, down, analyze = block("### Local swarms", 1)
    assert "--trace" in traced and "sudo" in netns
    # the first swarm, stopped from "another terminal" as the README shows
    swarm = subprocess.Popen(up, shell=True, cwd=work, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (work / "runs/swarm/manifest.json").exists():
            assert time.monotonic() < deadline and swarm.poll() is None
            time.sleep(0.5)
        time.sleep(25)  # formed and delivering
        shown = sh(work, status).stdout
        assert shown.count("crt_rows") >= 10 or "live" in shown, shown[:500]
        sh(work, down)
        out, err = swarm.communicate(timeout=60)
    finally:
        if swarm.poll() is None:
            swarm.kill()
    assert swarm.returncode == 0, err[-2000:]
    assert "hit ratio" in out.lower() or "hit_ratio" in out, out
    sh(work, analyze)
    assert (work / "runs/swarm-analysis/report.md").exists()
    sh(work, traced.replace(PLACEHOLDER, str(SKYPE)), timeout=600)
    assert json.loads((work / "runs/skype-swarm/results.json").read_text())
    if os.geteuid() == 0 and shutil.which("ip") and shutil.which("iptables"):  # --loss needs it
        sh(work, netns.removeprefix("sudo "), timeout=600)
