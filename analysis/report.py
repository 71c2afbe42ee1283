"""The Markdown report: what was read, with which settings, the metrics side
by side, the plots, the per-window table, and where the tables are."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from vinifera import __version__
from vinifera.analysis.plots import fmt
from vinifera.measures import METRICS, digits, metric, ratios, titled

# The results table's rows, each as vinifera/measures.py names it.
_METRICS = (
    "hit_ratio",
    "false_positives",
    "duplicates",
    "traffic_overhead",
    "node_overhead",
    "redundancy",
    "cost",
    "path_length",
    "route_hops",
    "load_max",
    "load_p95",
    "events_published",
    "expected_pairs",
    "delivered_pairs",
    "event_messages",
    "event_messages_dropped",
    "nodes_in_window",
    "records",
    "malformed_lines",
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


def _fmt(v, key: str = "") -> str:
    if isinstance(v, float) and v.is_integer() and key in ("start", "end", "window_start"):
        return f"{v:g}"
    return fmt(v, digits(key))


def _table(header: list[str], rows: list[list], keys: list[str] | None = None) -> list[str]:
    keys = keys or [""] * len(header)
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += [
        "| "
        + " | ".join(
            v if isinstance(v, str) else _fmt(v, k) for v, k in zip(row, keys, strict=True)
        )
        + " |"
        for row in rows
    ]
    return out


# What the findings compare, run against the baseline (metric(k).better).
_COMPARED = ("traffic_overhead", "cost", "load_max", "load_p95", "path_length", "hit_ratio")


def findings(results) -> list[str]:
    """The first lines of the report: what the numbers say, by ratio."""
    if not results:
        return []
    lines = []
    for r in results:
        s = r.summary
        lines.append(
            f"- **{r.spec.label}**: hit ratio {fmt(s['hit_ratio'])} over {s['expected_pairs']} "
            f"expected pairs ({s['events_published']} events), traffic overhead "
            f"{fmt(s['traffic_overhead'])}, path length {fmt(s['path_length'], 2)} hops, load max "
            f"{fmt(s['load_max'])}; {s['false_positives']} false positives, "
            f"{s['duplicates']} duplicates."
        )
    base = next((r for r in results if r.spec.label.startswith("baseline")), results[-1])
    for r in results:
        if r is base:
            continue
        said = []
        for key in _COMPARED:
            name, better = metric(key).label, metric(key).better
            a, b = r.summary.get(key), base.summary.get(key)
            if a is None or b is None:
                continue
            if key == "hit_ratio":
                if abs(a - b) < 0.0005:
                    said.append(f"the same hit ratio ({fmt(a)})")
                else:
                    said.append(f"hit ratio {fmt(a)} vs {fmt(b)}")
                continue
            if a == b:
                said.append(f"the same {name}")
            elif a == 0 or b == 0:
                said.append(f"{name} {fmt(a)} vs {fmt(b)}")
            else:
                ratio = b / a if better == "lower" else a / b
                word = ("lower" if ratio > 1 else "higher") if name != "path length" else (
                    "shorter" if ratio > 1 else "longer")  # fmt: skip
                times = ratio if ratio > 1 else 1 / ratio
                factor = f"{times:.1f}" if times >= 2 else f"{times:.2f}"  # 1.05x, not 1.0x
                said.append(f"{factor}× {word} {name} ({fmt(a, digits(key))} vs "
                            f"{fmt(b, digits(key))})")  # fmt: skip
        lines.append(f"- **{r.spec.label} against {base.spec.label}**: " + ", ".join(said) + ".")
    return ["## Findings", "", *lines, ""]


# How a run of quiet windows combines (vinifera/measures.py, `across`):
# counts and the counts of ratios summed, ratios formed again over the sums.
_SUMMED = tuple(
    dict.fromkeys(
        [m.key for m in METRICS if m.ledger and m.across == "sum"]
        + [k for m in METRICS if m.of is not None for k in m.of]
    )
)
_MAXED = tuple(m.key for m in METRICS if m.ledger and m.across == "max")
_BLANKED = tuple(m.key for m in METRICS if m.ledger and m.across == "none")


def collapse(windows: list[dict]) -> list[dict]:
    """Consecutive windows in which the network does not change (no joins
    or departures, the same alive nodes) as one row: counts summed, ratios
    over the sums, the load max the largest, what does not add up (load
    p95) blank, `window` a range. Every window is in the windows table and
    the plots."""
    out: list[dict] = []
    for w in windows:
        prev = out[-1] if out else None
        quiet = w["joins"] == 0 and w["departures"] == 0
        if prev is not None and quiet and prev["quiet"] and prev["alive_nodes"] == w["alive_nodes"]:
            prev["last"] = w["window"]
            prev["end"] = w["end"]
            for k in _SUMMED:
                prev[k] += w[k]
            for k in _MAXED:
                prev[k] = max(prev[k] or 0, w[k] or 0) or prev[k]
            for k in _BLANKED:
                prev[k] = None
            continue
        out.append({**w, "first": w["window"], "last": w["window"], "quiet": quiet})
    for row in out:
        row.update(ratios(row))
        row["window"] = (
            str(row["first"]) if row["first"] == row["last"] else f"{row['first']}–{row['last']}"
        )
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
        f"{spark['version']}, master `{spark['master']}`. Every metric is defined in "
        "docs/metrics.md; the method is in docs/analysis.md. Times are seconds after each "
        "run's start.",
        "",
    ]
    md += findings(results)
    md += ["## Results", ""]
    md += _table(
        ["metric", *labels],  # one precision per metric, whatever the run
        [[titled(key), *[_fmt(r.summary.get(key), key) for r in results]] for key in _METRICS],
    )
    md += ["", "## Plots", ""]
    captions = {
        "hit_ratio": "Hit ratio per time window, and alive nodes at each window's start",
        "over_time": "Hit ratio, traffic overhead and path length per time window, above the "
        "network size (the layout of the paper's Fig. 5)",
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
            f"- logs span {_fmt(inp['logs_span'][0], 'start')} … "
            f"{_fmt(inp['logs_span'][1], 'start')} s after the run's start"
            + (f" (Unix time {s['time_origin']:.3f})" if s["time_origin"] else ""),
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
    md += [
        "## Per time window",
        "",
        "Consecutive windows in which the network does not change (no joins or departures) "
        "are one row: counts summed, ratios over the sums, the load maximum over them (the "
        "95th percentile only for single windows). Every window is in "
        "`LABEL/tables/windows.csv` and in the plots.",
        "",
    ]
    for r in results:
        rows = collapse(r.windows)
        md += [f"### {r.spec.label}: {len(r.windows)} windows in {len(rows)} rows", ""]
        shown = [[w[c] for c in _WINDOW_COLUMNS] for w in rows[:_MAX_WINDOW_ROWS]]
        md += _table(list(_WINDOW_COLUMNS), shown, list(_WINDOW_COLUMNS))
        if len(rows) > _MAX_WINDOW_ROWS:
            md.append(f"\n({len(rows) - _MAX_WINDOW_ROWS} more rows: see the windows table.)")
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
