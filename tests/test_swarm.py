"""`vinifera swarm up`: real daemons as processes (and, with root, as hosts
in network namespaces), judged by their own logs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from skype_trace import SKYPE_PATH as SKYPE

from vinifera.churn_traces import Trace, format_avt
from vinifera.swarm.plan import make_plan
from vinifera.swarm.results import read_records, swarm_metrics


def vinifera_cli() -> list[str]:
    script = Path(sys.executable).with_name("vinifera")
    return [str(script)] if script.exists() else [sys.executable, "-m", "vinifera.cli.main"]


def swarm_up(*args: str, timeout: float = 600) -> dict:
    out = subprocess.run(
        [*vinifera_cli(), "swarm", "up", "--json", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_plan_maps_a_trace_onto_slots_and_compresses_it():
    trace = Trace({"a": [(0, 100), (200, 300)], "b": [(50, 400)], "c": [(0, 10)]}, 400)
    plan = make_plan(2, seed=1, trace=trace, speedup=10)
    assert len(plan.slots) == 2 and all(s.subscription for s in plan.slots)
    assert plan.initially_up == (0, 1)  # a and c start at 0
    # c leaves at 1 s; b takes its slot at 5 s; a leaves at 10 s and returns at 20 s
    assert [(c.at, c.kind) for c in plan.changes][:3] == [
        (1.0, "down"),
        (5.0, "up"),
        (10.0, "down"),
    ]
    assert make_plan(3, seed=1).changes == ()


def test_a_process_swarm_with_churn_delivers_and_leaves_complete_logs(tmp_path):
    # three nodes for the whole run, one that crashes after 12 s and comes back at 20 s
    trace = Trace({f"n{i}": [(0, 10_000)] for i in range(3)} | {"x": [(0, 12), (20, 10_000)]},
                  10_000)  # fmt: skip
    avt = tmp_path / "t.avt"
    avt.write_text(format_avt(trace))
    logs = tmp_path / "logs"
    summary = swarm_up("--nodes", "4", "--trace", str(avt), "--duration", "30",
                       "--events-per-second", "4", "--period", "0.25",
                       "--log-dir", str(logs))  # fmt: skip
    met = summary["metrics"]
    assert summary["events_published"] > 60
    assert met["expected_pairs"] > 10 and met["hit_ratio"] >= 0.95, met
    assert met["false_positives"] == 0 and met["duplicates"] == 0
    manifest = json.loads((logs / "manifest.json").read_text())
    assert manifest["nodes"] == 4 and manifest["trace"]["path"] == str(avt)
    records, bad = read_records(logs)
    assert bad == 0
    kinds = {}
    for r in records:
        kinds.setdefault(r["node"], []).append(r["ev"])
    churned = manifest["addresses"]["3"]
    lifecycle = [k for k in kinds[churned] if k in ("join", "crash", "leave")]
    assert lifecycle == ["join", "crash", "join", "leave"]
    assert all(k[0] == "join" and k[-1] == "leave" for n, k in kinds.items() if n != churned)
    eids = [r["eid"] for r in records if r["ev"] == "publish"]
    assert len(eids) == len(set(eids)), "a restarted node reused event ids"


def test_swarm_metrics_count_a_delivery_stamped_before_its_publish(tmp_path):
    # A node started after the wall clock was stepped stamps its records
    # 60 ms ahead of the others: its publish sorts after the delivery it caused.
    schema = {"attributes": {"a0": {"type": "float", "min": 0.0, "max": 1000.0}}}
    manifest = {"kind": "swarm", "schema": schema, "period": 0.25}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    sub = [["a0", 0.0, 1000.0]]
    logs = {
        "node-0.jsonl": [{"t": 100.0, "ev": "join", "sub": sub},
                         {"t": 110.0, "ev": "recv", "eid": 7, "attr": "a0", "hops": 1,
                          "match": True, "fwd": 0, "dup": False, "rv": True},
                         {"t": 110.0, "ev": "deliver", "eid": 7, "hops": 1},
                         {"t": 120.0, "ev": "leave"}],
        "node-1.jsonl": [{"t": 100.06, "ev": "join", "sub": None},
                         {"t": 110.06, "ev": "publish", "eid": 7, "values": [["a0", 5.0]]},
                         {"t": 120.06, "ev": "leave"}],
    }  # fmt: skip
    for name, recs in logs.items():
        node = name.removesuffix(".jsonl")
        lines = [json.dumps({"v": 1, "node": node, **r}) for r in recs]
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    met = swarm_metrics(tmp_path)
    assert met["expected_pairs"] == 1 and met["hit_ratio"] == 1.0, met
    assert met["event_messages"] == 1 and met["path_length"] == 1.0


def test_bad_swarm_options_get_clear_errors(tmp_path):
    for args, message in [
        (["--cut", "1@5"], "--cut needs --backend netns"),
        (["--loss", "0.1"], "--loss needs --backend netns"),
        (["--start", "1"], "--start/--end select a window of --trace"),
    ]:
        out = subprocess.run([*vinifera_cli(), "swarm", "up", "--log-dir", str(tmp_path), *args],
                             capture_output=True, text=True, timeout=60)  # fmt: skip
        assert out.returncode == 2 and message in out.stderr, out.stderr


needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None,
    reason="network namespaces need root and iproute2",
)


@needs_root
def test_a_netns_swarm_keeps_delivering_when_one_host_is_cut_off(tmp_path):
    logs = tmp_path / "logs"
    summary = swarm_up("--nodes", "10", "--backend", "netns", "--duration", "40",
                       "--events-per-second", "4", "--period", "0.25", "--cut", "4@10",
                       "--log-dir", str(logs))  # fmt: skip
    manifest = json.loads((logs / "manifest.json").read_text())
    cut_host = manifest["addresses"]["4"]
    records, _ = read_records(logs)
    # judge the others over events published from 10 s after the cut
    # (failure_timeout is 5 periods = 1.25 s; the rest is margin)
    # the cut host counts as gone: it cannot receive, that is the point
    late = swarm_metrics(logs, since=_settled_time(records) + 20, exclude=frozenset([cut_host]))
    assert late["expected_pairs"] > 20 and late["hit_ratio"] == 1.0, late
    met = summary["metrics"]
    assert met["false_positives"] == 0 and met["duplicates"] == 0
    assert summary["events_published"] > 100
    assert (
        subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.count("vnf")
        == 0
    ), "namespaces were torn down"


def _settled_time(records: list[dict]) -> float:
    """When the first event was published: the runner publishes only once
    the overlay has formed."""
    return min(r["t"] for r in records if r["ev"] == "publish")


@pytest.mark.slow
@pytest.mark.skipif(not SKYPE.exists(), reason="the Skype trace is not at ../shared/traces")
def test_fifty_process_nodes_replay_a_skype_window_for_five_minutes(tmp_path):
    logs = tmp_path / "logs"
    # hours 100-110 of the trace (the first glitch is near 101 h), 120x faster
    summary = swarm_up("--nodes", "50", "--trace", str(SKYPE), "--start", "100", "--end", "110",
                       "--speedup", "120", "--duration", "300", "--events-per-second", "2",
                       "--log-dir", str(logs), timeout=1200)  # fmt: skip
    manifest = json.loads((logs / "manifest.json").read_text())
    assert manifest["churn_changes"] > 0 and not manifest["interrupted"]
    records, bad = read_records(logs)
    assert bad == 0
    nodes = {r["node"] for r in records}
    # complete logs: every life that began ended with a leave or a crash record
    for node in nodes:
        life = [r["ev"] for r in records if r["node"] == node and r["ev"] in
                ("join", "leave", "crash")]  # fmt: skip
        assert life[0] == "join" and life[-1] in ("leave", "crash")
        assert all(a != b for a, b in zip(life, life[1:], strict=False) if a == "join")
    met = summary["metrics"]
    assert met["false_positives"] == 0 and met["duplicates"] == 0
    assert met["hit_ratio"] >= 0.9, met


def test_control_sockets_live_in_the_log_folder_or_a_temp_folder_that_goes(tmp_path):
    from vinifera.cli.swarm import _remove_sockets, _socket_dir

    short, temporary = _socket_dir(tmp_path, 10, "process")
    assert short == tmp_path / "control" and not temporary
    deep = tmp_path / ("x" * 100)
    deep.mkdir()
    far, temporary = _socket_dir(deep, 10, "process")
    assert temporary and len(str(far / "n10.sock")) < 100
    (far / "n0.sock").write_text("")  # a killed node leaves its socket behind
    for folder, temp in ((short, False), (far, True)):
        _remove_sockets(folder, temp)
        assert not folder.exists()


def test_a_container_backend_that_cannot_start_leaves_no_manifest(tmp_path):
    """Before: runs/docker/manifest.json stayed, saying a swarm ran there."""
    log_dir = tmp_path / "docker"
    env = {**os.environ, "VINIFERA_CONTAINER_ENGINE": shutil.which("false") or "/bin/false"}
    out = subprocess.run(
        [*vinifera_cli(), "swarm", "up", "--backend", "docker", "--nodes", "2", "--duration", "5",
         "--log-dir", str(log_dir)],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("Error: ")
    assert not log_dir.exists()
    kept = tmp_path / "kept"  # a folder that held something keeps it, and only it
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    subprocess.run(
        [*vinifera_cli(), "swarm", "up", "--backend", "docker", "--nodes", "2", "--duration", "5",
         "--log-dir", str(kept)],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert sorted(p.name for p in kept.iterdir()) == ["notes.txt"]


def test_swarm_down_is_a_normal_stop_for_the_swarm_up_that_it_stops(tmp_path):
    """Before: swarm up exited 130 after swarm down, as after Ctrl-C."""
    import time

    up = subprocess.Popen(
        [*vinifera_cli(), "swarm", "up", "--nodes", "3", "--duration", "120", "--period", "0.25",
         "--log-dir", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob("*.jsonl")) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)
        down = subprocess.run([*vinifera_cli(), "swarm", "down", str(tmp_path)],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert down.returncode == 0, down.stderr
        up.wait(timeout=120)
    finally:
        if up.poll() is None:
            up.kill()
    assert up.returncode == 0, up.stderr.read()
