"""Run a swarm plan on a backend: start the nodes, wait until they have
formed the overlay, publish the workload's events, replay churn, notice
nodes that die under it, and stop everything cleanly at the end, on Ctrl-C
or on `vinifera swarm down`. Every node's log, stdout and stderr plus the
manifest stay in the log folder; the manifest is kept current while the
swarm runs (state, node table with PIDs and control sockets) so that
`vinifera swarm status` and `down` can find the nodes."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import sys
import time
from pathlib import Path

from vinifera.daemon.control import ControlError, request
from vinifera.protocol.records import record
from vinifera.swarm.plan import SwarmPlan
from vinifera.swarm.window import DEADLINE_PERIODS
from vinifera.workload import Workload

MANIFEST = "manifest.json"
# Unix socket paths are at most 107 bytes; leave room for "/n12345.sock".
MAX_SOCKET_DIR = 90


def read_manifest(log_dir: Path) -> dict:
    return json.loads((log_dir / MANIFEST).read_text(encoding="utf-8"))


def write_json_atomically(path: Path, obj: dict) -> None:
    """Readers (status, down, analyze) never see a half-written file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def append_crash(log: Path, node: str, t: float) -> None:
    """A killed node cannot log its end: the runner does (docs/logs.md). A
    node killed while writing may have left half a line: end it first, so
    the crash record is a line of its own."""
    with open(log, "a+b") as fh:
        fh.seek(0, os.SEEK_END)
        torn = False
        if fh.tell():
            fh.seek(-1, os.SEEK_END)
            torn = fh.read(1) != b"\n"
        line = json.dumps(record(t, node, "crash"), separators=(",", ":"))
        fh.write((b"\n" if torn else b"") + line.encode() + b"\n")


class SwarmRunner:
    def __init__(
        self,
        plan: SwarmPlan,
        backend,
        log_dir: Path,
        period: float = 0.5,
        events_per_second: float = 2.0,
        settle_timeout: float = 120.0,
        log=None,
        info: dict | None = None,
    ) -> None:
        self.plan = plan
        self.backend = backend
        self.log_dir = log_dir
        self.period = period
        self.events_per_second = events_per_second
        self.settle_timeout = settle_timeout
        self.say = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.rng = random.Random(plan.seed + 2)
        self.workload = Workload(plan.workload, plan.schema, random.Random(plan.seed + 1))
        self.up: set[int] = set()
        self.lives: dict[int, int] = {}
        self.deaths: list[dict] = []  # nodes that died under the runner
        self.published = 0
        self.publish_errors = 0
        self.t0 = 0.0
        self.info = info or {}  # recorded in the manifest (trace, options)
        self.manifest: dict = {}

    # ----------------------------------------------------------------- nodes

    def node_args(self, slot: int) -> list[str]:
        b = self.backend
        live = [self.backend.address(s) for s in sorted(self.up) if s != slot]
        args = ["run", "--listen", b.address(slot), "--schema", str(self.schema_path),
                "--control", b.control(slot), "--period", str(self.period),
                "--seed", str(self._node_seed(slot)),
                "--log-file", str(self._log(slot)),
                # every node of a local swarm is a host of its own, one /24 or not
                "--link-ipv4-prefix", "32"]  # fmt: skip
        for addr in self.rng.sample(live, min(3, len(live))):
            args += ["--bootstrap", addr]
        sub = self.plan.slots[slot].subscription
        if sub is not None:
            args += ["--subscribe", sub]
        return args

    def _log(self, slot: int) -> Path:
        return self.log_dir / f"node-{slot}.jsonl"

    def _node_seed(self, slot: int) -> int:
        """A new seed for every life of a slot: a restarted node drawing the
        same random numbers would reuse its event ids."""
        life = self.lives[slot] = self.lives.get(slot, 0) + 1
        return (self.plan.seed * 100_003 + slot) * 1_000 + life

    def start_node(self, slot: int) -> None:
        self.backend.start(
            slot,
            self.node_args(slot),
            self.log_dir / f"node-{slot}.out",
            self.log_dir / f"node-{slot}.err",
        )
        self.up.add(slot)
        self._node_entry(slot).update(up=True, pid=self.backend.pid(slot), lives=self.lives[slot])
        self._save()

    def stop_node(self, slot: int, crash: bool) -> None:
        self.up.discard(slot)
        self.backend.stop(slot, kill=crash)
        if crash:
            append_crash(self._log(slot), self.backend.address(slot), time.time())
        self._node_entry(slot).update(up=False)
        self._save()

    def reap(self) -> list[int]:
        """Nodes that died under the runner (killed from outside, crashed):
        log their crash, stop publishing from them. Returns their slots."""
        dead = [s for s in sorted(self.up) if not self.backend.running(s)]
        for slot in dead:
            now = time.time()
            code = self.backend.exit_code(slot)
            self.up.discard(slot)
            self.backend.forget(slot)
            append_crash(self._log(slot), self.backend.address(slot), now)
            entry = self._node_entry(slot)
            entry.update(up=False)
            self.deaths.append({"slot": slot, "pid": entry.get("pid"), "exit": code, "t": now})
            self.say(f"node {slot} ({self.backend.address(slot)}, pid {entry.get('pid')}) died "
                     f"(exit {code}); logged its crash")  # fmt: skip
        if dead:
            self._save()
        return dead

    def status(self, slot: int) -> dict | None:
        try:
            return request(self.backend.control(slot), {"op": "status"}, timeout=5)
        except ControlError:
            return None

    def wait_ready(self, timeout: float) -> bool:
        """Until every live node answers and the ring over them is right."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.reap()
            if not self.up:
                self.say(f"every node died: see the node-N.err files in {self.log_dir}")
                return False
            st = [self.status(s) for s in sorted(self.up)]
            if st and all(st):
                ring = sorted(st, key=lambda s: s["id"])
                n = len(ring)
                if all(s["installed"] for s in ring) and all(
                    s["links"]["succ"] == ring[(i + 1) % n]["address"] for i, s in enumerate(ring)
                ):
                    return True
            time.sleep(self.period)
        return False

    # ----------------------------------------------------------------- run

    def run(self, duration: float, cut: tuple[int, float] | None = None) -> dict:
        """Run for `duration` seconds after the swarm has settled. `cut`:
        (slot, seconds) cuts that host off at that time (netns only)."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.schema_path = self.log_dir / "schema.toml"
        self.schema_path.write_text(self.plan.schema.to_toml())
        self._begin_manifest(duration)
        interrupted = False
        settled = None
        try:
            self.say(f"setting up {len(self.plan.slots)} slots on {self.backend.name}")
            self.backend.prepare(len(self.plan.slots))
            self.manifest["origin"] = time.time()
            for slot in self.plan.initially_up:
                self.start_node(slot)
            self.say(f"started {len(self.up)} nodes; waiting for the overlay to form "
                     f"(`vinifera swarm status {self.log_dir}` shows them)")  # fmt: skip
            settled = self.wait_ready(self.settle_timeout)
            self.say("overlay formed" if settled else "overlay not settled; running anyway")
            self.manifest.update(settled=settled, state="running", measure_from=time.time())
            self._save()
            if self.up or self.plan.changes:
                self._loop(duration, cut)
        except KeyboardInterrupt:
            interrupted = True
            self.say("interrupted: stopping every node")
        finally:
            if self.manifest.get("measure_from") is not None:
                self.manifest["measure_until"] = time.time()
            self.manifest["state"] = "stopping"
            self._save()
            self.reap()
            self.backend.stop_many(sorted(self.up))
            for slot in self.up:
                self._node_entry(slot)["up"] = False
            self.up.clear()
            self.backend.teardown()
            self.manifest.update(
                state="ended",
                ended=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                interrupted=interrupted,
                events_published=self.published,
                deaths=self.deaths,
            )
            self._save()
        return self.summary(interrupted)

    def _loop(self, duration: float, cut: tuple[int, float] | None) -> None:
        changes = list(self.plan.changes)
        self.t0 = time.monotonic()
        next_event = 0.0
        gap = 1.0 / self.events_per_second if self.events_per_second > 0 else None
        last_report = last_saved = 0.0
        while True:
            t = time.monotonic() - self.t0
            if t >= duration:
                return
            self.reap()
            while changes and changes[0].at <= t:
                ch = changes.pop(0)
                if ch.kind == "up" and ch.slot not in self.up:
                    self.start_node(ch.slot)
                elif ch.kind == "down" and ch.slot in self.up:
                    self.stop_node(ch.slot, crash=True)  # a probe saw it gone
            if cut is not None and t >= cut[1]:
                self.say(f"cutting off node {cut[0]}")
                self.backend.cut(cut[0])
                cut = None
            if gap is not None and t >= next_event and self.up:
                self._publish()
                next_event += gap
            if t - last_saved >= 1:  # `swarm status` shows the count
                last_saved = t
                self._save()
            if t - last_report >= 10:
                last_report = t
                self.say(f"{t:5.0f}/{duration:.0f} s: {len(self.up)} nodes up, "
                         f"{self.published} events published")  # fmt: skip
            time.sleep(0.02)

    def _publish(self) -> None:
        slot = self.rng.choice(sorted(self.up))
        values = self.workload.event_values(self.rng)
        try:
            request(self.backend.control(slot), {"op": "publish", "values": values}, timeout=5)
            self.published += 1
        except ControlError:
            self.publish_errors += 1  # the node is starting or going; the next one will do

    # ----------------------------------------------------------------- results

    def summary(self, interrupted: bool) -> dict:
        return {
            "nodes": len(self.plan.slots),
            "backend": self.backend.name,
            "events_published": self.published,
            "publish_errors": self.publish_errors,
            "deaths": len(self.deaths),
            "interrupted": interrupted,
            "log_dir": str(self.log_dir),
        }

    def _node_entry(self, slot: int) -> dict:
        return self.manifest["slots"][str(slot)]

    def _begin_manifest(self, duration: float) -> None:
        b = self.backend
        self.manifest = {
            "kind": "swarm",
            "state": "starting",
            "runner_pid": os.getpid(),
            "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "ended": None,
            "duration_seconds": duration,
            "settled": None,
            "interrupted": False,
            "backend": b.name,
            "nodes": len(self.plan.slots),
            # slot -> where its node is and whether it is up (swarm status/down read this)
            "slots": {
                str(s.index): {
                    "address": b.address(s.index),
                    "control": b.control(s.index),
                    "log": str(self._log(s.index)),
                    "pid": None,
                    "up": False,
                    "lives": 0,
                }  # fmt: skip
                for s in self.plan.slots
            },
            "seed": self.plan.seed,
            "workload": self.plan.workload,
            "period": self.period,
            "deadline_periods": DEADLINE_PERIODS,
            # the measurement window (vinifera/swarm/window.py), Unix seconds
            "origin": None,
            "measure_from": None,
            "measure_until": None,
            "events_per_second": self.events_per_second,
            "events_published": 0,
            "churn_changes": len(self.plan.changes),
            "schema": self.plan.schema.to_dict(),
            "addresses": {s.index: b.address(s.index) for s in self.plan.slots},
            "command": sys.argv,
            **self.info,
        }
        self._save()

    def _save(self) -> None:
        self.manifest["events_published"] = self.published
        write_json_atomically(self.log_dir / MANIFEST, self.manifest)
