"""Memory that forged sources cost a node before any handshake (issue 75
item 2): datagrams from distinct forged (IP, port) sources go through the
daemon's admission (budgets, port caps, host lookup); tracemalloc reports
what the admission state holds after the flood, and after a quiet spell
and a prune. `--ref COMMIT` measures the admission of that commit side by
side (its file is loaded from git into a scratch module).

    .venv/bin/python benchmarks/admission_memory.py --datagrams 600000 --ref 4444b56
"""

from __future__ import annotations

import argparse
import importlib
import random
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import record  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def load_ref(commit: str, scratch: Path):
    """vinifera/daemon/admission.py as of `commit`, importable on its own (and
    the rate limiter it used then, if any)."""
    pkg = scratch / "refadm"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name in ("admission", "ratelimit"):
        out = subprocess.run(
            ["git", "show", f"{commit}:vinifera/daemon/{name}.py"],
            capture_output=True, text=True, cwd=ROOT,
        )  # fmt: skip
        if out.returncode == 0:
            text = out.stdout.replace("vinifera.daemon.ratelimit", "refadm.ratelimit")
            (pkg / f"{name}.py").write_text(text)
    sys.path.insert(0, str(scratch))
    return importlib.import_module("refadm.admission")


def flood(module, datagrams: int, seed: int) -> dict:
    rng = random.Random(seed)
    limits = module.Limits()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    adm = module.Admission(limits)
    t = 0.0
    started = time.process_time()
    refused = 0
    for _ in range(datagrams):
        ip = f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(256)}"
        t += 1e-5  # 100,000 datagrams a second
        refused += adm.admit(adm.host(ip), rng.randrange(1024, 65536), 64, t) is not None
    cpu = time.process_time() - started
    after = tracemalloc.get_traced_memory()[0] - base
    quiet = after
    if hasattr(adm, "prune"):
        adm.prune(t + limits.port_idle + 1.0)
        quiet = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return {
        "bytes_after_flood": after,
        "bytes_after_quiet": quiet,
        "bytes_per_source": round(after / datagrams, 1),
        "refused": refused,
        "cpu_us_per_datagram": round(cpu / datagrams * 1e6, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datagrams", type=int, default=600_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ref", help="also measure the admission of this commit")
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from vinifera.daemon import admission

    runs = {"now": admission}
    with tempfile.TemporaryDirectory() as scratch:
        if args.ref:
            runs = {f"ref {args.ref}": load_ref(args.ref, Path(scratch)), **runs}
        figures = {}
        for name, module in runs.items():
            figures[name] = flood(module, args.datagrams, args.seed)
            f = figures[name]
            print(
                f"{name:>14}: {f['bytes_after_flood'] / 2**20:7.1f} MiB after "
                f"{args.datagrams:,} forged sources ({f['bytes_per_source']} B each), "
                f"{f['bytes_after_quiet'] / 2**20:7.1f} MiB after a quiet spell; "
                f"{f['cpu_us_per_datagram']} us CPU per datagram"
            )
    if not args.no_record:
        record("admission_memory", figures, {"datagrams": args.datagrams, "seed": args.seed})


if __name__ == "__main__":
    main()
