"""The docs/experiments.md metrics of a swarm run, straight from its node logs
(the same Ledger the simulator uses; `vinifera analyze` does it in Spark,
with the same measurement window and the same rule for logs that stop
without a leave: vinifera/swarm/window.py, docs/metrics.md)."""

from __future__ import annotations

import json
from pathlib import Path

from vinifera.ledger import Ledger
from vinifera.schema import Schema
from vinifera.swarm.runner import read_manifest, write_json_atomically
from vinifera.swarm.window import DEADLINE_PERIODS, inferred_crashes, swarm_window

RESULTS = "results.json"


def read_records(log_dir: Path) -> tuple[list[dict], int]:
    """Every record of every node log, in time order (ties: file, then line
    order), and the number of lines that were not records (a node killed
    hard may cut its last line)."""
    records, bad = [], 0
    for path in sorted(log_dir.glob("node-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                bad += 1
                continue
            if isinstance(rec, dict) and {"t", "node", "ev"} <= rec.keys():
                records.append(rec)
            else:
                bad += 1
    records.sort(key=lambda r: r["t"])
    return records, bad


def swarm_metrics(
    log_dir: Path,
    since: float | None = None,
    exclude: frozenset[str] = frozenset(),
) -> dict:
    """Hit ratio, false positives, duplicates, overhead, path length and load
    over the swarm's measurement window (from its manifest); `since` (Unix
    time) moves the window's start; the nodes in `exclude` are left out
    entirely (e.g. a host cut off the network)."""
    manifest = read_manifest(log_dir)
    schema = Schema.from_dict(manifest["schema"])
    records, bad = read_records(log_dir)
    if not records:
        raise ValueError(f"no node records in {log_dir}")
    window = swarm_window(manifest)
    if window is None:  # never got to publish: every record, for what it is worth
        deadline = manifest["period"] * DEADLINE_PERIODS
        origin, start, end = records[0]["t"], records[0]["t"], records[-1]["t"] - deadline
    else:
        origin, start, end, deadline = window.origin, window.start, window.end, window.deadline
    if since is not None:
        start = since
    by_node: dict[str, list[dict]] = {}
    for rec in records:
        by_node.setdefault(rec["node"], []).append(rec)
    silent = inferred_crashes(by_node)
    # Stable sort: an inferred crash at a node's last record comes after it.
    fed = sorted(records + silent, key=lambda r: r["t"])
    ledger = Ledger(schema, start, end, deadline)
    # Each node stamps records with its own clock, and a node started after
    # the wall clock was stepped is off by that step (tens of ms seen here):
    # its publish may sort after the first copies received elsewhere. The
    # Ledger counts copies only of events it knows, so publishes go first.
    for rec in sorted(fed, key=lambda r: r["ev"] != "publish"):
        if rec["node"] not in exclude:
            ledger.feed(rec)
    return {
        **ledger.summary(),
        "malformed_lines": bad,
        "records": len(records),
        "inferred_crashes": len(silent),
        # seconds after the swarm's origin (its first node's start)
        "window_start": start - origin,
        "window_end": end - origin,
        "deadline": deadline,
    }


def write_results(log_dir: Path, summary: dict) -> Path:
    """results.json beside the manifest: what `swarm up` printed."""
    path = log_dir / RESULTS
    write_json_atomically(path, summary)
    return path
