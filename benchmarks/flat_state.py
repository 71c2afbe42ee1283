"""Objects against flat vectors for a node's state (issue 14's CPU bar):
Cyclon's view as the project keeps it (a dict of Entry objects, each
pointing to a Profile) against the same view as parallel unboxed vectors
(`librt.vecs`, which mypyc compiles to native arrays), both compiled with
mypyc in one scratch build, n nodes shuffling with each other.

    .venv/bin/python benchmarks/flat_state.py [--nodes 1000 --nodes 10000] [--rounds 15]

The project's cyclon.py, profile.py and draws.py are copied into a
temporary directory with their imports pointed at each other (source caps
left out, as the prototype has none), built there with the prototype
(benchmarks/flat_state/) and run one process per variant and size,
alternated. Prints CPU microseconds per exchange and appends them to
benchmarks/results.jsonl. Instructions per exchange, which tell layout
from work, are for cachegrind (docs/decisions/simulator-speed.md, "Flat
vectors (a lead, not built)").
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from record import record  # noqa: E402

ROOT = HERE.parent
PROTOTYPE = HERE / "flat_state"

# Source caps are never given to the copy (the prototype has none).
STUB_CAPS = """

class SourceCaps:
    def admit(self, addr: Hashable, source: Hashable) -> bool:
        return True

    def release(self, addr: Hashable) -> None:
        pass
"""

# (file in the project, name in the build, [(import there, import here)])
COPIES = [
    ("vinifera/draws.py", "vdraws.py", []),
    (
        "vinifera/protocol/profile.py",
        "vprofile.py",
        [
            (
                "from vinifera.subscription import Subscription",
                "from typing import Any as Subscription",
            )
        ],
    ),
    (
        "vinifera/protocol/cyclon.py",
        "ocyc.py",
        [
            ("from vinifera.draws import", "from vdraws import"),
            ("from vinifera.protocol.profile import", "from vprofile import"),
            ("from vinifera.protocol.vetting import SourceCaps", STUB_CAPS),
        ],
    ),
]

# One run: the variant's loop over `rounds` rounds, timed in CPU seconds.
CHILD = """
import sys, time, json
sys.path.insert(0, {build!r})
import vdrive
which, n, rounds = {which!r}, {n}, {rounds}
profiles, init = vdrive.setup_profiles(n, 1)
run = vdrive.run_objects if which == "objects" else vdrive.run_vecs
t0 = time.process_time()
size = run(n, rounds, profiles, init)
cpu = time.process_time() - t0
print(json.dumps({{"us": cpu / (n * rounds) * 1e6, "view": size}}))
"""


def build(into: Path, compiled: bool) -> None:
    """The copies and the prototype in `into`, compiled unless told not to."""
    for src, name, edits in COPIES:
        text = (ROOT / src).read_text()
        for old, new in edits:
            if old not in text:
                sys.exit(f"{src} no longer has {old!r}: update flat_state.py's COPIES")
            text = text.replace(old, new)
        (into / name).write_text(text)
    for f in ("vcyc.py", "vdrive.py"):
        shutil.copy(PROTOTYPE / f, into / f)
    if compiled:
        files = ["vdrive.py", "vcyc.py", "ocyc.py", "vprofile.py", "vdraws.py"]
        mypyc = Path(sys.executable).with_name("mypyc")
        out = subprocess.run([str(mypyc), *files], cwd=into, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"mypyc failed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, action="append", help="repeatable; default 1000, 10000")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--repeats", type=int, default=2, help="alternated runs of each variant")
    ap.add_argument("--pure", action="store_true", help="interpreted, not compiled")
    ap.add_argument("--no-record", action="store_true", help="print only")
    args = ap.parse_args()
    figures: dict = {}
    with tempfile.TemporaryDirectory(prefix="flat_state-") as tmp:
        print("building ...", flush=True)
        build(Path(tmp), compiled=not args.pure)
        for n in args.nodes or [1000, 10000]:
            runs: dict[str, list[float]] = {"objects": [], "vecs": []}
            for _ in range(args.repeats):
                for which in runs:
                    code = CHILD.format(build=tmp, which=which, n=n, rounds=args.rounds)
                    out = subprocess.run(
                        [sys.executable, "-c", code], capture_output=True, text=True, check=True
                    )
                    fig = json.loads(out.stdout)
                    if fig["view"] != 20:
                        sys.exit(f"{which}: views of {fig['view']} entries, not 20")
                    runs[which].append(round(fig["us"], 2))
                    print(f"N={n:>6} {which:>7}: {fig['us']:6.2f} us per exchange "
                          f"(mean view {fig['view']:.1f})", flush=True)  # fmt: skip
            ratio = round(min(runs["objects"]) / min(runs["vecs"]), 2)
            figures[str(n)] = {"us_per_exchange": runs, "ratio": ratio}
    for n, f in figures.items():
        print(f"N={n:>6}: objects / vectors = {f['ratio']} (best of {args.repeats})")
    if not args.no_record:
        params = {"rounds": args.rounds, "repeats": args.repeats, "compiled": not args.pure}
        record("flat_state", figures, {**params, "view": 20, "shuffle": 8})


if __name__ == "__main__":
    main()
