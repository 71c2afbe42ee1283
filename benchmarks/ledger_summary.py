"""How long the ledger takes to count a trace replay's pairs (Ledger.summary,
the end of every simulation): a ledger fed as the simulator feeds it for a
Skype replay (one life per trace session, the reference workload's
subscriptions, 10 events per 240 s round, deadline 5 rounds, events counted
from 4 h), without the simulation itself.

    .venv/bin/python benchmarks/ledger_summary.py ../shared/traces/skype-superpeers.avt
    .venv/bin/python benchmarks/ledger_summary.py TRACE --hours 200 --against HEAD~1

--against REV times that commit's vinifera/ledger.py on the same ledger in
the same process, alternately, and requires the same summary. Deliveries
are left out (the count looks every expected pair up either way). Prints
CPU seconds; appends to benchmarks/results.jsonl unless --no-record.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from record import record  # noqa: E402

from vinifera.churn_traces.formats import parse_avt  # noqa: E402
from vinifera.ledger import Ledger  # noqa: E402
from vinifera.schema import Schema  # noqa: E402
from vinifera.workload import Workload  # noqa: E402

ROUND_SECONDS = 240.0
EVENTS_PER_ROUND = 10
DEADLINE_ROUNDS = 5.0
MEASURE_FROM_HOURS = 4.0


def records(trace_path: str, hours: float | None, seed: int) -> tuple[list[dict], float]:
    """The join, crash and publish records of a replay, in time order, and
    its length in rounds."""
    trace = parse_avt(Path(trace_path).read_text(encoding="utf-8"), trace_path)
    end = trace.end if hours is None else min(trace.end, hours * 3600)
    rng = random.Random(seed)
    workload = Workload("skewed", Schema.numeric(1), rng)
    out = []
    for node, sessions in sorted(trace.sessions.items()):
        sub = workload.subscription(rng).to_plain()
        for start, stop in sessions:
            if start >= end:
                break
            out.append({"t": start / ROUND_SECONDS, "node": node, "ev": "join", "sub": sub})
            if stop < end:
                out.append({"t": stop / ROUND_SECONDS, "node": node, "ev": "crash"})
    rounds = end / ROUND_SECONDS
    for eid in range(int(rounds * EVENTS_PER_ROUND)):
        t = rng.random() * rounds
        values = workload.event(rng).to_plain()
        out.append({"t": t, "node": "publisher", "ev": "publish", "eid": eid, "values": values})
    out.sort(key=lambda r: (r["t"], r["ev"] != "publish"))
    return out, rounds


def ledger_class_at(rev: str) -> type:
    """Ledger as vinifera/ledger.py was at `rev` (imported from a temp file)."""
    source = subprocess.run(
        ["git", "show", f"{rev}:vinifera/ledger.py"],
        capture_output=True, text=True, check=True, cwd=Path(__file__).parent,
    ).stdout  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ledger_at_rev.py"
        path.write_text(source, encoding="utf-8")
        spec = importlib.util.spec_from_file_location("ledger_at_rev", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # compiled now: the file may go
    return module.Ledger


def timed_summary(cls: type, recs: list[dict], rounds: float) -> tuple[float, dict]:
    ledger = cls(Schema.numeric(1), MEASURE_FROM_HOURS * 3600 / ROUND_SECONDS,
                 rounds - DEADLINE_ROUNDS, DEADLINE_ROUNDS)  # fmt: skip
    for rec in recs:
        ledger.feed(rec)
    t0 = time.process_time()
    summary = ledger.summary()
    return time.process_time() - t0, summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", help="an .avt trace (the Skype superpeer trace)")
    ap.add_argument("--hours", type=float, help="only the first HOURS of the trace")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--against", metavar="REV", help="also time this commit's ledger")
    ap.add_argument("--repeat", type=int, default=1, help="timings of each (best kept)")
    ap.add_argument("--no-record", action="store_true", help="print only")
    args = ap.parse_args()
    recs, rounds = records(args.trace, args.hours, args.seed)
    variants = {"this checkout": Ledger}
    if args.against:
        variants[args.against] = ledger_class_at(args.against)
    best: dict[str, float] = {}
    summaries = {}
    for _ in range(args.repeat):
        for name, cls in variants.items():
            cpu, summaries[name] = timed_summary(cls, recs, rounds)
            best[name] = min(cpu, best.get(name, cpu))
            print(f"{name}: {cpu:.2f} CPU-s ({summaries[name]['expected_pairs']:,} expected pairs)",
                  flush=True)  # fmt: skip
    same = len({repr(sorted(s.items())) for s in summaries.values()}) == 1
    if not same:
        sys.exit(f"the summaries differ: {summaries}")
    figures = {name: {"cpu_seconds": round(s, 3)} for name, s in best.items()}
    figures["expected_pairs"] = summaries["this checkout"]["expected_pairs"]
    figures["events"] = summaries["this checkout"]["events_published"]
    if args.against:
        figures["speedup"] = round(best[args.against] / best["this checkout"], 2)
        figures["same_summary"] = same
        print(f"speedup {figures['speedup']}x, same summary")
    if not args.no_record:
        record("ledger_summary", figures, {"trace": Path(args.trace).name, "hours": args.hours,
                                           "seed": args.seed, "against": args.against,
                                           "repeat": args.repeat})  # fmt: skip


if __name__ == "__main__":
    main()
