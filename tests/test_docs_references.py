"""What --help, the README and the docs cite exists in the repository (they
cited EXPERIMENTS.md, which lives outside it, and a schema.toml nobody had),
and default paths do not depend on the working directory."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from vinifera.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
CITED = re.compile(r"\b((?:docs|examples|scripts|benchmarks)/[\w./-]+\.(?:md|toml|sh|py))")


def _help_texts() -> str:
    out = []

    def walk(cmd, path):
        res = CliRunner().invoke(main, [*path, "--help"], terminal_width=200)
        out.append(res.output)
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, [*path, name])

    walk(main, [])
    return "\n".join(out)


def test_every_help_text_and_doc_cites_files_the_repository_has():
    texts = {"--help": _help_texts(), "README.md": (ROOT / "README.md").read_text()}
    for doc in (ROOT / "docs").glob("*.md"):
        if doc.name != "results.md":  # the dated lab log (issue 74 archives it)
            texts[f"docs/{doc.name}"] = doc.read_text()
    missing = {
        (where, cited)
        for where, text in texts.items()
        for cited in CITED.findall(text)
        if not (ROOT / cited.rstrip(".")).exists()
    }
    assert not missing
    for where, text in texts.items():
        assert "EXPERIMENTS.md" not in text.replace("../shared/EXPERIMENTS.md", ""), where


def test_the_fig5_default_trace_is_beside_the_checkout_from_any_directory(tmp_path):
    code = "from vinifera.experiment.figures import DEFAULT_TRACE; print(DEFAULT_TRACE)"
    env = {k: v for k, v in os.environ.items() if k != "VINIFERA_SKYPE_TRACE"}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert Path(out.stdout.strip()) == ROOT.parent / "shared" / "traces" / "skype-superpeers.avt"
    env["VINIFERA_SKYPE_TRACE"] = str(tmp_path / "mine.avt")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert out.stdout.strip() == str(tmp_path / "mine.avt")


def test_the_readmes_layout_table_names_files_that_exist():
    """It named protocol/crt.py, content.py and sim/ledger.py long after
    they had moved."""
    text = (ROOT / "README.md").read_text()
    rows = re.findall(r"^\| `([\w/]+/)` [^|]*\| (.*) \|$", text, re.M)
    assert len(rows) >= 8
    missing = [
        f"{folder}{name}"
        for folder, what in rows
        for name in re.findall(r"`([\w]+\.py)`", what)
        if not (ROOT / folder / name).exists()
    ]
    assert not missing, missing
