"""Large swarm-style node logs, written fast and synthetically (no
simulation): the input of the analysis benchmarks.

    .venv/bin/python benchmarks/synth_logs.py --records 10000000 --out runs/bench/synth-10M

One file per node (`node-N.jsonl`, as a swarm writes them) and a swarm
manifest (schema, period, origin, measurement window), schema v1
(docs/logs.md). The reference workload's skewed subscriptions and events
(vinifera.workload), 1,000 nodes, 10 events per 1-second period. Each
event reaches every live node whose subscription matches it (a `recv`
with `match` true, then a `deliver`, 1% lost), plus relays that are not
interested (`recv` with `match` false); some copies are forwarded (`fwd`
> 0). Churn: a node in ten crashes once (the runner's `crash` record) and
rejoins; a node in fifty dies silently (its log just stops: an inferred
crash). The content is plausible rather than a protocol run: the point is
volume and the shape of every record kind the metrics read.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from vinifera.schema import Schema
from vinifera.workload import Workload

ORIGIN = 1_795_500_000.0  # Unix seconds, as a swarm's nodes stamp them
PERIOD = 1.0
SETTLE = 5.0  # seconds from the origin to the first publish


def _sub(lo: float, hi: float) -> str:
    return f'[["a0",{lo!r},{hi!r}]]'


def write_synthetic(out: Path, records: int, nodes: int = 1000, seed: int = 1) -> int:
    """Write about `records` records into `out`; returns the exact count.
    Reuses a finished folder (its DONE file holds the count)."""
    done = out / "DONE"
    if done.is_file():
        return int(done.read_text())
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    schema = Schema.numeric(1, 0.0, 1000.0)
    work = Workload("skewed", schema, random.Random(seed + 1))
    subs = []
    for _ in range(nodes):
        ((_, lo, hi),) = work.subscription(rng).constraints
        subs.append((lo, hi))
    names = [f"127.1.{i // 250}.{i % 250 + 1}:7000" for i in range(nodes)]
    buf: list[list[str]] = [[] for _ in range(nodes)]
    files = [open(out / f"node-{i}.jsonl", "w", encoding="utf-8") for i in range(nodes)]  # noqa: SIM115
    count = 0

    def emit(i: int, t: float, ev: str, rest: str = "") -> None:
        nonlocal count
        buf[i].append(f'{{"v":1,"t":{t!r},"node":"{names[i]}","ev":"{ev}"{rest}}}\n')
        count += 1

    alive = [True] * nodes
    # churn plan: crash at a time, rejoin after 20 periods; silent deaths never return
    # about 235 records per event, 10 events per period; times are absolute
    span_guess = records / (10 * 235.0) * PERIOD + SETTLE
    crash_at = {i: ORIGIN + rng.uniform(SETTLE, span_guess)
                for i in rng.sample(range(nodes), nodes // 10)}  # fmt: skip
    silent = {i: ORIGIN + rng.uniform(SETTLE, span_guess)
              for i in rng.sample(range(nodes), nodes // 50)}  # fmt: skip
    back_at: dict[int, float] = {}
    for i in range(nodes):
        emit(i, ORIGIN + i * 0.001, "join", f',"id":"{i:016x}","sub":{_sub(*subs[i])}')
    eid = 1 << 40
    t = ORIGIN + SETTLE
    gap = PERIOD / 10
    while count < records:
        t += gap
        for i in [i for i, at in crash_at.items() if at <= t]:
            del crash_at[i]
            if alive[i]:
                emit(i, t, "crash")
                alive[i] = False
                back_at[i] = t + 20 * PERIOD
        for i in [i for i, at in back_at.items() if at <= t]:
            del back_at[i]
            alive[i] = True
            emit(i, t, "join", f',"id":"{i + nodes:016x}","sub":{_sub(*subs[i])}')
        for i in [i for i, at in silent.items() if at <= t]:
            del silent[i]
            alive[i] = False  # no record: the log just stops
        live = [i for i in range(nodes) if alive[i]]
        pub = rng.choice(live)
        value = work.event_values(rng)["a0"]
        eid += 1
        emit(pub, t, "publish", f',"eid":{eid},"values":[["a0",{value!r}]]')
        wanted = [i for i in live if subs[i][0] <= value <= subs[i][1]]
        relays = rng.sample(live, min(len(live), 3 + len(wanted) // 2))
        for i in relays:
            if i in wanted or i == pub:
                continue
            hops = rng.randint(1, 4)
            fwd = rng.randint(1, 3) if rng.random() < 0.6 else 0
            emit(i, t + hops * 0.004, "recv",
                 f',"eid":{eid},"attr":"a0","hops":{hops},"match":false,"fwd":{fwd},'
                 f'"dup":false,"rv":false')  # fmt: skip
        for i in wanted:
            if i == pub:
                emit(i, t, "deliver", f',"eid":{eid},"hops":0')
                continue
            hops = rng.randint(1, 8)
            ta = t + hops * 0.004
            fwd = rng.randint(1, 2) if rng.random() < 0.3 else 0
            emit(i, ta, "recv",
                 f',"eid":{eid},"attr":"a0","hops":{hops},"match":true,"fwd":{fwd},'
                 f'"dup":false,"rv":false')  # fmt: skip
            if rng.random() < 0.99:
                emit(i, ta, "deliver", f',"eid":{eid},"hops":{hops}')
        if eid % 2000 == 0:
            for i in range(nodes):
                files[i].writelines(buf[i])
                buf[i].clear()
            print(f"  {count:,} records", file=sys.stderr, end="\r")
    end = t + PERIOD
    for i in range(nodes):
        if alive[i]:
            emit(i, end + i * 0.0001, "leave")
        files[i].writelines(buf[i])
        files[i].close()
    manifest = {
        "kind": "swarm",
        "state": "ended",
        "synthetic": {"records": count, "nodes": nodes, "seed": seed},
        "nodes": nodes,
        "period": PERIOD,
        "deadline_periods": 5.0,
        "origin": ORIGIN,
        "measure_from": ORIGIN + SETTLE,
        "measure_until": t,
        "schema": schema.to_dict(),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    done.write_text(str(count))
    print(file=sys.stderr)
    return count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    n = write_synthetic(args.out, args.records, args.nodes, args.seed)
    print(f"{n} records in {args.out}")


if __name__ == "__main__":
    main()
