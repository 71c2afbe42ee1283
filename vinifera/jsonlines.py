"""JSON-lines record files (docs/logs.md): one record per line, compact,
NaN refused, written through a large buffer that the owner flushes."""

from __future__ import annotations

import json
from pathlib import Path


class JsonLinesWriter:
    def __init__(self, path: Path, append: bool = False) -> None:
        self.path = Path(path)
        # A restarted daemon appends: one file holds every session of a node.
        self._fh = open(self.path, "a" if append else "w", encoding="utf-8", buffering=1 << 20)  # noqa: SIM115
        self._dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
        self.records = 0

    def write(self, rec: dict) -> None:
        self._fh.write(self._dumps(rec))
        self._fh.write("\n")
        self.records += 1

    def flush(self) -> None:
        if not self._fh.closed:
            self._fh.flush()

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> JsonLinesWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
