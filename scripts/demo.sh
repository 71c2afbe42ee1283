#!/usr/bin/env bash
# The main job on its embedded defaults: set up .venv, simulate 1,000 nodes
# (skewed subscriptions, 20% crash at round 30) and keep the logs.
# Usage: scripts/demo.sh [OUT_DIR]   (default runs/demo)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-runs/demo}"
bash scripts/setup.sh
.venv/bin/vinifera sim run --nodes 1000 --rounds 60 --seed 1 \
    --kill-fraction 0.2 --kill-at 30 --log-dir "$OUT/vinifera"
echo "logs, manifest and summary: $OUT/vinifera"
