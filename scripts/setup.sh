#!/usr/bin/env bash
# Create (or reuse) the project virtualenv in .venv and install the package
# with its test extras. Safe to run repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
# pip's and setuptools' chatter goes to a log; it is shown only on failure.
LOG=.venv/install.log
if ! { .venv/bin/python -m pip install --quiet --upgrade pip &&
       .venv/bin/python -m pip install --quiet -e '.[test]'; } > "$LOG" 2>&1; then
    cat "$LOG" >&2
    echo "setup failed; see above (also in $LOG)" >&2
    exit 1
fi
