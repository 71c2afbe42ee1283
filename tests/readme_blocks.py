"""The README's shell blocks as the tests that run them read them."""

from __future__ import annotations

import re
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
