"""`vinifera trace`: inspect, convert, filter and synthesize churn traces (.avt / .evt)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NoReturn

import click

from vinifera.churn_traces import (
    Trace,
    TraceError,
    compress,
    detect_startup,
    filter_glitches,
    read_trace,
    synthesize,
    trace_stats,
    window,
    write_trace,
)
from vinifera.churn_traces.formats import format_avt, format_evt
from vinifera.churn_traces.synth import SKYPE_DAYS, SKYPE_NODES
from vinifera.cli.params import FiniteRange

_IN = click.Path(exists=True, dir_okay=False, path_type=Path)
_OUT = click.Path(dir_okay=False, writable=True, path_type=Path)


def _fail(message: str) -> NoReturn:
    """One line on stderr and exit code 2, like click's own usage errors."""
    click.echo(f"error: {message}", err=True)
    raise click.exceptions.Exit(2)


def _read(path: Path) -> Trace:
    try:
        return read_trace(path)
    except TraceError as err:
        _fail(str(err))
    except OSError as err:
        _fail(f"{path}: {err.strerror or err}")


def _write(trace: Trace, path: Path) -> None:
    try:
        write_trace(trace, path)
    except TraceError as err:
        _fail(str(err))
    except OSError as err:
        _fail(f"{path}: {err.strerror or err}")


def _summary(trace: Trace) -> str:
    return f"{len(trace)} nodes, {trace.session_count} sessions, {trace.end / 3600:.1f} h"


@click.group("trace")
def trace() -> None:
    """Churn traces: .avt (one line per node: id, n, n start/end pairs in seconds)
    and .evt (one line per event: time, node, up|down).

    The measured Skype superpeer trace is not shipped; pass its path. A small
    synthetic trace is bundled (vinifera.churn_traces.bundled_trace_path()).
    """


@trace.command("stats")
@click.argument("file", type=_IN)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@click.option(
    "--probe-seconds",
    default=1800,
    show_default=True,
    type=click.IntRange(min=1),
    help="Sample the online population every S seconds (also the glitch and "
    "flash-crowd probe interval).",
)
def stats_cmd(file: Path, as_json: bool, probe_seconds: int) -> None:
    """Nodes, sessions, session lengths, online population, churn rate and artefacts."""
    st = trace_stats(_read(file), probe_seconds)
    if as_json:
        click.echo(json.dumps(st, sort_keys=True))
        return
    rows = [
        ("nodes", f"{st['nodes']:,}"),
        ("sessions", f"{st['sessions']:,}"),
        ("time span", f"{st['start']} .. {st['end']} s ({st['duration_hours']:.1f} h)"),
        (
            "session length (h)",
            f"median {st['session_median_h']:.2f}, "
            f"mean {st['session_mean_h']:.2f}, p10 {st['session_p10_h']:.2f}, "
            f"p90 {st['session_p90_h']:.2f}",
        ),
        (
            "online (every probe)",
            f"mean {st['population_mean']:.1f}, "
            f"min {st['population_min']}, max {st['population_max']}",
        ),
        (
            "online (any instant)",
            f"min {st['population_min_exact']}, max {st['population_max_exact']}",
        ),
        ("daily cycle", f"+-{100 * st['daily_amplitude']:.0f}%"),
        ("joins / leaves per h", f"{st['joins_per_hour']:.1f} / {st['leaves_per_hour']:.1f}"),
    ]
    startup = st["startup"]
    rows.append(
        (
            "start-up flash crowd",
            f"{startup['joins']} joins by {startup['time_h']:.2f} h "
            f"({startup['population_before']} -> {startup['population_after']} up)"
            if startup
            else "none",
        )
    )
    glitches = st["glitches"]
    rows.append(
        (
            "one-probe glitches",
            ", ".join(f"{g['time_h']:.1f} h ({g['nodes']} nodes)" for g in glitches)
            if glitches
            else "none",
        )
    )
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        click.echo(f"{key:<{width}}  {value}")


@trace.command("synth")
@click.option("--out", "out", required=True, type=_OUT, help="File to write (.avt or .evt).")
@click.option(
    "--seed",
    default=1,
    show_default=True,
    type=int,
    help="Seed of every random draw: same seed, same bytes.",
)
@click.option(
    "--nodes",
    default=SKYPE_NODES,
    show_default=True,
    type=click.IntRange(min=1),
    help="Nodes in the trace (each seen up at least once).",
)
@click.option(
    "--days",
    default=round(SKYPE_DAYS, 2),
    show_default=True,
    type=FiniteRange(min=0, min_open=True),
    help="Length of the trace.",
)
@click.option(
    "--no-flash-crowd",
    is_flag=True,
    help="Start in steady state instead of Skype's start-up flash crowd.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["avt", "evt"]),
    help="Output format (default: from the --out extension).",
)
def synth_cmd(
    out: Path, seed: int, nodes: int, days: float, no_flash_crowd: bool, fmt: str | None
) -> None:
    """Write a synthetic trace calibrated to the Skype superpeer trace (see docs/traces.md)."""
    suffix = out.suffix.lower().lstrip(".")
    if fmt is None:
        fmt = suffix
        if fmt not in ("avt", "evt"):
            raise click.UsageError(f"{out}: cannot tell the format; use .avt/.evt or --format")
    elif suffix in ("avt", "evt") and suffix != fmt:
        # trace stats and the simulator read a file by its suffix
        raise click.UsageError(f"--format {fmt} into {out}: the suffix says {suffix}")
    tr = synthesize(seed, nodes=nodes, days=days, flash_crowd=not no_flash_crowd)
    text = format_avt(tr) if fmt == "avt" else format_evt(tr)
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as err:
        _fail(f"{out}: {err.strerror or err}")
    click.echo(f"wrote {out} ({fmt}): {_summary(tr)}")


@trace.command("convert")
@click.argument("src", metavar="IN", type=_IN)
@click.argument("dst", metavar="OUT", type=_OUT)
def convert_cmd(src: Path, dst: Path) -> None:
    """Convert between .avt and .evt (formats chosen by extension; lossless)."""
    tr = _read(src)
    _write(tr, dst)
    click.echo(f"wrote {dst}: {_summary(tr)}")


@trace.command("filter")
@click.argument("src", metavar="IN", type=_IN)
@click.argument("dst", metavar="OUT", type=_OUT)
@click.option(
    "--glitches",
    is_flag=True,
    help="Merge one-probe mass leave-and-return glitches back into single sessions.",
)
@click.option(
    "--skip-startup", is_flag=True, help="Start after the start-up flash crowd, if one is detected."
)
@click.option(
    "--start",
    "start_h",
    type=FiniteRange(min=0),
    help="Keep from this hour of the input trace (times re-based to 0).",
)
@click.option(
    "--end",
    "end_h",
    type=FiniteRange(min=0, min_open=True),
    help="Keep up to this hour of the input trace.",
)
@click.option(
    "--compress",
    "factor",
    type=FiniteRange(min=0, min_open=True),
    help="Divide all times by X (rounded to the nearest second; no session is lost).",
)
@click.option(
    "--probe-seconds",
    default=1800,
    show_default=True,
    type=click.IntRange(min=1),
    help="Probe interval used by the glitch and flash-crowd rules.",
)
def filter_cmd(
    src: Path,
    dst: Path,
    glitches: bool,
    skip_startup: bool,
    start_h: float | None,
    end_h: float | None,
    factor: float | None,
    probe_seconds: int,
) -> None:
    """Filter a trace and print what was done.

    Steps, in this order: --glitches; then the window, whose start is the later
    of --start and (with --skip-startup) the end of the flash crowd; then --compress.
    """
    tr = _read(src)
    click.echo(f"read {src}: {_summary(tr)}")
    if glitches:
        tr, report = filter_glitches(tr, probe_seconds=probe_seconds)
        click.echo(report.describe())
    start = round(start_h * 3600) if start_h is not None else 0
    if skip_startup:
        artefact = detect_startup(tr, probe_seconds)
        if artefact is None:
            click.echo("start-up flash crowd: none found, nothing skipped")
        else:
            click.echo(artefact.describe() + "; skipped")
            start = max(start, artefact.time)
    end = round(end_h * 3600) if end_h is not None else tr.end
    if start or end < tr.end:
        try:
            tr = window(tr, start, end)
        except ValueError as err:
            _fail(str(err))
        click.echo(
            f"window: kept {start / 3600:.2f} h .. {(start + tr.end) / 3600:.2f} h "
            "of the input, re-based to 0"
        )
    if factor is not None:
        tr, creport = compress(tr, factor)
        click.echo(creport.describe())
    _write(tr, dst)
    click.echo(f"wrote {dst}: {_summary(tr)}")
