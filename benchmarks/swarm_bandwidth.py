"""Bandwidth of real daemons: N `vinifera-node` processes on loopback
(default 50) at gossip period P (default 0.5 s) under the reference
workload, the bytes each node sends per second by message kind,
maintenance apart from event copies.

    nice -n 10 .venv/bin/python benchmarks/swarm_bandwidth.py [--nodes 10,25,50]

Once the overlay has formed and --warmup seconds more have passed, every
node's status is read through its control socket (`sent_bytes` and
`sent_datagrams`: UDP payloads as sent, framing and handshakes included,
IP and UDP headers not), and again --window seconds later. A node's rate
is its difference over the time between its two reads; the figures are
the mean over the nodes up at both reads. With several sizes the swarms
run one after another, so a flat core shows as equal rates.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from record import record  # noqa: E402
from scaling import split  # noqa: E402  (the simulator's maintenance/events split)

from vinifera.swarm.backends import ProcessBackend  # noqa: E402
from vinifera.swarm.control import swarm_status  # noqa: E402
from vinifera.swarm.plan import make_plan  # noqa: E402
from vinifera.swarm.results import swarm_metrics  # noqa: E402
from vinifera.swarm.runner import SwarmRunner  # noqa: E402


def read_all(manifest: dict) -> dict[int, tuple[float, int, dict, dict]]:
    """slot -> (read time, pid, sent bytes by kind, sent datagrams by kind)."""
    out = {}
    for entry in swarm_status(manifest):
        st = entry["status"]
        if st is not None and "sent_bytes" in st:
            out[entry["slot"]] = (
                time.monotonic(),
                entry["pid"],
                st["sent_bytes"],
                st["sent_datagrams"],
            )
    return out


def rates(first: dict, second: dict) -> tuple[int, Counter, Counter]:
    """Per kind, the mean over nodes read twice (same process) of bytes
    and datagrams sent per second."""
    per_bytes: Counter = Counter()
    per_dgrams: Counter = Counter()
    n = 0
    for slot, (t1, pid1, b1, d1) in first.items():
        if slot not in second or second[slot][1] != pid1:
            continue
        t2, _, b2, d2 = second[slot]
        n += 1
        for kind in set(b1) | set(b2):
            per_bytes[kind] += (b2.get(kind, 0) - b1.get(kind, 0)) / (t2 - t1)
            per_dgrams[kind] += (d2.get(kind, 0) - d1.get(kind, 0)) / (t2 - t1)
    for c in (per_bytes, per_dgrams):
        for kind in c:
            c[kind] /= max(n, 1)
    return n, per_bytes, per_dgrams


def measure(nodes: int, args) -> dict:
    log_dir = Path(tempfile.mkdtemp(prefix=f"vnf-bw{nodes}-", dir=args.tmp))
    backend = ProcessBackend(Path(tempfile.mkdtemp(prefix="vnf-", dir=args.tmp)))
    runner = SwarmRunner(make_plan(nodes, seed=args.seed), backend, log_dir, period=args.period,
                         events_per_second=args.events_per_second,
                         log=lambda msg: print(f"  [{nodes}] {msg}", flush=True))  # fmt: skip
    reads: list[dict] = []
    done = threading.Event()

    def sample() -> None:
        while not runner.t0 and not done.is_set():  # t0: the overlay formed, publishing began
            time.sleep(0.5)
        if done.wait(args.warmup):
            return
        reads.append(read_all(runner.manifest))
        if done.wait(args.window):
            return
        reads.append(read_all(runner.manifest))

    cpu0 = os.times()
    load0 = os.getloadavg()[0]
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        runner.run(args.warmup + args.window + 5)
    finally:
        done.set()
        sampler.join(timeout=30)
    cpu1 = os.times()
    if len(reads) < 2:
        raise SystemExit(f"{nodes} nodes: the swarm ended before both status reads")
    n, per_bytes, per_dgrams = rates(reads[0], reads[1])
    bytes_per_s = split(per_bytes, 1)
    figures = {
        "nodes": nodes,
        "nodes_measured": n,
        "bytes_per_node_s": bytes_per_s,
        "datagrams_per_node_s": split(per_dgrams, 1),
        "bytes_per_node_s_by_kind": {k: round(v, 1) for k, v in sorted(per_bytes.items())},
        "datagrams_per_node_s_by_kind": {k: round(v, 2) for k, v in sorted(per_dgrams.items())},
        "bytes_per_node_round": {k: round(v * args.period, 1) for k, v in bytes_per_s.items()},
        "hit_ratio": swarm_metrics(log_dir).get("hit_ratio"),
        # every node process's CPU (children of this one), for the load it put on the machine
        "nodes_cpu_s": round(
            cpu1.children_user + cpu1.children_system - cpu0.children_user - cpu0.children_system, 1
        ),
        "load_before": round(load0, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="50", help="comma-separated swarm sizes, one after another")
    ap.add_argument("--period", type=float, default=0.5)
    ap.add_argument("--events-per-second", type=float, default=2.0)
    ap.add_argument("--warmup", type=float, default=30.0, help="seconds after the overlay formed")
    ap.add_argument("--window", type=float, default=60.0, help="seconds between the two reads")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tmp", default=None, help="folder for logs and sockets (default: system's)")
    ap.add_argument("--no-record", action="store_true", help="print only")
    args = ap.parse_args()
    sizes = [int(x) for x in args.nodes.split(",")]
    results = []
    for nodes in sizes:
        fig = measure(nodes, args)
        results.append(fig)
        print(f"{nodes} nodes ({fig['nodes_measured']} measured): "
              f"{fig['bytes_per_node_s']['total']:.0f} B/s per node "
              f"({fig['bytes_per_node_s']['maintenance']:.0f} maintenance), "
              f"{fig['datagrams_per_node_s']['total']:.1f} datagrams/s "
              f"({fig['datagrams_per_node_s']['maintenance']:.1f} maintenance); "
              f"hit {fig['hit_ratio']}; load {fig['load_before']} -> {fig['load_after']}",
              flush=True)  # fmt: skip
        print("   bytes/s by kind:", fig["bytes_per_node_s_by_kind"], flush=True)
        if not args.no_record:
            params = {"nodes": nodes, "period": args.period, "warmup": args.warmup,
                      "window": args.window, "events_per_second": args.events_per_second,
                      "seed": args.seed}  # fmt: skip
            record("swarm_bandwidth", fig, params)
    if len(results) > 1:
        lo, hi = results[0], results[-1]
        lo_b, hi_b = lo["bytes_per_node_s"]["maintenance"], hi["bytes_per_node_s"]["maintenance"]
        print(f"maintenance bytes per node per second, {hi['nodes']} / {lo['nodes']} nodes: "
              f"{hi_b / max(lo_b, 1e-9):.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
