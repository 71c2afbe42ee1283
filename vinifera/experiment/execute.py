"""Running one point: what a local worker process or a Spark task does.

A task is a plain dict (it crosses process and machine boundaries): the
point's parameters, the key and configuration digest the driver computed,
the driver's source fingerprint, and where to keep the log (or None). The
worker rebuilds the SimConfig itself and refuses to run if it comes out
different from the driver's (other code, another trace file): rows must not
depend on where they were computed.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

from vinifera import __version__
from vinifera.experiment import build, series
from vinifera.sim.driver import Simulation

# Summary fields kept in a row (docs/experiments.md's metrics and what explains them).
SUMMARY_FIELDS = (
    "hit_ratio",
    "traffic_overhead",
    "path_length",
    "load_max",
    "load_p95",
    "false_positives",
    "duplicates",
    "events_published",
    "expected_pairs",
    "delivered_pairs",
    "event_messages",
    "event_messages_dropped",
    "messages_sent",
    "identifier_moves",
    "alive_nodes",
    "ring_correct_fraction",
    "max_degree",
    "mean_friend_utility",
)


class WorkerMismatch(RuntimeError):
    """A worker would compute a different simulation than the driver planned."""


def run_task(task: dict) -> dict:
    """Run one point; returns {"key", "metrics", "wall_seconds", "cpu_seconds", "host"}."""
    point = task["point"]
    if build.source_fingerprint() != task["fingerprint"]:
        raise WorkerMismatch(
            f"worker {socket.gethostname()} runs other vinifera sources than the driver "
            "(install the same commit on every worker)"
        )
    config = build.sim_config(point)
    if build.config_digest(config) != task["digest"]:
        raise WorkerMismatch(
            f"worker {socket.gethostname()} built another configuration for {point} "
            "(a different trace file at the same path?)"
        )
    log_dir = None
    if task.get("log_dir"):
        log_dir = Path(task["log_dir"]) / task["key"]
    wall, cpu = time.perf_counter(), time.process_time()
    metrics = simulate(config, point, log_dir)
    return {
        "key": task["key"],
        "metrics": metrics,
        "wall_seconds": round(time.perf_counter() - wall, 3),
        "cpu_seconds": round(time.process_time() - cpu, 3),
        "host": socket.gethostname(),
    }


def simulate(config, point: dict, log_dir: Path | None) -> dict:
    sim = Simulation(config, log_dir=log_dir)
    if log_dir is not None:
        manifest = {
            "vinifera": __version__,
            "command": "experiment run",
            "point": point,
            "config": config.to_dict(),
            "schema": sim.schema.to_dict(),
        }
        text = json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n"
        (log_dir / "manifest.json").write_text(text, encoding="utf-8")
    period = sim.overlay_config.period
    windows = None
    alive: list[int] = []
    if config.replay is not None:
        width = point["window_hours"] * 3600 / config.replay.round_seconds * period
        end = (config.rounds - config.deadline_rounds) * period
        windows = series.Windows(sim.ledger, series.window_bounds(0.0, end, width))
        sim.ledger = windows  # sees every record the simulator logs
    summary = sim.run(progress=lambda _r: alive.append(len(sim.alive)))
    metrics = {k: summary.get(k) for k in SUMMARY_FIELDS}
    metrics["cost"] = summary["cost"]  # event messages per delivered pair
    metrics["friends_links"] = sim.overlay_config.friends
    metrics["small_world_links"] = sim.overlay_config.small_world
    main = windows.main if windows is not None else sim.ledger
    metrics["load_cdf"] = series.cdf(series.loads(main))
    if windows is not None:
        hours = config.replay.round_seconds / 3600 / period
        rows = windows.series()
        for row in rows:
            first, last = int(row["start"] / period), max(int(row["end"] / period), 1)
            sizes = alive[first:last] or alive[first : first + 1]
            row["alive_nodes"] = round(sum(sizes) / len(sizes), 3) if sizes else 0
            row["start_hours"] = round(row.pop("start") * hours, 6)
            row["end_hours"] = round(row.pop("end") * hours, 6)
        metrics["series"] = rows
        metrics["joins"] = summary.get("joins")
        metrics["departures"] = summary.get("departures")
    return metrics
