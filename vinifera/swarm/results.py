"""The EXPERIMENTS.md metrics of a swarm run, straight from its node logs
(the same Ledger the simulator uses; `vinifera analyze` does it in Spark)."""

from __future__ import annotations

import json
from pathlib import Path

from vinifera.schema import Schema
from vinifera.sim.ledger import Ledger
from vinifera.swarm.runner import MANIFEST


def read_records(log_dir: Path) -> tuple[list[dict], int]:
    """Every record of every node log, in time order, and the number of
    lines that were not records (a node killed hard may cut its last line)."""
    records, bad = [], 0
    for path in sorted(log_dir.glob("node-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
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
    deadline_periods: float = 5.0,
    since: float | None = None,
    exclude: frozenset[str] = frozenset(),
) -> dict:
    """Hit ratio, false positives, duplicates, overhead, path length and load
    over the events published from `since` (Unix time; default: all), the
    nodes in `exclude` left out entirely (e.g. a host cut off the network)."""
    manifest = json.loads((log_dir / MANIFEST).read_text())
    schema = Schema.from_dict(manifest["schema"])
    records, bad = read_records(log_dir)
    if not records:
        raise ValueError(f"no node records in {log_dir}")
    start = records[0]["t"] if since is None else since
    ledger = Ledger(schema, start, records[-1]["t"] + 1, manifest["period"] * deadline_periods)
    # Each node stamps records with its own clock, and a node started after
    # the wall clock was stepped is off by that step (tens of ms seen here):
    # its publish may sort after the first copies received elsewhere. The
    # Ledger counts copies only of events it knows, so publishes go first.
    for rec in sorted(records, key=lambda r: r["ev"] != "publish"):
        if rec["node"] not in exclude:
            ledger.feed(rec)
    return {**ledger.summary(), "malformed_lines": bad, "records": len(records)}
