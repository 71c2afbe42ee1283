"""Finished points, kept as they finish so that an interrupted sweep resumes.

One JSON line per finished point in `results.jsonl`, shared by every figure
(Fig. 4a and 4b run the same simulations; so do 4c and 4d), keyed by the
hash of the point's full configuration and the code's commit. Each line is
one write(2) followed by fsync: a line is either whole or, if the machine
went down mid-write, a torn tail that the next open cuts off.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from vinifera import __version__
from vinifera.experiment.build import NOT_SIMULATED, SIMULATED_PACKAGES, source_fingerprint

# The code a simulation runs (build.py): a change anywhere else (docs, tests,
# the CLI, plots) leaves finished results valid.
CODE_PATHS = (*SIMULATED_PACKAGES, *(f":(exclude){p}" for p in NOT_SIMULATED))


def code_commit(repo: Path | None = None) -> str:
    """The last commit that changed the simulated code, with a `-dirty.<hash>`
    suffix when those files differ from it; outside a git checkout, the
    version and a hash of the simulated sources."""
    repo = repo or Path(__file__).resolve().parents[2]
    fingerprint = source_fingerprint()[:10]
    try:
        commit = _git(repo, "log", "-1", "--format=%h", "--abbrev=12", "--", *CODE_PATHS)
        dirty = _git(repo, "status", "--porcelain", "--", *CODE_PATHS)
    except (OSError, subprocess.CalledProcessError):
        return f"v{__version__}+src.{fingerprint}"
    if not commit:
        return f"v{__version__}+src.{fingerprint}"
    return f"{commit}-dirty.{fingerprint}" if dirty else commit


def head_commit(repo: Path | None = None) -> str | None:
    repo = repo or Path(__file__).resolve().parents[2]
    try:
        head = _git(repo, "rev-parse", "--short=12", "HEAD")
        dirty = _git(repo, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return None
    return f"{head}-dirty" if dirty else head


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=30
    )
    return out.stdout.strip()


class Store:
    def __init__(self, path: Path):
        self.path = path
        self.records: dict[str, dict] = {}
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            self._load()
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def _load(self) -> None:
        data = self.path.read_bytes()
        whole = data.rfind(b"\n") + 1
        if whole < len(data):  # a torn last line: that point was not finished
            os.truncate(self.path, whole)
        for number, line in enumerate(data[:whole].splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                self.records[record["key"]] = record
            except (ValueError, KeyError, TypeError) as err:
                raise ValueError(f"{self.path}:{number}: not a result record ({err})") from None

    def __contains__(self, key: str) -> bool:
        return key in self.records

    def get(self, key: str) -> dict | None:
        return self.records.get(key)

    def add(self, record: dict) -> None:
        line = (json.dumps(record, sort_keys=True, allow_nan=False) + "\n").encode()
        written = os.write(self._fd, line)
        if written != len(line):  # a full disk: do not leave half a line behind
            os.ftruncate(self._fd, os.lseek(self._fd, 0, os.SEEK_END) - written)
            raise OSError(f"{self.path}: short write ({written} of {len(line)} bytes)")
        os.fsync(self._fd)
        self.records[record["key"]] = record

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
