#!/usr/bin/env bash
# The compiled build (scripts/build_compiled.sh: the simulator's hot modules
# through mypyc, same source, same bytes, about 1.5-2x the speed) is made
# wherever a C compiler is, and made again when its sources changed;
# without a compiler, or if it fails, everything stays pure Python and one
# line says so. VINIFERA_PURE=1 skips it (and runs the source despite one).
# Called by scripts/setup.sh; needs .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${VINIFERA_PURE:-0}" != 0 ]; then
    echo "pure Python (VINIFERA_PURE=$VINIFERA_PURE): the compiled build is not made"
elif ! command -v cc > /dev/null && ! command -v gcc > /dev/null; then
    echo "note: no C compiler (cc, gcc): pure Python, the simulator about half as fast" >&2
else
    state="$(VINIFERA_PURE=1 .venv/bin/python -c 'from vinifera import native
print("current" if native.built() and not native.stale_sources() else "needed")')"
    if [ "$state" = needed ]; then
        if bash scripts/build_compiled.sh > .venv/compile-run.log 2>&1; then
            echo "compiled build made (mypyc; scripts/build_compiled.sh --clean removes it)"
        else
            echo "note: the compiled build failed (see .venv/compile.log): pure Python" >&2
        fi
    fi
fi
