"""What a seal costs per event (issue 75 item 10): bytes on the wire (an
EventMessage with and without it) and CPU to seal (publisher) and to check
(every node that requires seals, per copy), in microseconds of process
time, over --events events of the reference schema (one float attribute).

    .venv/bin/python benchmarks/signing_overhead.py
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import record  # noqa: E402

from vinifera.daemon.signing import SealPolicy, SigningKey  # noqa: E402
from vinifera.protocol import messages as m  # noqa: E402
from vinifera.protocol.profile import Profile  # noqa: E402
from vinifera.schema import Schema  # noqa: E402
from vinifera.subscription import Event  # noqa: E402
from vinifera.wire import encode  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=5000)
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    schema = Schema.numeric(1, 0.0, 1000.0)
    rng = random.Random(1)
    events = [Event.build(schema, {"a0": rng.uniform(0, 1000)}) for _ in range(args.events)]
    key, policy = SigningKey.generate(), SealPolicy()
    t = time.process_time()
    sealed = [key.seal(e) for e in events]
    seal_us = (time.process_time() - t) / len(events) * 1e6
    t = time.process_time()
    assert all(policy.check(e) is None for e in sealed)
    check_us = (time.process_time() - t) / len(events) * 1e6
    me = Profile("203.0.113.5:7000", 1 << 60, None)
    plain = len(encode(m.EventMessage(me, 1 << 40, events[0], "a0", 1 << 63, 3, True)))
    signed = len(encode(m.EventMessage(me, 1 << 40, sealed[0], "a0", 1 << 63, 3, True)))
    figures = {"seal_us": round(seal_us, 1), "check_us": round(check_us, 1),
               "event_message_bytes": plain, "sealed_event_message_bytes": signed}  # fmt: skip
    print(figures)
    if not args.no_record:
        record("signing_overhead", figures, {"events": args.events, "load": os.getloadavg()[0]})


if __name__ == "__main__":
    main()
