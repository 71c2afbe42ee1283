"""Run a swarm plan on a backend: start the nodes, wait until they have
formed the overlay, publish the workload's events, replay churn, and stop
everything cleanly at the end or on Ctrl-C. Every node's log, stdout and
stderr plus a manifest stay in the log folder."""

from __future__ import annotations

import datetime as dt
import json
import random
import sys
import time
from pathlib import Path

from vinifera.daemon.control import ControlError, request
from vinifera.jsonlines import JsonLinesWriter
from vinifera.protocol.records import record
from vinifera.sim.workload import Workload
from vinifera.swarm.plan import SwarmPlan

MANIFEST = "manifest.json"


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
        self.published = 0
        self.publish_errors = 0
        self.t0 = 0.0
        self.info = info or {}  # recorded in the manifest (trace, options)

    # ----------------------------------------------------------------- nodes

    def node_args(self, slot: int) -> list[str]:
        b = self.backend
        live = [self.backend.address(s) for s in sorted(self.up) if s != slot]
        args = ["run", "--listen", b.address(slot), "--schema", str(self.schema_path),
                "--control", b.control(slot), "--period", str(self.period),
                "--seed", str(self._node_seed(slot)),
                "--log-file", str(self.log_dir / f"node-{slot}.jsonl")]  # fmt: skip
        for addr in self.rng.sample(live, min(3, len(live))):
            args += ["--bootstrap", addr]
        sub = self.plan.slots[slot].subscription
        if sub is not None:
            args += ["--subscribe", sub]
        return args

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

    def stop_node(self, slot: int, crash: bool) -> None:
        self.up.discard(slot)
        self.backend.stop(slot, kill=crash)
        if crash:  # a killed node cannot log its end: the runner does (docs/logs.md)
            node = self.backend.address(slot)
            with JsonLinesWriter(self.log_dir / f"node-{slot}.jsonl", append=True) as w:
                w.write(record(time.time(), node, "crash"))

    def status(self, slot: int) -> dict | None:
        try:
            return request(self.backend.control(slot), {"op": "status"}, timeout=5)
        except ControlError:
            return None

    def wait_ready(self, slots: list[int], timeout: float) -> bool:
        """Until every given node answers and the ring over them is right."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st = [self.status(s) for s in slots]
            if all(st):
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
        started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        interrupted = False
        settled = None
        try:
            self.say(f"setting up {len(self.plan.slots)} slots on {self.backend.name}")
            self.backend.prepare(len(self.plan.slots))
            for slot in self.plan.initially_up:
                self.start_node(slot)
            self.say(f"started {len(self.up)} nodes; waiting for the overlay to form")
            settled = self.wait_ready(sorted(self.up), self.settle_timeout)
            self.say("overlay formed" if settled else "overlay not settled; running anyway")
            self._loop(duration, cut)
        except KeyboardInterrupt:
            interrupted = True
            self.say("interrupted: stopping every node")
        finally:
            self.backend.stop_many(sorted(self.up))
            self.up.clear()
            self.backend.teardown()
            self._write_manifest(started, duration, settled, interrupted)
        return self.summary(interrupted)

    def _loop(self, duration: float, cut: tuple[int, float] | None) -> None:
        changes = list(self.plan.changes)
        self.t0 = time.monotonic()
        next_event = 0.0
        gap = 1.0 / self.events_per_second if self.events_per_second > 0 else None
        last_report = 0.0
        while True:
            t = time.monotonic() - self.t0
            if t >= duration:
                return
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
            "interrupted": interrupted,
            "log_dir": str(self.log_dir),
        }

    def _write_manifest(self, started: str, duration: float, settled, interrupted: bool) -> None:
        manifest = {
            "kind": "swarm",
            "started": started,
            "ended": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "duration_seconds": duration,
            "settled": settled,
            "interrupted": interrupted,
            "backend": self.backend.name,
            "nodes": len(self.plan.slots),
            "seed": self.plan.seed,
            "workload": self.plan.workload,
            "period": self.period,
            "events_per_second": self.events_per_second,
            "events_published": self.published,
            "churn_changes": len(self.plan.changes),
            "schema": self.plan.schema.to_dict(),
            "addresses": {s.index: self.backend.address(s.index) for s in self.plan.slots},
            "command": sys.argv,
            **self.info,
        }
        (self.log_dir / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
