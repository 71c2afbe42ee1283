"""Record a finished trace replay in benchmarks/results.jsonl.

A 48 h Skype replay takes most of an hour, so it is run on its own (in the
background) and recorded afterwards:

    vinifera sim run --trace ../shared/traces/skype-superpeers.avt \\
        --round-seconds 240 --end 48 --log-dir runs/skype48 --json > runs/skype48.json
    python benchmarks/trace_replay.py runs/skype48.json runs/skype48/manifest.json

The first file is the run's JSON summary (it has the wall time), the second
its manifest (the command and the replay's settings).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from record import record  # noqa: E402

FIGURES = (
    "hit_ratio",
    "false_positives",
    "duplicates",
    "expected_pairs",
    "delivered_pairs",
    "events_published",
    "traffic_overhead",
    "path_length",
    "load_max",
    "load_p95",
    "joins",
    "rejoins",
    "departures",
    "messages_sent",
    "wall_seconds",
    "node_rounds_per_second",
)


def main(summary_path: str, manifest_path: str, run_commit: str | None = None) -> None:
    summary = json.loads(Path(summary_path).read_text(encoding="utf-8"))
    manifest = json.loads(Path(manifest_path).read_text(encoding="utf-8"))
    replay = manifest["config"]["replay"]
    params = {
        "command": "vinifera " + " ".join(manifest["argv"]),
        "system": summary["system"],
        "seed": summary["seed"],
        "rounds": summary["rounds"],
        "trace_nodes": summary["trace_nodes"],
        **{
            k: replay[k]
            for k in (
                "trace_md5",
                "round_seconds",
                "start_hours",
                "end_hours",
                "glitches",
                "departures",
                "measure_from_hours",
            )
        },
    }
    if run_commit:  # the run's commit, when it was recorded from a later one
        params["run_commit"] = run_commit
    entry = record("trace_replay", {k: summary[k] for k in FIGURES}, params)
    print(json.dumps(entry, indent=2, sort_keys=True))


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: trace_replay.py SUMMARY.json MANIFEST.json [RUN_COMMIT]")
    main(*sys.argv[1:])
