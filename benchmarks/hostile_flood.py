"""Many hosts, each under its budget, against honest peers (issue 75 item 1).

A real daemon process; HOSTS attacker sockets, one per loopback address,
each proven (it answers the node's Challenge, as a node does) and then
sending RATE 64-entry Shuffles a second, the costliest message there is;
two honest sockets send a Ping and an event (an EventPush its subscription
matches) every 100 ms each. Reported: the share of honest pings answered
and honest events delivered, the node's CPU, and what the node dropped.

`--ref COMMIT` runs the daemon of that commit side by side (built from a git
worktree into a scratch directory); both run pure Python (VINIFERA_PURE=1)
so the comparison is like for like.

    .venv/bin/python benchmarks/hostile_flood.py --ref 4444b56
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests"))
from record import record  # noqa: E402
from wirepeer import prove  # noqa: E402

from vinifera.daemon.control import request  # noqa: E402
from vinifera.protocol import messages as m  # noqa: E402
from vinifera.protocol.profile import Profile  # noqa: E402
from vinifera.schema import Schema  # noqa: E402
from vinifera.subscription import Event  # noqa: E402
from vinifera.wire import Decoder, encode, format_address  # noqa: E402

SCHEMA_TOML = '[attributes.a0]\ntype = "float"\nmin = 0.0\nmax = 1000.0\n'
NODE = "from vinifera.cli.node import main; main()"


def build_ref(commit: str, scratch: Path) -> Path:
    """The package of `commit`, installed (pure Python) into scratch/pkg."""
    tree = scratch / "tree"
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), commit], cwd=ROOT,
                   check=True, capture_output=True)  # fmt: skip
    target = scratch / "pkg"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(tree)],
                   check=True, capture_output=True)  # fmt: skip
    return target


def node_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(name: str, pythonpath: str | None, hosts: int, rate: float, seconds: float,
        scratch: Path) -> dict:  # fmt: skip
    schema = scratch / f"{name}.toml"
    schema.write_text(SCHEMA_TOML)
    ctl = str(scratch / f"{name}.sock")
    env = {**os.environ, "VINIFERA_PURE": "1"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    proc = subprocess.Popen(
        [sys.executable, "-c", NODE, "run", "--schema", str(schema), "--listen", "127.0.0.1:0",
         "--subscribe", "a0 in [0, 1000]", "--control", ctl, "--no-deliveries",
         "--log-level", "error"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=scratch,
    )  # fmt: skip
    with contextlib.ExitStack() as stack:
        stack.callback(proc.wait, 15)
        stack.callback(proc.terminate)
        for _ in range(300):
            with contextlib.suppress(Exception):
                status = request(ctl, {"op": "status"})
                break
            time.sleep(0.1)
        else:
            raise SystemExit(f"{name}: the node did not come up")
        host, port = status["address"].rsplit(":", 1)
        target = (host, int(port))

        def udp(ip: str) -> socket.socket:
            s = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
            s.bind((ip, 0))
            return s

        rng = random.Random(1)
        attackers = []
        for i in range(hosts):
            s = udp(f"127.0.1.{i + 1}")
            me = Profile(format_address(*s.getsockname()), rng.getrandbits(64), None)
            fakes = tuple(
                Profile(f"127.0.2.{j % 250 + 1}:{10_000 + j}", rng.getrandbits(64), None)
                for j in range(64)
            )
            data = encode(m.Shuffle(me, fakes, (0.0,) * 64), header=prove(s, target))
            s.setblocking(False)
            attackers.append((s, data))
        schema_obj = Schema.load(schema)
        honest = []
        for ip in ("127.0.0.3", "127.0.0.4"):
            s = udp(ip)
            me = Profile(format_address(*s.getsockname()), rng.getrandbits(64), None)
            honest.append((s, me, prove(s, target)))
        cpu0 = node_cpu(proc.pid)
        started = time.monotonic()
        pings = events = 0
        eid = 1 << 40
        next_honest = started
        per_tick = rate / 100
        owed = 0.0
        tick = started
        while (now := time.monotonic()) < started + seconds:
            owed += per_tick
            while owed >= 1:
                owed -= 1
                for s, data in attackers:
                    with contextlib.suppress(BlockingIOError):
                        s.sendto(data, target)
            if now >= next_honest:  # right behind a burst of the flood
                next_honest += 0.1
                for s, me, header in honest:
                    s.sendto(encode(m.Ping(me), header=header), target)
                    eid += 1
                    ev = Event.build(schema_obj, {"a0": 500.0})
                    s.sendto(encode(m.EventPush(me, eid, ev, 1), header=header), target)
                    pings += 1
                    events += 1
            tick += 0.01
            time.sleep(max(0.0, tick - time.monotonic()))
        time.sleep(1.0)  # what is queued is handled
        cpu = node_cpu(proc.pid) - cpu0
        decoder = Decoder(schema_obj)
        pongs = 0
        for s, _, _ in honest:
            s.setblocking(False)
            while True:
                try:
                    pongs += type(decoder.decode_untrusted(s.recvfrom(70_000)[0])) is m.Pong
                except BlockingIOError:
                    break
        status = request(ctl, {"op": "status"})
    c = status["counters"]
    return {
        "honest_pings_answered": round(pongs / pings, 4),
        "honest_events_delivered": round(c.get("delivered", 0) / events, 4),
        "pings": pings,
        "events": events,
        "node_cpu_share": round(cpu / (seconds + 1.0), 3),
        "attack_datagrams": int(hosts * rate * seconds),
        "rate_limited": c.get("rate_limited", 0),
        "queue_full": c.get("queue_full", 0),
        "messages_received": c.get("messages_received", 0),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=40)
    ap.add_argument("--rate", type=float, default=200.0, help="Shuffles per second per host")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--ref", help="also run the daemon of this commit")
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        runs: list[tuple[str, str | None]] = []
        if args.ref:
            runs.append((f"ref {args.ref}", str(build_ref(args.ref, scratch))))
        runs.append(("now", None))
        try:
            for name, path in runs:
                f = figures[name] = run(name.replace(" ", "_"), path, args.hosts, args.rate,
                                        args.seconds, scratch)  # fmt: skip
                print(f"{name:>12}: " + json.dumps(f), flush=True)
        finally:
            if args.ref:
                subprocess.run(["git", "worktree", "remove", "--force", str(scratch / "tree")],
                               cwd=ROOT, capture_output=True)  # fmt: skip
    if not args.no_record:
        params = {"hosts": args.hosts, "rate": args.rate, "seconds": args.seconds,
                  "load": os.getloadavg()[0]}  # fmt: skip
        record("hostile_flood", figures, params)


if __name__ == "__main__":
    main()
