"""Resident memory of daemons over a long run: N `vinifera-node` processes on
loopback (default 10), the reference workload at E events per second
(default 20) for M minutes (default 30), VmRSS of every node sampled every
S seconds.

    nice -n 10 .venv/bin/python benchmarks/soak_rss.py [--minutes 30] [--nodes 10]

A node whose memory is bounded settles within the first minutes (tables
fill, the allocator's arenas reach their working size) and then stays flat.
Figures: per node, the spread (max - min) of its RSS after --warmup minutes
(default 5) and the slope of a least-squares line through those samples
(KiB per minute); the worst node of each; for VmRSS and for RssAnon (the
heap, without the pages of mapped code and libraries). Prints every sample as it goes,
then the figures, and appends them to benchmarks/results.jsonl.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from record import record  # noqa: E402

from vinifera.swarm.backends import ProcessBackend  # noqa: E402
from vinifera.swarm.plan import make_plan  # noqa: E402
from vinifera.swarm.results import swarm_metrics  # noqa: E402
from vinifera.swarm.runner import SwarmRunner  # noqa: E402


def memory_kib(pid: int) -> tuple[int, int] | None:
    """(VmRSS, RssAnon) of a process in KiB: RssAnon is its heap and
    stacks; the rest of VmRSS is mapped files (code paged in as it runs)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    try:
        return int(fields["VmRSS"].split()[0]), int(fields["RssAnon"].split()[0])
    except (KeyError, ValueError):
        return None


def slope_per_minute(points: list[tuple[float, int]]) -> float:
    """Least-squares slope of (seconds, KiB) points, in KiB per minute."""
    if len(points) < 2:
        return 0.0
    ts = [t for t, _ in points]
    ks = [k for _, k in points]
    mt, mk = statistics.fmean(ts), statistics.fmean(ks)
    var = sum((t - mt) ** 2 for t in ts)
    return 60.0 * sum((t - mt) * (k - mk) for t, k in points) / var if var else 0.0


def flatness(name: str, samples: dict, warm: float) -> dict:
    """Per node after `warm` seconds: spread (max - min) and slope; the
    worst node and the median."""
    spreads, slopes, finals = [], [], []
    for points in samples.values():
        late = [(t, k) for t, k in points if t >= warm]
        if len(late) < 2:
            continue
        spreads.append(max(k for _, k in late) - min(k for _, k in late))
        slopes.append(slope_per_minute(late))
        finals.append(late[-1][1])
    if not spreads:
        return {}
    return {
        f"{name}_final_kib_median": statistics.median(finals),
        f"{name}_spread_after_warmup_kib_max": max(spreads),
        f"{name}_spread_after_warmup_kib_median": statistics.median(spreads),
        f"{name}_slope_kib_per_min_max": round(max(slopes), 2),
        f"{name}_slope_kib_per_min_median": round(statistics.median(slopes), 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10)
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=5.0, help="minutes before the flat window")
    ap.add_argument("--events-per-second", type=float, default=20.0)
    ap.add_argument("--period", type=float, default=0.5)
    ap.add_argument("--sample-every", type=float, default=30.0, help="seconds")
    ap.add_argument("--log-dir", type=Path, default=None)
    ap.add_argument("--no-record", action="store_true", help="print only")
    args = ap.parse_args()
    duration = args.minutes * 60
    log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="vnf-soak-"))
    backend = ProcessBackend(Path(tempfile.mkdtemp(prefix="vnf-")))
    runner = SwarmRunner(make_plan(args.nodes, seed=1), backend, log_dir, period=args.period,
                         events_per_second=args.events_per_second,
                         log=lambda msg: None)  # fmt: skip
    samples: dict[int, list[tuple[float, int]]] = {}
    anon: dict[int, list[tuple[float, int]]] = {}
    done = threading.Event()

    def sample() -> None:
        while not runner.t0 and not done.is_set():
            time.sleep(0.5)
        while not done.is_set():
            t = time.monotonic() - runner.t0
            row = {}
            for slot, proc in sorted(backend.procs.items()):
                kib = memory_kib(proc.pid)
                if kib is not None:
                    samples.setdefault(slot, []).append((t, kib[0]))
                    anon.setdefault(slot, []).append((t, kib[1]))
                    row[slot] = kib
            print(f"{t / 60:6.1f} min  rss/anon KiB  "
                  + " ".join(f"{r}/{a}" for r, a in row.values()),
                  f" ({runner.published} events)", flush=True)  # fmt: skip
            done.wait(args.sample_every)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        runner.run(duration)
    finally:
        done.set()
        sampler.join(timeout=10)
    figures = {
        "nodes": args.nodes,
        "minutes": args.minutes,
        "events_published": runner.published,
        **flatness("rss", samples, args.warmup * 60),
        **flatness("anon", anon, args.warmup * 60),
        "hit_ratio": swarm_metrics(log_dir).get("hit_ratio"),
    }
    for k, v in figures.items():
        print(f"{k}: {v}")
    if not args.no_record:
        params = {"nodes": args.nodes, "minutes": args.minutes, "warmup": args.warmup,
                  "events_per_second": args.events_per_second, "period": args.period}  # fmt: skip
        record("soak_rss", figures, params)


if __name__ == "__main__":
    main()
