"""The README's shell blocks as the tests that run them read them."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def block(title: str, nth: int = 0) -> list[str]:
    """The shell commands of the `nth` ```sh block after `title` (joined
    continuation lines, comments and blank lines dropped)."""
    text = (ROOT / "README.md").read_text()
    start = text.index(title)
    bodies = re.findall(r"```sh\n(.*?)```", text[start:], re.S)
    body = bodies[nth].replace("\\\n", " ")
    return [ln.split("  #")[0].strip() for ln in body.splitlines()
            if ln.strip() and not ln.lstrip().startswith("#")]  # fmt: skip


def wait_installed(status: list[str], cwd: Path, timeout: float = 60) -> None:
    """Ask `status` (a vinifera-node status command) until the node has a
    successor and its subscription installed, as a user waits for it."""
    deadline = time.monotonic() + timeout
    while True:
        out = subprocess.run(status, cwd=cwd, capture_output=True, text=True)
        shown = json.loads(out.stdout) if out.returncode == 0 else {}
        if shown.get("installed") and shown["links"]["succ"] is not None:
            return
        assert time.monotonic() < deadline, out.stderr
        time.sleep(0.5)
