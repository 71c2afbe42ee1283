"""A swarm's folder analysed as `vinifera swarm up` measured it: the same
window (from the manifest), the same deadline, relative times, one window
per gossip period, and the same rule for nodes whose log stops without a
leave (docs/metrics.md). The swarm's own metrics (vinifera/swarm/results.py,
the reference Ledger) and Spark's must agree on every figure."""

from __future__ import annotations

import json
import random

import pytest

from vinifera.swarm.results import swarm_metrics
from vinifera.swarm.runner import append_crash

pytest.importorskip("pyspark")

ORIGIN = 1_795_512_345.25  # Unix seconds: the swarm's first node started here
PERIOD = 0.5
SCHEMA = {"attributes": {"a0": {"type": "float", "min": 0.0, "max": 1000.0}}}


def addr(i: int) -> str:
    return f"127.1.0.{i + 1}:7000"


def build_swarm(folder, seed: int = 5) -> dict:
    """Ten nodes over 40 s: n7 dies silently at 20 s, n8 is restarted at 25 s
    without a record of its end, n9 is killed by the runner at 30 s (its
    last line torn), the rest leave at the end. Returns what was built."""
    rng = random.Random(seed)
    subs = {}
    for i in range(10):
        lo = rng.uniform(0, 900)
        subs[i] = (lo, min(1000.0, lo + rng.uniform(50, 400)))
    logs: dict[int, list[dict]] = {i: [] for i in range(10)}

    def rec(i, t, ev, **kw):
        logs[i].append({"v": 1, "t": ORIGIN + t, "node": addr(i), "ev": ev, **kw})

    alive = {i: True for i in range(10)}
    for i in range(10):
        rec(i, 0.1 * i, "join", id=f"{i:016x}", sub=[["a0", *subs[i]]])
    eid = 1000
    t = 5.0
    while t < 44.0:
        if 20.0 <= t < 20.3:
            alive[7] = False  # silent: nothing more in its log
        if 25.0 <= t < 25.3:
            rec(8, t, "join", id="00000000000000aa", sub=[["a0", *subs[8]]])
        if 30.0 <= t < 30.3:
            alive[9] = False
        live = [i for i in range(10) if alive[i]]
        pub = rng.choice(live)
        value = rng.uniform(0, 1000)
        eid += 1
        rec(pub, t, "publish", eid=eid, values=[["a0", value]])
        for i in live:
            wants = subs[i][0] <= value <= subs[i][1]
            if i == pub:
                if wants:
                    rec(i, t, "deliver", eid=eid, hops=0)
                continue
            if not wants and rng.random() < 0.7:
                continue
            hops = rng.randint(1, 5)
            at = t + hops * 0.05 + (3.0 if rng.random() < 0.05 else 0.0)  # a few late
            rec(i, at, "recv", eid=eid, attr="a0", hops=hops, match=wants,
                fwd=rng.randint(0, 2), dup=False, rv=False)  # fmt: skip
            if wants and rng.random() < 0.95:
                rec(i, at, "deliver", eid=eid, hops=hops)
        t += 0.3
    for i in range(10):
        if alive[i]:
            rec(i, 45.0 + 0.01 * i, "leave")
    folder.mkdir(parents=True)
    for i, recs in logs.items():
        lines = "".join(json.dumps(r) + "\n" for r in sorted(recs, key=lambda r: r["t"]))
        if i == 2:
            # a second delivery written later but stamped earlier (a clock
            # stepped back): the first delivery is the earlier one, by time
            d = next(r for r in recs if r["ev"] == "deliver" and r["hops"] > 0)
            lines += json.dumps({**d, "t": d["t"] - 0.01, "hops": 7}) + "\n"
        if i == 9:
            lines += '{"v":1,"t":1795512375.3,"node":"127.1.0.10:7000","ev":"re'  # torn
        (folder / f"node-{i}.jsonl").write_text(lines)
    append_crash(folder / "node-9.jsonl", addr(9), ORIGIN + 30.3)
    manifest = {
        "kind": "swarm",
        "state": "ended",
        "nodes": 10,
        "period": PERIOD,
        "deadline_periods": 5.0,
        "origin": ORIGIN,
        "measure_from": ORIGIN + 5.0,
        "measure_until": ORIGIN + 45.0,
        "schema": SCHEMA,
        "slots": {str(i): {"address": addr(i)} for i in range(10)},
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return manifest


@pytest.fixture(scope="module")
def swarm_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("swarm") / "logs"
    build_swarm(d)
    return d


@pytest.fixture(scope="module")
def analyzed(spark, swarm_dir, tmp_path_factory):
    from vinifera.analysis import inputs, job

    spec = inputs.resolve(str(swarm_dir))
    out = tmp_path_factory.mktemp("out")
    _, results = job.analyze(spark, [spec], out)
    return spec, results[0]


def test_the_window_deadline_and_schema_come_from_the_manifest(analyzed):
    spec, result = analyzed
    assert spec.origin == {"schema": "manifest", "deadline": "manifest", "window": "manifest",
                           "window_start": "manifest", "window_end": "manifest"}  # fmt: skip
    s = result.summary
    assert (s["window_start"], s["window_end"], s["deadline"], s["window"]) == (5.0, 42.5, 2.5, 0.5)
    assert s["time_origin"] == ORIGIN
    # one window per gossip period, in seconds after the swarm's start
    assert result.count == 75
    assert [w["start"] for w in result.windows[:3]] == [5.0, 5.5, 6.0]
    assert result.windows[-1]["end"] == 42.5
    assert result.inputs["logs_span"][0] == 0.0 and result.inputs["logs_span"][1] < 50


def test_alive_counts_follow_the_nodes(analyzed):
    _, result = analyzed
    alive = {w["start"]: w["alive_nodes"] for w in result.windows}
    assert alive[5.0] == 10
    assert alive[22.0] == 9  # n7 went silent at 20: an inferred crash
    assert alive[27.0] == 9  # n8 restarted at 25 (its earlier life ended at its last record)
    assert alive[35.0] == 8  # n9 crashed at 30.3 (logged by the runner)


def test_spark_and_the_swarm_ledger_agree_on_every_metric(analyzed, swarm_dir):
    from vinifera.analysis.metrics import LEDGER_KEYS

    _, result = analyzed
    ledger = swarm_metrics(swarm_dir)
    assert ledger["inferred_crashes"] == 2  # n7 at its end, n8's first life
    assert ledger["malformed_lines"] == 1 == result.summary["malformed_lines"]  # the torn line
    assert {k: result.summary[k] for k in LEDGER_KEYS} == {k: ledger[k] for k in LEDGER_KEYS}
    for k in ("window_start", "window_end", "deadline"):
        assert result.summary[k] == ledger[k], k
    assert ledger["expected_pairs"] > 100 and 0.5 < ledger["hit_ratio"] < 1.0
    assert ledger["duplicates"] == 1  # node 2's late line


def test_without_the_rule_the_silent_node_would_count_as_missing(swarm_dir, tmp_path):
    """What the rule changes: a node dead since 20 s is no longer expected to
    receive what was published after."""
    import shutil

    from vinifera.ledger import Ledger
    from vinifera.swarm.results import read_records

    copy = tmp_path / "logs"
    shutil.copytree(swarm_dir, copy)
    records, _ = read_records(copy)
    ledger = Ledger(None, ORIGIN + 5.0, ORIGIN + 42.5, 2.5)
    ledger.schema = __import__("vinifera.schema", fromlist=["Schema"]).Schema.from_dict(SCHEMA)
    for r in sorted(records, key=lambda r: r["ev"] != "publish"):
        ledger.feed(r)
    naive = ledger.summary()
    ruled = swarm_metrics(copy)
    assert naive["expected_pairs"] > ruled["expected_pairs"]
    assert naive["hit_ratio"] < ruled["hit_ratio"]


def _wait(predicate, timeout: float, what: str, proc=None):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"swarm up ended ({proc.returncode}) before {what}")
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
def test_a_real_swarm_with_two_nodes_killed_from_outside(spark, tmp_path):
    """10 daemons as processes; two SIGKILLed by PID (not by the runner).
    The runner notices, logs their crashes and stops publishing through
    them; the printed result, results.json and `vinifera analyze` agree."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from click.testing import CliRunner

    from vinifera.cli.main import main

    logs = tmp_path / "logs"
    cli = Path(sys.executable).with_name("vinifera")
    proc = subprocess.Popen(
        [str(cli), "swarm", "up", "--nodes", "10", "--duration", "20", "--period", "0.25",
         "--events-per-second", "5", "--log-dir", str(logs), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:

        def manifest():
            try:
                return json.loads((logs / "manifest.json").read_text())
            except (OSError, ValueError):
                return None

        _wait(lambda: (m := manifest()) and m["state"] == "running"
              and m["events_published"] >= 15, 180, "the swarm to publish", proc)  # fmt: skip
        m = manifest()
        status = subprocess.run([str(cli), "swarm", "status", str(logs), "--json"],
                                capture_output=True, text=True, timeout=60)  # fmt: skip
        live = json.loads(status.stdout)
        assert live["runner"] and live["state"] == "running"
        assert sum(n["status"] is not None for n in live["nodes"]) == 10
        victims = {slot: m["slots"][slot]["pid"] for slot in ("3", "6")}
        for pid in victims.values():
            os.kill(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    printed = json.loads(out)
    saved = json.loads((logs / "results.json").read_text())
    assert saved == printed
    assert printed["deaths"] == 2 and "died (exit -9); logged its crash" in err
    m = json.loads((logs / "manifest.json").read_text())
    assert m["state"] == "ended" and {d["slot"] for d in m["deaths"]} == {3, 6}
    for slot in ("3", "6"):
        lines = (logs / f"node-{slot}.jsonl").read_text().splitlines()
        assert json.loads(lines[-1])["ev"] == "crash"
    # no publish went through a dead node after its death
    for slot, death in ((d["slot"], d["t"]) for d in m["deaths"]):
        pubs = [json.loads(x) for x in (logs / f"node-{slot}.jsonl").read_text().splitlines()
                if '"publish"' in x]  # fmt: skip
        assert all(p["t"] <= death for p in pubs)
    # nothing left behind: the control sockets' folder is gone
    assert all(not Path(e["control"]).parent.exists() for e in m["slots"].values())

    res = CliRunner().invoke(main, ["analyze", str(logs), "--out", str(tmp_path / "a"), "--json"])
    assert res.exit_code == 0, res.output
    spark_says = json.loads(res.stdout.strip().splitlines()[-1])["runs"]["logs"]
    met = printed["metrics"]
    for key in ("events_published", "expected_pairs", "delivered_pairs", "hit_ratio",
                "false_positives", "duplicates", "event_messages", "path_length"):  # fmt: skip
        assert spark_says[key] == met[key], key
    assert met["expected_pairs"] > 50 and met["false_positives"] == 0


@pytest.mark.slow
def test_spark_noise_stays_off_the_terminal_unless_verbose(swarm_dir, tmp_path):
    """A fresh `vinifera analyze` process: the JVM's warnings and log4j lines
    go to OUT/spark.log; --verbose shows them."""
    import subprocess
    import sys
    from pathlib import Path

    cli = Path(sys.executable).with_name("vinifera")
    quiet = subprocess.run([str(cli), "analyze", str(swarm_dir), "--out", str(tmp_path / "q"),
                            "--master", "local[1]"], capture_output=True, text=True,
                           timeout=600)  # fmt: skip
    assert quiet.returncode == 0, quiet.stderr
    noise = ("WARNING: Using incubator", "setLogLevel", "log4j", "WARN ")
    assert not any(n in quiet.stderr for n in noise), quiet.stderr
    assert "incubator" in (tmp_path / "q" / "spark.log").read_text()
    loud = subprocess.run([str(cli), "analyze", str(swarm_dir), "--out", str(tmp_path / "v"),
                           "--master", "local[1]", "--verbose"], capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert loud.returncode == 0 and "incubator" in loud.stderr
    assert not (tmp_path / "v" / "spark.log").exists()
