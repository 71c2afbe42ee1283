"""Instructions executed by one small full-stack simulation, counted by
valgrind (cachegrind without its cache model): a measure of the CPU work
that, unlike CPU seconds, does not move with the machine's load. Same
input, same count, to a few dozen instructions in tens of billions (the
hash seed is fixed), so a change of 0.2% shows. It does not see memory
stalls, which grow with N: confirm a gain in CPU seconds before claiming it.

    .venv/bin/python benchmarks/instructions.py                    # this checkout, pure Python
    .venv/bin/python benchmarks/instructions.py --against HEAD~1   # and another commit, in turn

Pure Python unless --compiled (VINIFERA_PURE=1 runs the .py files despite a
build). The whole process is counted: interpreter start and imports are
about 1% of the default run. Prints the figures and appends them to
benchmarks/results.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from compiled_speedup import CHILD  # noqa: E402  (the same simulation)
from record import record  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def count(tree: Path, args, compiled: bool) -> dict:
    """Run the simulation from `tree` under cachegrind: its instruction count and summary."""
    env = {
        **os.environ,
        "PYTHONHASHSEED": "0",
        "PYTHONPATH": str(tree),
        "VINIFERA_PURE": "0" if compiled else "1",
    }
    cmd = [
        "valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
        sys.executable, "-c", CHILD, str(args.nodes), str(args.rounds), args.subscriptions,
    ]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tree)
    if out.returncode != 0:
        raise SystemExit(f"{tree}: the simulation failed:\n{out.stderr[-2000:]}")
    refs = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    if refs is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{out.stderr[-2000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if result["compiled"] != compiled:
        raise SystemExit(f"{tree}: expected {'compiled' if compiled else 'pure'} modules")
    result["instructions"] = int(refs.group(1).replace(",", ""))
    return result


def worktree(rev: str, into: Path) -> Path:
    path = into / "tree"
    try:
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(path),
                        rev], check=True, capture_output=True, text=True)  # fmt: skip
    except subprocess.CalledProcessError as err:
        raise SystemExit(f"cannot check out {rev!r}: {err.stderr.strip()}") from None
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--subscriptions", default="skewed", choices=["skewed", "random"])
    ap.add_argument("--against", metavar="REV", help="also count this commit (a git revision)")
    ap.add_argument("--compiled", action="store_true", help="count the compiled build")
    ap.add_argument("--no-record", action="store_true", help="print only")
    args = ap.parse_args()
    if args.compiled and args.against:
        ap.error("--compiled counts this checkout's build; --against checks out a pure one")
    if shutil.which("valgrind") is None:
        ap.error("valgrind is not installed (Debian: apt-get install valgrind)")
    trees = {"this checkout": REPO}
    with tempfile.TemporaryDirectory(prefix="vinifera-instructions-") as tmp:
        if args.against:
            trees[args.against] = worktree(args.against, Path(tmp))
        try:
            results = {name: count(tree, args, args.compiled) for name, tree in trees.items()}
        finally:
            if args.against:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                                str(trees[args.against])], capture_output=True)  # fmt: skip
    figures: dict = {}
    for name, r in results.items():
        per = r["instructions"] / r["node_rounds"]
        print(f"{name}: {r['instructions']:,} instructions, {per:,.0f} per node-round "
              f"(hit ratio {r['summary'].get('hit_ratio')})")  # fmt: skip
        figures[name] = {"instructions": r["instructions"], "per_node_round": round(per)}
    if args.against:
        mine, theirs = (results[n]["instructions"] for n in trees)
        figures["ratio_to_against"] = round(mine / theirs, 4)
        same = results["this checkout"]["summary"] == results[args.against]["summary"]
        figures["same_summary"] = same
        print(f"this checkout / {args.against}: {mine / theirs:.4f}"
              f"{'' if same else ' (the summaries differ: not the same simulation)'}")  # fmt: skip
    if not args.no_record:
        params = {
            "nodes": args.nodes, "rounds": args.rounds, "subscriptions": args.subscriptions,
            "seed": 1, "events_per_round": 10.0, "compiled": args.compiled,
            "against": args.against,
        }  # fmt: skip
        record("instructions", figures, params)


if __name__ == "__main__":
    main()
