"""The Markdown report: what was read, with which settings, the metrics side
by side, the plots, the per-window table, and where the tables are."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from vinifera import __version__

_METRICS = (
    ("hit_ratio", "hit ratio"),
    ("false_positives", "false positives"),
    ("duplicates", "duplicates"),
    ("traffic_overhead", "traffic overhead"),
    ("path_length", "path length (hops)"),
    ("load_max", "load max"),
    ("load_p95", "load 95th percentile"),
    ("events_published", "events published"),
    ("expected_pairs", "expected pairs"),
    ("delivered_pairs", "delivered pairs"),
    ("event_messages", "event messages"),
    ("event_messages_dropped", "event messages dropped"),
    ("nodes_in_window", "nodes alive in the window"),
    ("records", "log records"),
    ("malformed_lines", "malformed lines"),
)
_WINDOW_COLUMNS = (
    "window",
    "start",
    "alive_nodes",
    "joins",
    "departures",
    "events_published",
    "expected_pairs",
    "hit_ratio",
    "traffic_overhead",
    "path_length",
    "load_max",
    "load_p95",
)
_MAX_WINDOW_ROWS = 200


def _fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in rows]
    return out


def _rel(path, out: Path) -> str:
    return os.path.relpath(path, out)


def write(
    out: Path, results, figures: dict, summary: dict, spark: dict, problems_doc: dict
) -> Path:
    labels = [r.spec.label for r in results]
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    md = [
        "# Vinifera log analysis",
        "",
        f"Generated {now} by `vinifera analyze` (vinifera {__version__}) on Spark "
        f"{spark['version']}, master `{spark['master']}`. Metric definitions: "
        "EXPERIMENTS.md; method: docs/analysis.md.",
        "",
        "## Results",
        "",
    ]
    md += _table(
        ["metric", *labels],
        [[name, *[r.summary.get(key) for r in results]] for key, name in _METRICS],
    )
    md += ["", "## Plots", ""]
    captions = {
        "hit_ratio": "Hit ratio per time window (solid) and alive nodes (dashed)",
        "overhead": "Traffic overhead per time window",
        "path_length": "Delivery path length over delivered expected pairs",
        "load_cdf": "Load CDF over the nodes alive in the measurement window",
    }
    for key, path in figures.items():
        md += [f"![{captions[key]}]({_rel(path, out)})", "", f"*{captions[key]}.*", ""]
    md += ["## Inputs", ""]
    for r in results:
        s, spec, inp = r.summary, r.spec, r.inputs
        md += [f"### {spec.label}", ""]
        md += [
            f"- logs: `{spec.logdir}`: {len(inp['files'])} files, {inp['records']} records "
            f"({', '.join(f'{k} {v}' for k, v in inp['records_by_kind'].items())})",
            f"- logs span t = {_fmt(inp['logs_span'][0])} … {_fmt(inp['logs_span'][1])} s",
            f"- measurement window: events published in [{_fmt(s['window_start'])}, "
            f"{_fmt(s['window_end'])}) s (start from {spec.origin.get('window_start')}, "
            f"end from {spec.origin.get('window_end')})",
            f"- delivery deadline: {_fmt(s['deadline'])} s (from {spec.origin.get('deadline')})",
            f"- time windows: {r.count} of {_fmt(s['window'])} s (from "
            f"{spec.origin.get('window')})",
            f"- attribute schema (from {spec.origin.get('schema')}): "
            + ", ".join(
                f"`{a.name}` {a.type.value}" + (f" [{a.min}, {a.max}]" if a.is_numeric else "")
                for a in spec.schema
            ),
        ]
        cfg = (spec.manifest or {}).get("config")
        if isinstance(cfg, dict):
            md.append(
                f"- simulator run (manifest.json): {cfg.get('system')}, {cfg.get('nodes')} nodes, "
                f"{cfg.get('rounds')} rounds, seed {cfg.get('seed')}, "
                f"{cfg.get('events_per_round')} events per round, {cfg.get('subscriptions')} "
                f"subscriptions, churn {cfg.get('churn') or 'none'}"
            )
        if inp["problems"]:
            md += ["", f"Malformed lines ({s['malformed_lines']}, skipped or read as noted):", ""]
            md += _table(
                ["problem", "lines", "meaning"],
                [[k, v, problems_doc.get(k, "")] for k, v in sorted(inp["problems"].items())],
            )
            if inp["examples"]:
                md += ["", "Examples:", ""]
                md += [f"- `{Path(f).name}`: `{line[:120]}`" for f, line in inp["examples"]]
        else:
            md.append("- malformed lines: none")
        md.append("")
    md += ["## Per time window", ""]
    for r in results:
        md += [f"### {r.spec.label}", ""]
        rows = [[w[c] for c in _WINDOW_COLUMNS] for w in r.windows[:_MAX_WINDOW_ROWS]]
        md += _table(list(_WINDOW_COLUMNS), rows)
        if len(r.windows) > _MAX_WINDOW_ROWS:
            md.append(f"\n({len(r.windows) - _MAX_WINDOW_ROWS} more rows in the windows table.)")
        md.append("")
    md += [
        "## Tables",
        "",
        "Parquet (written by Spark) and CSV; docs/analysis.md describes them.",
        "",
    ]
    md.append(f"- all runs: summary: {', '.join(f'`{_rel(p, out)}`' for p in summary.values())}")
    for r in results:
        md.append(f"- {r.spec.label}:")
        for name, paths in r.tables.items():
            md.append(f"  - {name}: " + ", ".join(f"`{_rel(p, out)}`" for p in paths.values()))
    md.append("")
    path = out / "report.md"
    path.write_text("\n".join(md), encoding="utf-8")
    return path
