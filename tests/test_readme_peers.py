"""The README's "Running peers" commands, run as written in a shell (issue
73: every README command is run by a test or CI). Only what a test must
own is replaced: the two ports, the socket and log paths. And its
"Signed events" keygen line."""

from __future__ import annotations

import json
import re
import shlex
import socket
import subprocess
import time

from readme_blocks import ROOT, block, wait_installed


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_running_peers_commands_work_as_written(tmp_path):
    p0, p1 = free_port(), free_port()
    swaps = {"127.0.0.1:7000": f"127.0.0.1:{p0}", "127.0.0.1:7001": f"127.0.0.1:{p1}",
             "/tmp/n0.sock": str(tmp_path / "n0.sock"), "/tmp/n1.sock": str(tmp_path / "n1.sock"),
             "n0.jsonl": str(tmp_path / "n0.jsonl")}  # fmt: skip
    commands = []
    for c in block("### Running peers"):
        for a, b in swaps.items():
            c = c.replace(a, b)
        commands.append(c)
    runs, asks = commands[:2], commands[2:]
    assert all(" run " in c for c in runs) and len(asks) == 3
    nodes = [subprocess.Popen(shlex.split(c), cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True) for c in runs]  # fmt: skip
    try:
        wait_installed(shlex.split(asks[2]), ROOT)  # the second node joined and installed
        results = [subprocess.run(shlex.split(c), cwd=ROOT, capture_output=True, text=True,
                                  timeout=30) for c in asks]  # fmt: skip
        assert [r.returncode for r in results] == [0, 0, 0], [r.stderr for r in results]
        assert results[0].stdout.strip().isdigit()  # the event id
        assert results[1].stdout.strip() == "temp in [5.0, 20.0]"
        assert '"crt_rows"' in results[2].stdout
        time.sleep(3)
    finally:
        for n in nodes:
            n.terminate()
        outs = [n.communicate(timeout=20)[0] for n in nodes]
    got = [[json.loads(ln)["values"] for ln in o.splitlines() if ln.strip()] for o in outs]
    event = {"temp": 7, "city": "Oslo"}
    assert got[0] == [event] and got[1] == [event], got  # each node delivered it once
    assert (tmp_path / "n0.jsonl").stat().st_size > 0


def test_the_keygen_line_works_as_written(tmp_path):
    (line,) = [c for c in block("#### Signed events") if "keygen" in c]
    line = line.replace("alice.pem", str(tmp_path / "alice.pem"))
    out = subprocess.run(shlex.split(line), cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert re.search(r"public key:  [0-9a-f]{64}\nfingerprint: [0-9a-f]{16}", out.stdout)
    assert (tmp_path / "alice.pem").stat().st_mode & 0o777 == 0o600
