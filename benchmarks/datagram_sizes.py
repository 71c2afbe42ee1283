"""The largest datagram a swarm sends, by kind (issue 75 item 8): N daemons
in one process on loopback addresses of their own, 3-attribute
subscriptions, events published after a warm-up; reported from every
node's status ("largest_sent"), with the fragments sent and put together.

    .venv/bin/python benchmarks/datagram_sizes.py [--nodes 40] [--max-datagram 1200]
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import structlog
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import record  # noqa: E402

import vinifera  # noqa: E402
from vinifera.schema import Schema  # noqa: E402

SCHEMA = Schema.numeric(3, 0.0, 1000.0)


async def swarm(nodes: int, max_datagram: int, rounds: int, period: float) -> dict:
    rng = random.Random(1)
    async with AsyncExitStack() as st:
        live = []
        for i in range(nodes):
            boot = [n.address for n in rng.sample(live, min(2, len(live)))]
            lo = [rng.uniform(0, 900) for _ in range(3)]
            sub = " and ".join(
                f"a{k} in [{lo[k]:.1f}, {lo[k] + rng.uniform(10, 100):.1f}]" for k in range(3)
            )
            node = vinifera.Node(SCHEMA, listen=f"127.0.7.{i + 1}:0", bootstrap=boot,
                                 subscription=sub, period=period, seed=i,
                                 max_datagram=max_datagram)  # fmt: skip
            live.append(await st.enter_async_context(node))
        for r in range(rounds):
            await trio.sleep(period)
            if r > rounds // 5:
                values = {f"a{k}": rng.uniform(0, 1000) for k in range(3)}
                await live[r % nodes].publish(values)
        largest: dict[str, int] = {}
        counters: dict[str, int] = {}
        for n in live:
            s = n.status()
            for k, v in s["largest_sent"].items():
                largest[k] = max(largest.get(k, 0), v)
            for k in ("datagrams_sent", "fragmented", "reassembled", "fragments_dropped"):
                counters[k] = counters.get(k, 0) + s["counters"].get(k, 0)
    return {"largest_sent": dict(sorted(largest.items(), key=lambda kv: -kv[1])), **counters}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=40)
    ap.add_argument("--max-datagram", type=int, default=1200)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--period", type=float, default=0.2)
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    figures = trio.run(functools.partial(swarm, args.nodes, args.max_datagram, args.rounds,
                                         args.period))  # fmt: skip
    print(figures)
    if not args.no_record:
        params = {**vars(args), "attributes": 3, "load": os.getloadavg()[0]}
        params.pop("no_record")
        record("datagram_sizes", figures, params)


if __name__ == "__main__":
    main()
