"""Issue 72's delivery goals at one commit: Vinifera beside the baseline
and the limits of each run's own final graph.

    .venv/bin/python benchmarks/delivery_goals.py [--seeds 1 2 3] [--jobs 2]
        [--set NAME=VALUE ...] [--baseline/--no-baseline]

One simulation per (system, workload, seed): N = 1,000, 100 rounds, d = 1,
10 events per round, the configuration of `vinifera sim run` (plus any
`--set` on Vinifera's delivery options: a lever's before and after), and
for Vinifera the limits of `vinifera sim run --limits`. Prints one row per
run and, per workload, the goals of issue 72 against the baseline of the
same seed: cost <= the baseline's, path <= 0.6x the baseline's, route <=
1.3x its shortest, redundancy <= 0.20, load max <= 0.30 and p95 <= 0.20,
hit ratio 1 with no false positive or duplicate. Appends the rows to
benchmarks/results.jsonl. Runs take 1-3 CPU-minutes each (pure Python:
several times that; `scripts/build_compiled.sh` first).
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace

from record import record

from vinifera.protocol.config import profile, settings_of
from vinifera.sim import limits
from vinifera.sim.config import SimConfig
from vinifera.sim.driver import Simulation

COLUMNS = (
    "hit_ratio", "false_positives", "duplicates", "cost", "path_length", "route_hops",
    "limit_route_hops", "limit_direct_path", "limit_rendezvous_path", "redundancy",
    "node_overhead", "load_max", "load_p95",
)  # fmt: skip


def one_run(job: tuple[str, str, int, int, int, tuple[str, ...]]) -> dict:
    system, workload, seed, nodes, rounds, settings = job
    base = profile(system)
    content = base.content
    if system == "vinifera":
        content = replace(content, **settings_of(content, settings))
    cfg = SimConfig(
        system=system, nodes=nodes, rounds=rounds, seed=seed, subscriptions=workload,
        events_per_round=10.0, content=content,
        overlay=base.overlay,
    )  # fmt: skip
    sim = Simulation(cfg)
    start = time.process_time()
    summary = sim.run()
    if system == "vinifera":
        summary.update(limits.path_limits(sim))
    row = {k: summary.get(k) for k in COLUMNS}
    row.update(system=system, workload=workload, seed=seed,
               cpu_s=round(time.process_time() - start, 1))  # fmt: skip
    return row


def goals(ours: dict, base: dict) -> dict[str, bool]:
    """Issue 72's static goals for one run beside the baseline's."""
    route_ok = ours["limit_route_hops"] and ours["route_hops"] <= 1.3 * ours["limit_route_hops"]
    return {
        "clean": ours["hit_ratio"] == 1.0
        and not ours["false_positives"]
        and not ours["duplicates"],
        "cost": ours["cost"] <= base["cost"],
        "path": ours["path_length"] <= 0.6 * base["path_length"],
        "route": bool(route_ok),
        "redundancy": ours["redundancy"] <= 0.20,
        "load": ours["load_max"] <= 0.30 and ours["load_p95"] <= 0.20,
    }


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--workloads", nargs="+", default=["skewed", "random"])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--set", dest="settings", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--baseline", action=argparse.BooleanOptionalAction, default=True)
    a = ap.parse_args()
    settings_of(profile("vinifera").content, a.settings)  # bad names fail here, not in a pool
    systems = ["vinifera", "baseline"] if a.baseline else ["vinifera"]
    jobs = [(s, w, seed, a.nodes, a.rounds, tuple(a.settings))
            for w in a.workloads for seed in a.seeds for s in systems]  # fmt: skip
    with ProcessPoolExecutor(a.jobs) as pool:
        rows = list(pool.map(one_run, jobs))
    print("| system | workload | seed | " + " | ".join(COLUMNS) + " | goals missed |")
    print("|" + "---|" * (len(COLUMNS) + 4))
    by_key = {(r["system"], r["workload"], r["seed"]): r for r in rows}
    for r in rows:
        base = by_key.get(("baseline", r["workload"], r["seed"]))
        missed = ""
        if r["system"] == "vinifera" and base is not None:
            r["goals"] = goals(r, base)
            missed = ", ".join(k for k, ok in r["goals"].items() if not ok) or "none"
        vals = " | ".join(_fmt(r[k]) for k in COLUMNS)
        print(f"| {r['system']} | {r['workload']} | {r['seed']} | {vals} | {missed} |")
    params = {"nodes": a.nodes, "rounds": a.rounds, "set": a.settings, "seeds": a.seeds}
    record("delivery_goals", {"runs": rows}, params)
    print(json.dumps({"recorded": len(rows)}))


if __name__ == "__main__":
    main()
