"""The delivery journal a restarted daemon reads back from its own log.

A node remembers the events it delivered for `dedupe_memory` periods, so a
copy arriving late (a retry, a newcomer catch-up) is not delivered twice.
That memory dies with the process; the log file, which a restarted daemon
appends to, still holds the `deliver` records. Reading them back before
the node starts keeps the application from seeing an event twice across a
crash (at most the last unflushed period is lost: the log is flushed every
period)."""

from __future__ import annotations

import json
import os
from pathlib import Path

BLOCK = 1 << 20  # read the log backwards this many bytes at a time


def recent_deliveries(path: Path, since: float) -> list[tuple[float, int]]:
    """(time, event id) of the `deliver` records at or after `since` in the
    log at `path`, oldest first. Reads from the end only as far back as
    needed; lines that are not records (a cut last line) are skipped."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below, read in blocks
    except FileNotFoundError:
        return []
    with fh:
        pos = fh.seek(0, os.SEEK_END)
        chunks: list[bytes] = []
        data = b""
        start = 0
        while pos > 0:
            step = min(BLOCK, pos)
            pos -= step
            fh.seek(pos)
            chunks.append(fh.read(step))
            data = b"".join(reversed(chunks))
            # Before the first newline lies a line cut by the block boundary.
            start = 0 if pos == 0 else data.find(b"\n") + 1
            if start == 0 and pos > 0:
                continue  # no whole line yet
            first = _time_of(data[start : data.find(b"\n", start)])
            if first is not None and first < since:
                break
    journal = []
    for line in data[start:].splitlines():
        rec = _record(line)
        if rec is None or rec.get("ev") != "deliver":
            continue
        t, eid = rec.get("t"), rec.get("eid")
        if isinstance(t, (int, float)) and isinstance(eid, int) and t >= since:
            journal.append((float(t), eid))
    journal.sort()
    return journal


def _record(line: bytes) -> dict | None:
    try:
        rec = json.loads(line)
    except ValueError:
        return None
    return rec if isinstance(rec, dict) else None


def _time_of(line: bytes) -> float | None:
    rec = _record(line)
    t = rec.get("t") if rec is not None else None
    return float(t) if isinstance(t, (int, float)) else None
