#!/usr/bin/env bash
# Optional: compile the simulator's hot modules with mypyc, from the same
# Python source, next to it in the work tree (setup.py lists them). Python
# then imports the compiled modules instead of the .py files; without them
# everything is pure Python, as installed by scripts/setup.sh.
#   bash scripts/build_compiled.sh          # build (about a minute on 2 cores)
#   bash scripts/build_compiled.sh --clean  # remove the build: pure Python again
# A build goes stale when a compiled module's source changes: importing
# vinifera then fails with a message saying to rebuild or clean.
set -euo pipefail
cd "$(dirname "$0")/.."
clean() {
    find vinifera -name '*.so' -delete
    rm -f vinifera/_native_sources.txt
    rm -rf build
}
case "${1:-}" in
    --clean) clean; echo "compiled modules removed: pure Python"; exit 0 ;;
    "") ;;
    *) echo "usage: $0 [--clean]" >&2; exit 2 ;;
esac
[ -x .venv/bin/python ] || bash scripts/setup.sh
# mypy (with mypyc) is pinned: a newer one may compile the same source differently
LOG=.venv/compile.log
.venv/bin/python -m pip install --quiet "mypy==2.4.1" "setuptools>=77" > "$LOG" 2>&1 || {
    cat "$LOG" >&2; exit 1; }
clean
echo "compiling with mypyc (log: $LOG) ..."
if ! VINIFERA_COMPILE=1 nice -n 10 .venv/bin/python setup.py build_ext --inplace >> "$LOG" 2>&1; then
    grep -E "error|Error" "$LOG" >&2 || tail -20 "$LOG" >&2
    clean
    echo "compilation failed (see above, or $LOG); still pure Python" >&2
    exit 1
fi
.venv/bin/python -c 'import vinifera.protocol.node as n; print("compiled:", n.__file__)'
