"""The long fuzz run of the untrusted decoder: every family of vinifera.fuzz
(arbitrary bytes, msgpack garbage, mutations and field replacements of every
message kind, deep nesting, huge containers), with and without a network
key. Any exception other than WireError is a bug: it is printed with the
input's family, seed and index so that it can be replayed.

    .venv/bin/python benchmarks/fuzz_decoder.py [--inputs 1000000] [--seed 1]

Prints inputs per CPU-second and the outcome by family, and appends them to
benchmarks/results.jsonl. Exit status 1 if anything but WireError was raised.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from record import record  # noqa: E402

from vinifera.fuzz import Fuzzer  # noqa: E402
from vinifera.schema import Attribute, AttrType, Schema  # noqa: E402
from vinifera.wire import Decoder, NetworkKey, WireError  # noqa: E402

SCHEMA = Schema(
    [
        Attribute("temp", AttrType.FLOAT, -50.0, 50.0),
        Attribute("count", AttrType.INT, 0, 1000),
        Attribute("city", AttrType.STRING),
    ]
)
KEY = NetworkKey(b"the fuzz run's network key")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", type=int, default=1_000_000, help="datagrams in all")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-record", action="store_true", help="print only")
    args = ap.parse_args()
    outcomes: collections.Counter = collections.Counter()
    failures: list[str] = []
    cpu0 = time.process_time()
    done = 0
    for key in (None, KEY):
        fuzzer, decoder = Fuzzer(SCHEMA, key), Decoder(SCHEMA, key)
        rng = random.Random(f"{args.seed}/{key is not None}")
        for index, (family, data) in enumerate(fuzzer.stream(rng)):
            if index >= args.inputs // 2:
                break
            try:
                decoder.decode_untrusted(data)
                outcomes[family, "valid"] += 1
            except WireError as err:
                outcomes[family, err.reason] += 1
            except Exception as err:  # noqa: BLE001 - finding these is the point
                outcomes[family, "BUG " + type(err).__name__] += 1
                if len(failures) < 20:
                    failures.append(f"{family} keyed={key is not None} #{index}: {err!r:.200}")
            done += 1
            if done % 100_000 == 0:
                print(f"  {done:,} inputs ...", file=sys.stderr)
    cpu = time.process_time() - cpu0
    bugs = sum(n for (_, what), n in outcomes.items() if what.startswith("BUG"))
    by_family = collections.defaultdict(dict)
    for (family, what), n in sorted(outcomes.items()):
        by_family[family][what] = n
    for family, counts in by_family.items():
        print(f"{family:8} {counts}")
    print(f"{done:,} inputs, {bugs} exceptions other than WireError, "
          f"{done / cpu:,.0f} inputs per CPU-second")  # fmt: skip
    for line in failures:
        print("BUG", line)
    if not args.no_record:
        record(
            "fuzz_decoder",
            {"inputs": done, "other_exceptions": bugs,
             "inputs_per_cpu_second": round(done / cpu), "outcomes": by_family},
            {"seed": args.seed, "families": list(Fuzzer.FAMILIES), "keyed_and_plain": True},
        )  # fmt: skip
    return 1 if bugs else 0


if __name__ == "__main__":
    sys.exit(main())
