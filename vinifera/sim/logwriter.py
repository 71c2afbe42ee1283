"""JSON-lines log output for simulations: one file, one record per line, in
the order the records were produced (deterministic for a given seed)."""

from __future__ import annotations

import json
from pathlib import Path

LOG_FILE_NAME = "sim.jsonl"


class JsonLinesWriter:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = open(path, "w", encoding="utf-8", buffering=1 << 20)  # noqa: SIM115
        self._dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
        self.records = 0

    def write(self, rec: dict) -> None:
        self._fh.write(self._dumps(rec))
        self._fh.write("\n")
        self.records += 1

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> JsonLinesWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
