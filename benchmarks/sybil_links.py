"""Sybils on one host against the link cap (issue 75 item 3): honest
daemons on loopback addresses of their own, SYBILS daemons on one address;
how many of the honest nodes' routing links the Sybils hold, with the cap
off (--links-per-host 0) and on (2), side by side on the same seed.

    .venv/bin/python benchmarks/sybil_links.py --honest 20 --sybils 16,48
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import sys
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from record import record  # noqa: E402
from sybils import sybil_swarm  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--honest", type=int, default=20)
    ap.add_argument("--sybils", default="16,48", help="comma-separated Sybil counts")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    runs = []
    for sybils in (int(x) for x in args.sybils.split(",")):
        for cap in (0, 2):
            r = trio.run(functools.partial(sybil_swarm, args.honest, sybils, cap, seed=args.seed))
            row = {"links_per_host": cap, **dataclasses.asdict(r)}
            runs.append(row)
            print(row, flush=True)
    if not args.no_record:
        params = {"honest": args.honest, "seed": args.seed, "load": os.getloadavg()[0]}
        record("sybil_links", {"runs": runs}, params)


if __name__ == "__main__":
    main()
