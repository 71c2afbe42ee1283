"""One node's event path, CPU only: datagram bytes -> decode_untrusted ->
match against a CRT of 1,000 rows -> forward (encode every copy), with
the garbage collector set as `vinifera-node run` sets it
(vinifera/gcpolicy.py).

    .venv/bin/python benchmarks/event_path.py [--events 20000] [--rows 1000]

Prints events per CPU-second and appends them to benchmarks/results.jsonl.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from record import record  # noqa: E402

from vinifera.gcpolicy import settle_for_daemon  # noqa: E402
from vinifera.protocol import messages as m  # noqa: E402
from vinifera.protocol.actions import Send  # noqa: E402
from vinifera.protocol.config import OverlayConfig  # noqa: E402
from vinifera.protocol.content.filters import Filter  # noqa: E402
from vinifera.protocol.node import Node  # noqa: E402
from vinifera.protocol.profile import Profile  # noqa: E402
from vinifera.ranges import IntervalSet  # noqa: E402
from vinifera.schema import Schema  # noqa: E402
from vinifera.subscription import Event, Subscription  # noqa: E402
from vinifera.wire import Decoder, encode, encode_sends  # noqa: E402

SCHEMA = Schema.numeric(2, 0.0, 1000.0)


def build_node(rows: int, rng: random.Random) -> Node:
    """A node whose CRT on a0 holds `rows` rows: one per neighbour, each
    asking for one subscriber's range of width 5-25 (a few rows match an
    event)."""
    node = Node("127.0.0.1:9000", SCHEMA, OverlayConfig(), random.Random(1))
    node.start(0.0, [])
    for i in range(rows):
        nb = Profile(f"10.0.{i // 250}.{i % 250 + 1}:7000", rng.getrandbits(64), None)
        lo = rng.uniform(0, 975)
        sub = Subscription.build(SCHEMA, {"a0": (lo, lo + rng.uniform(5, 25))})
        keys = IntervalSet.of(*sub.key_ranges["a0"])
        node.receive(0.1, m.Install(nb, "a0", (Filter(keys, (), 1),)))
    rows_held = sum(r["attribute"] == "a0" for r in node.snapshot()["crt_rows"])
    assert rows_held == rows, rows_held
    return node


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--rows", type=int, default=1_000)
    ap.add_argument("--no-record", action="store_true", help="print only")
    args = ap.parse_args()
    settle_for_daemon()  # the collector as `vinifera-node run` sets it
    rng = random.Random(7)
    node = build_node(args.rows, rng)
    sender = Profile("10.9.9.9:7000", 5, None)
    datagrams = []
    for i in range(args.events):
        event = Event.build(SCHEMA, {"a0": rng.uniform(0, 1000), "a1": rng.uniform(0, 1000)})
        key = event.keys()["a0"]
        datagrams.append(encode(m.EventMessage(sender, i, event, "a0", key, 3, False)))
    decoder = Decoder(SCHEMA)
    copies = 0
    t0 = time.process_time()  # CPU seconds: the machine is shared
    now = 1.0
    for data in datagrams:
        now += 1e-5
        actions = node.receive(now, decoder.decode_untrusted(data))
        # as the daemon does: one batch of sends per input
        for _, encoded in encode_sends([a for a in actions if type(a) is Send]):
            copies += len(encoded)
    cpu = time.process_time() - t0
    figures = {
        "events": args.events,
        "events_per_second": round(args.events / cpu, 1),
        "microseconds_per_event": round(cpu / args.events * 1e6, 1),
        "copies_forwarded_per_event": round(copies / args.events, 2),
        "cpu_seconds": round(cpu, 2),
    }
    print(f"{args.rows} CRT rows: {figures['events_per_second']:,} events/s "
          f"({figures['microseconds_per_event']} us each, "
          f"{figures['copies_forwarded_per_event']} copies forwarded per event)")  # fmt: skip
    if not args.no_record:
        record("event_path", figures, {"rows": args.rows, "events": args.events})


if __name__ == "__main__":
    main()
