#!/usr/bin/env bash
# The project's test command: set up .venv, lint, run the default (fast) suite.
# Extra arguments go to pytest, e.g. `scripts/test.sh -m slow`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/python -m pytest -m "not slow" --durations=15 "$@"
