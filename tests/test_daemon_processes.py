"""Daemons as separate OS processes, driven only through the CLI: `run`,
then `publish`/`status` over each node's control socket; deliveries are read
from each node's stdout."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from vinifera.daemon.control import ControlError, request
from vinifera.schema import Schema
from vinifera.subscription import Event
from vinifera.swarm.backends import node_command
from vinifera.wire import parse_address

PERIOD = 0.25
SCHEMA_TOML = """
[attributes.temp]
type = "float"
min = -50
max = 50

[attributes.city]
type = "string"
"""
SUBSCRIPTIONS = [
    "temp in [0, 10]",
    "temp in [5, 20]",
    'city == "Oslo"',
    "temp in [-20, 3]",
    'temp in [0, 30] and city in ["A", "P"]',
    "temp in [8, 9]",
    None,
    "temp in [-50, 50]",
]


def cli() -> list[str]:
    return node_command()


class ProcessSwarm:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.schema_path = tmp / "schema.toml"
        self.schema_path.write_text(SCHEMA_TOML)
        self.schema = Schema.load(self.schema_path)
        self.procs: dict[int, subprocess.Popen] = {}
        self.address: dict[int, str] = {}

    def control(self, i: int) -> str:
        return str(self.tmp / f"n{i}.sock")

    def start(self, i: int, bootstrap: list[str]) -> None:
        args = [*cli(), "run", "--listen", "127.0.0.1:0", "--schema", str(self.schema_path),
                "--control", self.control(i), "--period", str(PERIOD), "--seed", str(i),
                "--log-file", str(self.tmp / f"n{i}.jsonl")]  # fmt: skip
        for b in bootstrap:
            args += ["--bootstrap", b]
        if SUBSCRIPTIONS[i] is not None:
            args += ["--subscribe", SUBSCRIPTIONS[i]]
        self.procs[i] = subprocess.Popen(
            args,
            stdout=open(self.tmp / f"n{i}.out", "w"),  # noqa: SIM115
            stderr=open(self.tmp / f"n{i}.err", "w"),  # noqa: SIM115
        )
        self.address[i] = wait_for(lambda: self.try_status(i), 30, f"node {i} up")["address"]

    def try_status(self, i: int) -> dict | None:
        if self.procs[i].poll() is not None:
            err = (self.tmp / f"n{i}.err").read_text()
            raise AssertionError(f"node {i} exited with {self.procs[i].returncode}: {err}")
        try:
            return request(self.control(i), {"op": "status"}, timeout=5)
        except ControlError:
            return None

    def alive(self) -> list[int]:
        return [i for i, p in self.procs.items() if p.poll() is None]

    def statuses(self) -> dict[int, dict]:
        return {i: request(self.control(i), {"op": "status"}) for i in self.alive()}

    def converged(self) -> bool:
        st = self.statuses()
        ring = sorted(st.values(), key=lambda s: s["id"])
        return all(s["installed"] for s in ring) and all(
            s["links"]["succ"] == ring[(k + 1) % len(ring)]["address"] for k, s in enumerate(ring)
        )

    def publish_cli(self, i: int, assignments: list[str]) -> int:
        out = subprocess.run(
            [*cli(), "publish", "--control", self.control(i), *assignments],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return int(out.stdout.strip())

    def deliveries(self, i: int) -> list[dict]:
        text = (self.tmp / f"n{i}.out").read_text()
        return [json.loads(line) for line in text.splitlines() if line.endswith("}")]

    def expected(self, values: dict) -> set[int]:
        event = Event.build(self.schema, values)
        out = set()
        for i in self.alive():
            expr = SUBSCRIPTIONS[i]
            if expr is not None:
                from vinifera.expr import parse_subscription

                if parse_subscription(expr, self.schema).matches(event.values):
                    out.add(i)
        return out

    def missing(self, sent: list[tuple[int, set[int]]]) -> list:
        got = {i: {d["eid"] for d in self.deliveries(i)} for i in self.procs}
        return [(eid, i) for eid, exp in sent for i in exp if eid not in got[i]]

    def stop_all(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def wait_for(probe, timeout: float, what: str):
    """Poll until `probe()` is truthy; return its value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(PERIOD / 2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


EVENTS = [
    ["temp=7", "city=Oslo"],
    ["temp=8.5", "city=Bergen"],
    ["temp=-10", "city=Oslo"],
    ["temp=15", "city=Alta"],
    ["temp=2", "city=Zurich"],
    ["temp=40", "city=Oslo"],
]


def to_values(assignments: list[str]) -> dict:
    out: dict = {}
    for a in assignments:
        k, v = a.split("=")
        out[k] = float(v) if k == "temp" else v
    return out


@pytest.fixture
def swarm(tmp_path):
    s = ProcessSwarm(tmp_path)
    try:
        s.start(0, [])
        for i in range(1, len(SUBSCRIPTIONS)):
            s.start(i, [s.address[random.Random(i).randrange(i)]])
        wait_for(s.converged, 60, "ring and installs")
        yield s
    finally:
        s.stop_all()


def test_eight_processes_deliver_through_the_cli(swarm):
    sent = []
    for k, assignments in enumerate(EVENTS):
        eid = swarm.publish_cli(k % len(SUBSCRIPTIONS), assignments)
        sent.append((eid, swarm.expected(to_values(assignments))))
    wait_for(lambda: not swarm.missing(sent), 20, "deliveries")
    assert sum(len(exp) for _, exp in sent) >= 15
    for i in swarm.procs:
        eids = [d["eid"] for d in swarm.deliveries(i)]
        assert len(eids) == len(set(eids)), f"node {i} got duplicates"
        assert set(eids) == {eid for eid, exp in sent if i in exp}, f"node {i}: false positives"
    status = swarm.statuses()[0]
    assert status["counters"]["datagrams_received"] > 0 and status["crt_rows"] is not None
    # SIGTERM: every node leaves gracefully and its log ends with `leave`
    swarm.stop_all()
    for i, p in swarm.procs.items():
        assert p.returncode == 0, (swarm.tmp / f"n{i}.err").read_text()
        records = [json.loads(x) for x in (swarm.tmp / f"n{i}.jsonl").read_text().splitlines()]
        assert records[0]["ev"] == "join" and records[-1]["ev"] == "leave"


def test_sigkill_a_node_and_the_rest_keep_delivering(swarm):
    victim = 3
    dead = swarm.address[victim]
    linked = [i for i, s in swarm.statuses().items() if dead in _links(s)]
    assert linked, "the victim had neighbours"
    os.kill(swarm.procs[victim].pid, signal.SIGKILL)
    swarm.procs[victim].wait()
    killed_at = time.monotonic()
    # its neighbours drop it (failure_timeout = 5 periods)
    wait_for(
        lambda: all(dead not in _links(s) for s in swarm.statuses().values()),
        40 * PERIOD,
        "links to the dead node to go",
    )
    dropped_after = time.monotonic() - killed_at
    # then probes until one reaches every surviving subscriber it matches
    rng = random.Random(4)
    while True:
        assignments = [f"temp={rng.uniform(-15, 15):.2f}", "city=Oslo"]
        eid = swarm.publish_cli(0, assignments)
        probe = [(eid, swarm.expected(to_values(assignments)))]
        try:
            wait_for(lambda probe=probe: not swarm.missing(probe), 4 * PERIOD, "probe")
            break
        except AssertionError:
            assert time.monotonic() - killed_at < 80 * PERIOD, "delivery never recovered"
    recovered_after = time.monotonic() - killed_at
    # from then on: hit ratio 1.0 over the survivors
    sent = []
    for k, assignments in enumerate(EVENTS):
        publisher = [i for i in swarm.alive()][k % len(swarm.alive())]
        sent.append(
            (swarm.publish_cli(publisher, assignments), swarm.expected(to_values(assignments)))
        )
    wait_for(lambda: not swarm.missing(sent), 20, "deliveries after the kill")
    print(f"links dropped after {dropped_after:.2f} s, delivery whole after {recovered_after:.2f} s"
          f" (period {PERIOD} s)")  # fmt: skip


def _links(status: dict) -> set[str]:
    links = status["links"]
    return {links["succ"], links["pred"], *links["friends"], *links["small_world"]}


def test_bad_cli_input_gets_a_clear_error(tmp_path):
    schema = tmp_path / "s.toml"
    schema.write_text(SCHEMA_TOML)
    base = [*cli(), "run", "--schema", str(schema)]
    for args, message in [
        (["--listen", "0.0.0.0:0"], "--advertise"),
        (["--listen", "localhost:7000"], "IP address"),
        (["--subscribe", "tmp in [0, 1]"], "unknown attribute"),
        (["--bootstrap", "1.2.3.4"], "HOST:PORT"),
    ]:
        out = subprocess.run([*base, *args], capture_output=True, text=True, timeout=30)
        assert out.returncode == 2 and message in out.stderr, out.stderr
    out = subprocess.run(
        [*cli(), "status", "--control", str(tmp_path / "nothing.sock")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 1 and "cannot reach the node" in out.stderr


def test_settings_come_from_a_config_file_and_the_environment(tmp_path):
    schema = tmp_path / "s.toml"
    schema.write_text(SCHEMA_TOML)
    sock = tmp_path / "c.sock"
    config = tmp_path / "node.toml"
    config.write_text(
        f'[node]\nschema = "{schema}"\nlisten = "127.0.0.1:0"\nsubscribe = "temp in [1, 2]"\n'
        f'period = 0.5\ncontrol = "{tmp_path / "ignored.sock"}"\n'
    )
    env = {**os.environ, "VINIFERA_CONTROL": str(sock)}  # the environment beats the file
    proc = subprocess.Popen([*cli(), "run", "--config", str(config), "--subscribe", "temp == 3"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        status = wait_for(lambda: sock.exists() and request(str(sock), {"op": "status"}), 30, "up")
        assert status["subscription"] == "temp == 3.0"  # the command line beats both
        assert status["period"] == 0.5
        assert parse_address(status["address"])[0] == "127.0.0.1"
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=15) == 0
    bad = tmp_path / "bad.toml"
    bad.write_text('colour = "red"\n')
    out = subprocess.run([*cli(), "run", "--config", str(bad)], capture_output=True, text=True,
                         timeout=30)  # fmt: skip
    assert out.returncode == 2 and "unknown setting(s) colour" in out.stderr
