"""What --help, the README and the docs cite exists in the repository (they
cited EXPERIMENTS.md, which lives outside it, and a schema.toml nobody had),
the sections of docs/decisions/ that code and docs cite exist, nothing cites
the archived lab log, and default paths do not depend on the working
directory."""

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
# A decision record cited by section: (docs/decisions/links.md, "Small-world
# aims") or docs/decisions/links.md ("Link vetting"), once line breaks and
# comment markers are folded away.
DECISION_CITED = re.compile(r'docs/decisions/([\w.-]+\.md)(?:,| \()\s*"([^"]+)"')
# The dated lab log, archived by issue 74: the decisions live in
# docs/decisions/, and nothing outside docs/archive/ may cite the log.
ARCHIVE = ROOT / "docs" / "archive"
LAB_LOG_NAMES = ("docs/archive/lab-log.md", "docs/" + "results.md")
_NOT_SOURCE = {".git", ".venv", ".mypy_cache", ".hypothesis", ".pytest_cache", ".ruff_cache",
               "__pycache__", "build", "dist", "runs", "out"}  # fmt: skip
_TEXT = {".py", ".md", ".sh", ".toml", ".cfg", ".ini", ".txt", ".yml", ".yaml", ".rst"}


def _help_texts() -> str:
    out = []

    def walk(cmd, path):
        res = CliRunner().invoke(main, [*path, "--help"], terminal_width=200)
        out.append(res.output)
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, [*path, name])

    walk(main, [])
    return "\n".join(out)


def _repository_texts() -> dict[str, str]:
    """Every source and documentation file of the checkout but the archive's
    (and the virtualenv's, the build's, the caches'), by relative path."""
    out = {}
    for folder, dirs, files in os.walk(ROOT):
        here = Path(folder)
        dirs[:] = [
            d
            for d in dirs
            if d not in _NOT_SOURCE and not d.endswith(".egg-info") and here / d != ARCHIVE
        ]
        for name in files:
            path = here / name
            if path.suffix in _TEXT or name in ("Dockerfile", "run"):
                out[path.relative_to(ROOT).as_posix()] = path.read_text(errors="replace")
    return out


def _folded(text: str) -> str:
    """Text with line breaks, their indentation and comment markers (#) as
    one space, so that a citation wrapped over comment lines reads whole."""
    return re.sub(r"\s*\n\s*(?:#+\s*)?", " ", text)


def test_every_help_text_and_doc_cites_files_the_repository_has():
    texts = {"--help": _help_texts(), "README.md": (ROOT / "README.md").read_text()}
    for doc in [*(ROOT / "docs").glob("*.md"), *(ROOT / "docs" / "decisions").glob("*.md")]:
        texts[doc.relative_to(ROOT).as_posix()] = doc.read_text()
    missing = {
        (where, cited)
        for where, text in texts.items()
        for cited in CITED.findall(text)
        if not (ROOT / cited.rstrip(".")).exists()
    }
    assert not missing
    for where, text in texts.items():
        assert "EXPERIMENTS.md" not in text.replace("../shared/EXPERIMENTS.md", ""), where


def test_the_decision_sections_that_code_and_docs_cite_exist():
    """A comment such as (docs/decisions/links.md, "Small-world aims") names
    a heading of that record; renaming one breaks the citation."""
    headings = {
        record.name: set(re.findall(r"^#+ (.+?)\s*$", record.read_text(), re.M))
        for record in (ROOT / "docs" / "decisions").glob("*.md")
    }
    cited = {
        (where, record, section)
        for where, text in _repository_texts().items()
        for record, section in DECISION_CITED.findall(_folded(text))
    }
    assert len(cited) >= 30  # the records issue 74 drew from the lab log
    missing = sorted(c for c in cited if c[2] not in headings.get(c[1], ()))
    assert not missing, missing


def test_nothing_outside_the_archive_cites_the_lab_log():
    """The dated lab log (docs/archive/, once docs/results.md) is kept for
    the record; what was decided and why lives in docs/decisions/."""
    assert (ARCHIVE / "lab-log.md").is_file()
    assert not (ROOT / "docs" / "results.md").exists()
    this = Path(__file__).resolve().relative_to(ROOT).as_posix()
    citing = sorted(
        (where, name)
        for where, text in _repository_texts().items()
        if where != this
        for name in LAB_LOG_NAMES
        if name in _folded(text)
    )
    assert not citing, citing


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
