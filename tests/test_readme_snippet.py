"""The README's embedding snippet, run as written against a live node: the
other node must get the event (before, the snippet left within milliseconds
of its own local match and the event went nowhere)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

from test_daemon_processes import cli

ROOT = Path(__file__).resolve().parent.parent


def readme_snippet() -> str:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    (snippet,) = [b for b in blocks if "vinifera.Node(" in b]
    return snippet


def test_the_readme_snippet_reaches_the_first_node():
    snippet = readme_snippet()
    assert '"127.0.0.1:7000"' in snippet and '"examples/schema.toml"' in snippet
    first = subprocess.Popen(
        [*cli(), "run", "--listen", "127.0.0.1:0", "--schema", "examples/schema.toml",
         "--subscribe", "temp in [0, 10]"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        while '"started"' not in (line := first.stderr.readline()):
            assert line, "the first node exited"
        address = json.loads(line)["node"]
        # the snippet as written; only the first node's port is this test's
        script = snippet.replace('"127.0.0.1:7000"', json.dumps(address))
        t0 = time.monotonic()
        out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                             text=True, timeout=60)  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "{'temp': 3.5, 'city': 'Oslo'} 0"
        assert time.monotonic() - t0 < 30  # it leaves on its own, not at the 10 s give-up only
    finally:
        first.terminate()
        stdout, _ = first.communicate(timeout=15)
    got = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    assert [d["values"] for d in got] == [{"temp": 3.5, "city": "Oslo"}], stdout
    assert got[0]["hops"] >= 1
