#!/usr/bin/env bash
# Create (or reuse) the project virtualenv in .venv and install the package
# with its test extras. Safe to run repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."
# The interpreter: $PYTHON if set; else the distribution's /usr/bin/python3
# if it is 3.11 or newer and can make a virtualenv (Debian builds it with
# profile-guided and link-time optimization: 13% fewer instructions than
# pyenv's default build, same results; docs/decisions/simulator-speed.md,
# "The interpreter"); else python3 on the PATH.
pick_python() {
    if [ -n "${PYTHON:-}" ]; then
        echo "$PYTHON"
    elif /usr/bin/python3 -c 'import sys, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        echo /usr/bin/python3
    else
        echo python3
    fi
}
if [ ! -x .venv/bin/python ]; then
    PY="$(pick_python)"
    if ! "$PY" -m venv .venv; then
        [ -z "${PYTHON:-}" ] || exit 1  # the one asked for does not work: say so
        rm -rf .venv
        PY=python3
        "$PY" -m venv .venv
    fi
    echo "virtualenv .venv made with $(.venv/bin/python -c 'import sys; print(sys.version.split()[0])') ($PY)"
fi
# pip's and setuptools' chatter goes to a log; it is shown only on failure.
LOG=.venv/install.log
if ! { .venv/bin/python -m pip install --quiet --upgrade pip &&
       .venv/bin/python -m pip install --quiet -e '.[test]'; } > "$LOG" 2>&1; then
    cat "$LOG" >&2
    echo "setup failed; see above (also in $LOG)" >&2
    exit 1
fi
# Optional: mimalloc, the allocator simulations preload where it is
# installed (vinifera/hugepages.py: x1.06-1.2 node-rounds per CPU-second,
# the same results). Debian's package, installed when we are root with
# apt-get and it is missing; nothing fails without it. VINIFERA_NO_APT=1
# skips this.
if [ "${VINIFERA_NO_APT:-0}" != 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null &&
   ! ldconfig -p 2> /dev/null | grep -q libmimalloc; then
    APTLOG=.venv/apt.log
    export DEBIAN_FRONTEND=noninteractive
    if ! { timeout 120 apt-get install -y --no-install-recommends libmimalloc2.0 ||
           { timeout 180 apt-get update -qq && timeout 120 apt-get install -y --no-install-recommends libmimalloc2.0; }; } > "$APTLOG" 2>&1; then
        echo "note: libmimalloc2.0 not installed (see $APTLOG): simulations use glibc's malloc" >&2
    fi
fi
# The compiled build, wherever it can be made (scripts/compile_if_possible.sh).
bash scripts/compile_if_possible.sh
