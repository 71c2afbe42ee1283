#!/usr/bin/env bash
# The project's test command: set up .venv, lint, run the default (fast) suite.
# Extra arguments go to pytest, e.g. `scripts/test.sh -m slow`; the tests run
# in two worker processes (pytest-xdist; `-n 0` for one process, `-n 4` for
# four). One file's tests run in one worker (--dist loadfile): its
# module-scoped fixtures are made once, and tests that share a host-wide
# resource (the network namespaces of test_swarm.py) never overlap.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/python -m pytest -m "not slow" -n 2 --dist loadfile --durations=15 "$@"
