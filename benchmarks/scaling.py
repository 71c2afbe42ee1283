"""How the full stack scales with N (issue 14): for each N, one simulation
(default mix, skewed, 10 events per round, seed 1) in its own process,
printing node-rounds per CPU-second, wall time, peak RSS, and messages and
bytes per node-round by message kind, maintenance apart from event copies.

    .venv/bin/python benchmarks/scaling.py        # N = 1,000, 3,000, 10,000; 100 rounds
    .venv/bin/python benchmarks/scaling.py --nodes 1000 --rounds 60

Messages and bytes are those of the steady window (rounds after the
warm-up, the second half of the run). Bytes are the real wire encoding
(vinifera.wire.encode, no network key) of messages whose simulator
addresses are rewritten as real `host:port` strings (10.x.y.z:7000);
every SAMPLE-th message of each kind is encoded and counted SAMPLE times,
and the CPU spent encoding is left out of node-rounds per CPU-second.
Each N runs as `vinifera sim run` does, with huge pages for its heap where
the machine has them, and mimalloc as the allocator where it is installed
(vinifera/hugepages.py); VINIFERA_HUGE_PAGES=0 runs without both,
VINIFERA_MIMALLOC=0 without mimalloc. Results are appended to
benchmarks/results.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from record import record  # noqa: E402

from vinifera import hugepages, native  # noqa: E402
from vinifera.protocol import messages as m  # noqa: E402
from vinifera.protocol.config import profile, settings_of  # noqa: E402
from vinifera.protocol.profile import Profile  # noqa: E402
from vinifera.sim.config import SimConfig  # noqa: E402
from vinifera.sim.driver import Simulation  # noqa: E402
from vinifera.sim.transfer import fields  # noqa: E402
from vinifera.wire import encode  # noqa: E402

SAMPLE = 16
EVENT_KINDS = {"EventMessage", "EventPush"}


def split(by_kind: dict, digits: int = 3) -> dict:
    """Per-kind figures summed into maintenance, event copies and total."""
    maintenance = sum(v for k, v in by_kind.items() if k not in EVENT_KINDS)
    events = sum(v for k, v in by_kind.items() if k in EVENT_KINDS)
    return {"maintenance": round(maintenance, digits), "events": round(events, digits),
            "total": round(maintenance + events, digits)}  # fmt: skip


def host(address: int) -> str:
    return f"10.{(address >> 16) & 255}.{(address >> 8) & 255}.{address & 255}:7000"


def _profile(p: Profile) -> Profile:
    return Profile(host(p.address), p.ident, p.subscription, p.seq)


def with_real_addresses(msg: m.Message) -> m.Message:
    """A copy of a simulator message with every address as on a real
    network, built through the constructor (a compiled class refuses
    object.__new__)."""
    values = []
    for slot in fields(type(msg)):
        value = getattr(msg, slot)
        if slot == "profile":
            value = _profile(value)
        elif slot == "profiles":
            value = tuple(_profile(p) for p in value)
        elif slot == "rows":
            value = tuple((a, host(nb), ttl, fs) for a, nb, ttl, fs in value)
        values.append(value)
    return type(msg)(*values)


def measure(nodes: int, rounds: int, seed: int, settings: list[str]) -> dict:
    ours = profile("vinifera")
    content = replace(ours.content, **settings_of(ours.content, settings))
    cfg = SimConfig(
        nodes=nodes,
        rounds=rounds,
        seed=seed,
        subscriptions="skewed",
        overlay=ours.overlay,
        content=content,
        events_per_round=10.0,
    )
    steady_from = cfg.warmup * cfg.overlay.period
    counts: Counter = Counter()
    sampled: Counter = Counter()
    nbytes: Counter = Counter()
    tap_cpu = 0.0

    def tap(now: float, send) -> None:
        nonlocal tap_cpu
        if now < steady_from:
            return
        kind = type(send.message).__name__
        counts[kind] += 1
        if counts[kind] % SAMPLE == 1:
            t0 = time.process_time()
            nbytes[kind] += SAMPLE * len(encode(with_real_addresses(send.message)))
            sampled[kind] += 1
            tap_cpu += time.process_time() - t0

    sim = Simulation(cfg, tap=tap)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    summary = sim.run()
    cpu = time.process_time() - cpu0 - tap_cpu
    wall = time.perf_counter() - wall0
    node_rounds = nodes * (rounds - cfg.warmup)
    per = {k: round(v / node_rounds, 3) for k, v in sorted(counts.items())}
    per_bytes = {k: round(v / node_rounds, 1) for k, v in sorted(nbytes.items())}

    return {
        "nodes": nodes,
        "node_rounds_per_cpu_second": round(sim.node_rounds / cpu, 1),
        "cpu_seconds": round(cpu, 1),
        "wall_seconds": round(wall, 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "messages_per_node_round": split(per),
        "bytes_per_node_round": split(per_bytes),
        "messages_by_kind": per,
        "bytes_by_kind": per_bytes,
        "hit_ratio": summary.get("hit_ratio"),
        "path_length": summary.get("path_length"),
        "traffic_overhead": summary.get("traffic_overhead"),
        "load_max": summary.get("load_max"),
        "ring_correct_fraction": summary.get("ring_correct_fraction"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--nodes", type=int, action="append", help="repeatable; default 1000, 3000, 10000"
    )
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-record", action="store_true", help="print only")
    ap.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a delivery option (ContentConfig), as `vinifera sim run --set`",
    )
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)  # one N, JSON on stdout
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(measure(args.child, args.rounds, args.seed, args.settings)))
        return
    # each child runs as `vinifera sim run` would (vinifera/hugepages.py)
    env = hugepages.environment_here() or dict(os.environ)
    huge = hugepages.in_effect(env)
    mimalloc = hugepages.preloads_mimalloc(env)
    for n in args.nodes or [1000, 3000, 10000]:
        cmd = [sys.executable, __file__, "--child", str(n), "--rounds", str(args.rounds),
               "--seed", str(args.seed), *(f"--set={x}" for x in args.settings)]  # fmt: skip
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
        except subprocess.CalledProcessError as err:
            sys.exit(f"N = {n} failed:\n{err.stderr}")
        fig = json.loads(out.stdout)
        msgs, b = fig["messages_per_node_round"], fig["bytes_per_node_round"]
        build = "compiled" if native.in_use() else "pure"
        build += ", huge pages" if huge else ""
        build += ", mimalloc" if mimalloc else ""
        print(f"N={n:>6} ({build}): {fig['node_rounds_per_cpu_second']:>7.0f} node-rounds/CPU-s, "
              f"wall {fig['wall_seconds']:.0f} s, RSS {fig['peak_rss_mib']:.0f} MiB; "
              f"per node-round "
              f"{msgs['total']:.2f} msgs ({msgs['maintenance']:.2f} maintenance), "
              f"{b['total']:.0f} B ({b['maintenance']:.0f} maintenance); hit {fig['hit_ratio']}",
              flush=True)  # fmt: skip
        print("   by kind:", fig["messages_by_kind"], flush=True)
        if not args.no_record:
            record("scaling", fig, {"nodes": n, "rounds": args.rounds, "seed": args.seed,
                                    "mix": "default", "set": args.settings,
                                    "subscriptions": "skewed",
                                    "events_per_round": 10, "sample": SAMPLE,
                                    "compiled": native.in_use(), "huge_pages": huge,
                                    "mimalloc": mimalloc})  # fmt: skip


if __name__ == "__main__":
    main()
