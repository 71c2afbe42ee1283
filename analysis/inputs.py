"""What one analysis run reads and with which settings.

A log folder (simulator or swarm) holds `*.jsonl` / `*.jsonl.gz` files,
possibly in sub-folders. The schema, the measurement window and the deadline
come, in this order of precedence, from command-line flags, from the
`manifest.json` in the folder (the simulator's or a swarm's), and from the
defaults below (see docs/analysis.md). Times are shown, and flags are read,
in seconds after the run's origin: 0 in the simulator, the first node's
start in a swarm, the first record without a manifest.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from vinifera.errors import SchemaError
from vinifera.schema import Schema
from vinifera.swarm.window import DEADLINE_PERIODS, is_swarm, swarm_window

# The glob Spark applies to file names (Hadoop glob syntax, braces allowed).
LOG_GLOB = "*.{jsonl,jsonl.gz}"
MANIFEST = "manifest.json"
# Without a manifest (daemon logs, in Unix seconds) nothing says how long a
# round is: docs/metrics.md's default deadline is 5 rounds, and these assume
# one-second rounds. Flags override.
DEFAULT_DEADLINE = 5.0
DEFAULT_WINDOW = 60.0


class InputError(ValueError):
    """Bad input the user can fix (the CLI turns it into a usage error)."""


@dataclass(frozen=True)
class RunSpec:
    """One log folder and how to measure it.

    Times are in the logs' clock (`t`). `time_origin` is the run's time zero
    (None: the first record's time). `window_start`/`window_end` come from a
    manifest; `start_offset`/`end_offset` from the flags, in seconds after
    the origin, and win over them. None for both means "from the logs": the
    first record, and the last record minus the deadline (every counted
    event then had its whole deadline logged). `infer_crashes`: close lives
    that end without a leave or crash record at their last record
    (docs/metrics.md; not for the simulator, whose nodes alive at the end
    simply are)."""

    logdir: str
    label: str
    schema: Schema
    deadline: float
    window: float
    window_start: float | None = None
    window_end: float | None = None
    start_offset: float | None = None
    end_offset: float | None = None
    time_origin: float | None = None
    infer_crashes: bool = True
    files: tuple[str, ...] = ()
    manifest: dict | None = None
    # setting -> where its value came from: "flag", "manifest", "default", "logs"
    origin: dict = field(default_factory=dict)

    @property
    def kind(self) -> str:
        if (self.manifest or {}).get("config") is not None:
            return "simulator"
        return "swarm" if is_swarm(self.manifest) else "logs"

    def settle(self, first: float, last: float) -> tuple[float, float, float]:
        """(origin, start, end) in the logs' clock, given the logs' span."""
        origin = self.time_origin if self.time_origin is not None else first
        if self.start_offset is not None:
            start = origin + self.start_offset
        else:
            start = self.window_start if self.window_start is not None else first
        if self.end_offset is not None:
            end = origin + self.end_offset
        else:
            end = self.window_end if self.window_end is not None else last - self.deadline
        return origin, start, end


def is_remote(path: str) -> bool:
    """A Hadoop URI (hdfs://, s3a://, ...) that only Spark can list."""
    return "://" in path and not path.startswith("file://")


def find_logs(logdir: Path) -> list[Path]:
    """Every *.jsonl and *.jsonl.gz under logdir (recursively), sorted."""
    found = set(logdir.rglob("*.jsonl")) | set(logdir.rglob("*.jsonl.gz"))
    return sorted(p for p in found if p.is_file())


def input_bytes(specs: list[RunSpec]) -> int | None:
    """About how many bytes of JSON the runs' logs hold (a gzip file counts
    ten times its size: JSON lines compress about tenfold); None when a
    run's logs are remote, whose size only Spark can find."""
    total = 0
    for spec in specs:
        if is_remote(spec.logdir):
            return None
        for name in spec.files:
            size = Path(name).stat().st_size
            total += 10 * size if name.endswith(".gz") else size
    return total


def load_manifest(logdir: Path) -> dict | None:
    path = logdir / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise InputError(f"{path}: unreadable manifest: {err}") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: a manifest must be a JSON object")
    return data


def _manifest_times(manifest: dict, source: str) -> tuple[float, float, float, float]:
    """(window_start, window_end, deadline, period) exactly as the simulator's
    Ledger computes them from its SimConfig (same float operations)."""
    try:
        cfg = manifest["config"]
        period = cfg["overlay"]["period"]
        rounds = cfg["rounds"]
        deadline_rounds = cfg["deadline_rounds"]
        warmup = cfg.get("warmup_rounds")
        if warmup is None:
            warmup = min(50, rounds // 2)  # SimConfig.warmup
        return (
            warmup * period,
            (rounds - deadline_rounds) * period,
            deadline_rounds * period,
            period,
        )
    except (KeyError, TypeError) as err:
        raise InputError(f"{source}: manifest lacks config field {err}") from None


def _swarm_times(manifest: dict, source: str):
    """(period, deadline, origin, window_start, window_end) of a swarm's
    manifest: the window `swarm up` measured (vinifera/swarm/window.py)."""
    try:
        period = float(manifest["period"])
        window = swarm_window(manifest)
    except (KeyError, TypeError, ValueError) as err:
        raise InputError(f"{source}: swarm manifest without a usable period: {err}") from None
    if window is None:  # interrupted before it published anything
        return period, period * DEADLINE_PERIODS, manifest.get("origin"), None, None
    return period, window.deadline, window.origin, window.start, window.end


def resolve(
    logdir: str,
    *,
    schema_path: Path | None = None,
    start: float | None = None,
    end: float | None = None,
    deadline: float | None = None,
    window: float | None = None,
    label: str | None = None,
) -> RunSpec:
    """Find the logs and settle every setting; raises InputError."""
    origin: dict[str, str] = {}
    files: tuple[str, ...] = ()
    manifest = None
    if not is_remote(logdir):
        path = Path(logdir.removeprefix("file://"))
        if not path.is_dir():
            raise InputError(f"{logdir}: no such directory")
        files = tuple(str(p) for p in find_logs(path))
        if not files:
            raise InputError(f"{logdir}: no *.jsonl or *.jsonl.gz log files in it")
        manifest = load_manifest(path)
        source = str(path / MANIFEST)
        dir_name = path.resolve().name
    else:
        source = logdir
        dir_name = logdir.rstrip("/").rsplit("/", 1)[-1]

    if schema_path is not None:
        try:
            schema = Schema.load(schema_path)
        except (OSError, SchemaError) as err:
            raise InputError(f"--schema: {err}") from None
        origin["schema"] = "flag"
    elif manifest is not None and "schema" in manifest:
        try:
            schema = Schema.from_dict(manifest["schema"], source)
        except SchemaError as err:
            raise InputError(str(err)) from None
        origin["schema"] = "manifest"
    else:
        raise InputError(
            f"{logdir}: no {MANIFEST} with a schema here: "
            "pass --schema FILE (the swarm's TOML schema)"
        )

    m_start = m_end = m_deadline = m_period = None
    time_origin, infer_crashes = None, True
    if manifest is not None and manifest.get("config") is not None:
        m_start, m_end, m_deadline, m_period = _manifest_times(manifest, source)
        time_origin, infer_crashes = 0.0, False
    elif is_swarm(manifest):
        m_period, m_deadline, time_origin, m_start, m_end = _swarm_times(manifest, source)
    if label is None:
        # The simulator's system name ("vinifera", "baseline"), else the folder's.
        cfg = (manifest or {}).get("config")
        system = cfg.get("system") if isinstance(cfg, dict) else None
        label = system if isinstance(system, str) and system else dir_name

    def pick(name, flag, from_manifest, default):
        if flag is not None:
            origin[name] = "flag"
            return flag
        if from_manifest is not None:
            origin[name] = "manifest"
            return from_manifest
        origin[name] = "default" if default is not None else "logs"
        return default

    deadline = pick("deadline", deadline, m_deadline, DEFAULT_DEADLINE)
    window = pick("window", window, m_period, DEFAULT_WINDOW)
    pick("window_start", start, m_start, None)
    pick("window_end", end, m_end, None)
    for name, value in (("deadline", deadline), ("window", window)):
        if not (math.isfinite(value) and value > 0):
            raise InputError(f"--{name} must be a positive number of seconds, got {value}")
    if start is not None and end is not None and not end > start:
        raise InputError(f"empty measurement window: from {start} until {end}")
    return RunSpec(
        logdir=logdir,
        label=label or "run",
        schema=schema,
        deadline=float(deadline),
        window=float(window),
        window_start=m_start,
        window_end=m_end,
        start_offset=start,
        end_offset=end,
        time_origin=time_origin,
        infer_crashes=infer_crashes,
        files=files,
        manifest=manifest,
        origin=origin,
    )


def unique_labels(specs: list[RunSpec]) -> list[RunSpec]:
    """Two runs of the same system get distinct labels (they name folders)."""
    from dataclasses import replace

    seen: dict[str, int] = {}
    out = []
    for spec in specs:
        n = seen.get(spec.label, 0)
        seen[spec.label] = n + 1
        out.append(spec if n == 0 else replace(spec, label=f"{spec.label}-{n + 1}"))
    return out
