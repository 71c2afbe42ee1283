#!/usr/bin/env bash
# The main job on its embedded defaults: set up .venv, simulate 300 nodes
# with skewed subscriptions and 10 events per round, Vinifera and the
# baseline on the same seed, keep their logs, print the metrics side by
# side, then analyze both logs with Spark (local[*]; needs Java 17) into one
# report and print its path. Usage: scripts/demo.sh [OUT_DIR]   (default runs/demo)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-runs/demo}"
if ! command -v java > /dev/null; then
    echo "the Spark analysis needs Java 17: apt-get install openjdk-17-jre-headless" >&2
    exit 1
fi
bash scripts/setup.sh
mkdir -p "$OUT"
for system in vinifera baseline; do
    echo "simulating $system ..." >&2
    .venv/bin/vinifera sim run --system "$system" --nodes 300 --rounds 60 --seed 1 \
        --events-per-round 10 --log-dir "$OUT/$system" --force --json > "$OUT/$system.json.tmp"
    mv "$OUT/$system.json.tmp" "$OUT/$system.json"
done
.venv/bin/python - "$OUT" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
runs = {s: json.loads((out / f"{s}.json").read_text()) for s in ("vinifera", "baseline")}
keys = ["hit_ratio", "false_positives", "duplicates", "traffic_overhead", "path_length",
        "load_max", "load_p95", "expected_pairs", "ring_correct_fraction", "wall_seconds"]
print("The simulator's own measurements (its summary.json, from the records it wrote):")
print(f"{'metric':<22}{'vinifera':>12}{'baseline':>12}")
for k in keys:
    print(f"{k:<22}{runs['vinifera'][k]!s:>12}{runs['baseline'][k]!s:>12}")
print(f"\nlogs, manifests and summaries: {out}/vinifera and {out}/baseline")
PY
echo "analyzing both logs with Spark (the same metrics, recomputed from the log files) ..." >&2
.venv/bin/vinifera analyze "$OUT/vinifera" "$OUT/baseline" --out "$OUT/analysis"
