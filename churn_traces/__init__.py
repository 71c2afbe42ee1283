"""Churn traces: formats, statistics, artefact filters, transforms, a synthetic generator.

Installed as `vinifera.churn_traces`. The measured Skype superpeer trace is not
shipped (its redistribution terms are unknown); users pass its path. A small
synthetic trace made by `synthesize` is bundled: `bundled_trace_path()`.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

from .artefacts import (
    Glitch,
    GlitchReport,
    StartupArtefact,
    detect_glitches,
    detect_startup,
    filter_glitches,
    skip_startup,
)
from .formats import (
    Session,
    Trace,
    TraceError,
    format_avt,
    format_evt,
    parse_avt,
    parse_evt,
    read_trace,
    write_trace,
)
from .population import Population
from .schedule import ChurnEvent, ChurnSchedule
from .stats import daily_profile, session_lengths, trace_stats
from .synth import SKYPE, SynthModel, synthesize
from .transform import (
    CompressReport,
    SlotAssignment,
    SlotMapping,
    compress,
    map_to_slots,
    window,
)

BUNDLED_TRACE = "synthetic-small.avt"
# How the bundled trace was made; a test regenerates it and compares bytes.
BUNDLED_RECIPE = {"seed": 1, "nodes": 300, "days": 3}


def bundled_trace_path(name: str = BUNDLED_TRACE) -> Path:
    """Path of a trace shipped in the package's data folder."""
    resource = files(__package__).joinpath("data", name)
    if not resource.is_file():
        raise FileNotFoundError(f"no bundled trace named {name!r}")
    return Path(str(resource))


def skype_trace_path() -> Path:
    """Where the Skype superpeer trace is looked for by default: the file
    VINIFERA_SKYPE_TRACE names, else ../shared/traces beside this checkout
    (docs/experiments.md; the trace is not redistributed), whatever the
    working directory."""
    named = os.environ.get("VINIFERA_SKYPE_TRACE")
    if named:
        return Path(named)
    return Path(__file__).resolve().parents[2] / "shared" / "traces" / "skype-superpeers.avt"


def read_bundled_trace(name: str = BUNDLED_TRACE) -> Trace:
    return parse_avt(files(__package__).joinpath("data", name).read_text("utf-8"), name)


__all__ = [
    "skype_trace_path",
    "BUNDLED_RECIPE",
    "BUNDLED_TRACE",
    "SKYPE",
    "ChurnEvent",
    "ChurnSchedule",
    "CompressReport",
    "Glitch",
    "GlitchReport",
    "Population",
    "Session",
    "SlotAssignment",
    "SlotMapping",
    "StartupArtefact",
    "SynthModel",
    "Trace",
    "TraceError",
    "bundled_trace_path",
    "compress",
    "daily_profile",
    "detect_glitches",
    "detect_startup",
    "filter_glitches",
    "format_avt",
    "format_evt",
    "map_to_slots",
    "parse_avt",
    "parse_evt",
    "read_bundled_trace",
    "read_trace",
    "session_lengths",
    "skip_startup",
    "synthesize",
    "trace_stats",
    "window",
    "write_trace",
]
