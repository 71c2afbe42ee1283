"""JSON-lines log output for simulations: one file, one record per line, in
the order the records were produced (deterministic for a given seed)."""

from __future__ import annotations

from vinifera.jsonlines import JsonLinesWriter

LOG_FILE_NAME = "sim.jsonl"

__all__ = ["LOG_FILE_NAME", "JsonLinesWriter"]
