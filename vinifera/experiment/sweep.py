"""A figure's sweep: plan the points, run those not yet stored, collect the rows."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vinifera.experiment import build, figures, trace
from vinifera.experiment.figures import Figure
from vinifera.experiment.params import GridError
from vinifera.experiment.store import Store


@dataclass(frozen=True)
class Planned:
    point: dict
    key: str
    digest: str
    # Estimated cost in node-rounds (for the progress bar's ETA).
    cost: float


@dataclass(frozen=True)
class Plan:
    figure: Figure
    grid: dict[str, tuple]
    commit: str
    items: list[Planned]

    @property
    def changes(self) -> dict[str, tuple]:
        """Where this grid differs from the figure's declaration (where the
        trace file lives is not a difference: its contents are in the key)."""
        changed = figures.changes_from_declared(self.figure, self.grid)
        changed.pop("trace", None)
        return changed


def plan(fig: Figure, changes: dict[str, tuple], commit: str) -> Plan:
    """Every point of the figure's grid with `changes`, its key and cost;
    raises GridError for a grid that cannot run."""
    grid = figures.override(fig, changes)
    if "trace" in grid:
        try:
            grid["trace"] = tuple(trace.resolve(p) for p in grid["trace"])
        except trace.TraceInputError as err:
            raise GridError(str(err)) from None
    items = []
    for point in figures.points(grid):
        try:
            config = build.sim_config(point)
        except ValueError as err:  # TraceInputError included
            raise GridError(f"{_describe(point)}: {err}") from None
        if config.replay is not None:
            tr = config.replay.trace
            mean_size = trace.time_averaged_size(tr)
            cost = mean_size * config.rounds
        else:
            cost = config.nodes * config.rounds
        items.append(
            Planned(point, build.point_key(config, commit), build.config_digest(config), cost)
        )
    return Plan(fig, grid, commit, items)


def _describe(point: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in point.items() if v is not None and k != "trace")


def tasks(p: Plan, store: Store, log_dir: Path | None) -> list[dict]:
    """The points still to run (one task per distinct key)."""
    out, seen = [], set()
    fingerprint = build.source_fingerprint()
    for item in p.items:
        if item.key in store or item.key in seen:
            continue
        seen.add(item.key)
        out.append(
            {
                "point": item.point,
                "key": item.key,
                "digest": item.digest,
                "fingerprint": fingerprint,
                "log_dir": None if log_dir is None else str(log_dir.resolve()),
            }
        )
    return out


def run(
    p: Plan,
    store: Store,
    runner,
    todo: list[dict],
    on_result: Callable[[dict, dict], None] | None = None,
) -> None:
    """Run `todo` and store each result as it arrives."""
    for result in runner.run(todo):
        record = {
            "key": result["key"],
            "commit": p.commit,
            "metrics": result["metrics"],
            "wall_seconds": result["wall_seconds"],
            "cpu_seconds": result["cpu_seconds"],
            "host": result["host"],
            "runner": runner.name,
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        store.add(record)
        if on_result is not None:
            on_result(record, result)


def rows(p: Plan, store: Store) -> list[dict]:
    """One row per point (grid order): its parameters, then its metrics."""
    out = []
    for item in p.items:
        record = store.get(item.key)
        if record is None:
            raise KeyError(f"point {item.key} has no result yet")
        out.append({**item.point, "key": item.key, "commit": p.commit, **record["metrics"]})
    return out
