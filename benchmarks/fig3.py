"""Reproduce the rows of the paper's Fig. 3 beside our own: Vinifera with
K_f = 0, 4 (our default) and 8 (K_sw = 8 - K_f), and the baseline, on skewed and random
subscriptions, N = 1,000, 100 rounds (50 warm-up), 10 events per round.

    .venv/bin/python benchmarks/fig3.py [--nodes N] [--rounds R] [--jobs J]

Each row is one `vinifera sim run ... --json` command, printed beside its
result; the Markdown table goes to stdout and the JSON to runs/fig3/.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BIN = Path(sys.executable).parent / "vinifera"
OUT = Path("runs/fig3")


def rows(nodes: int, rounds: int) -> list[tuple[str, list[str]]]:
    common = ["--nodes", str(nodes), "--rounds", str(rounds), "--seed", "1", "--json"]
    out = []
    for subs in ("skewed", "random"):
        for kf in (0, 4, 8):
            out.append(
                (
                    f"vinifera-{subs}-kf{kf}",
                    [
                        "sim",
                        "run",
                        "--system",
                        "vinifera",
                        "--subscriptions",
                        subs,
                        "--friends",
                        str(kf),
                        "--small-world",
                        str(8 - kf),
                        *common,
                    ],
                )
            )
        out.append(
            (
                f"baseline-{subs}",
                ["sim", "run", "--system", "baseline", "--subscriptions", subs, *common],
            )
        )
    return out


def run(name: str, args: list[str]) -> tuple[str, list[str], dict]:
    path = OUT / f"{name}.json"
    if path.exists():
        return name, args, json.loads(path.read_text())
    res = subprocess.run([str(BIN), *args], capture_output=True, text=True, check=True)
    path.write_text(res.stdout)
    print(f"done {name}", file=sys.stderr, flush=True)
    return name, args, json.loads(res.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(a.jobs) as pool:
        results = list(pool.map(lambda r: run(*r), rows(a.nodes, a.rounds)))
    print(
        "| run | hit ratio | FP | dup | overhead | event messages | path | load max | load p95 "
        "| wall s | command |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, args, s in results:
        print(
            f"| {name} | {s['hit_ratio']} | {s['false_positives']} | {s['duplicates']} "
            f"| {s['traffic_overhead']:.3f} | {s['event_messages']:,} "
            f"| {s['path_length']:.2f} | {s['load_max']:.3f} "
            f"| {s['load_p95']:.3f} | {s['wall_seconds']:.0f} | `vinifera {' '.join(args)}` |"
        )


if __name__ == "__main__":
    main()
