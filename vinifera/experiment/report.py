"""docs/evaluation.md: one section per figure, rewritten in place each time
the figure is run (between its BEGIN/END markers), with the PNG, the
paper's numbers beside ours, our table, and the command and commit."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from vinifera import measures
from vinifera.experiment import table
from vinifera.experiment.claims import CLAIMS
from vinifera.experiment.compare import compare
from vinifera.experiment.figures import FIGURES, Figure

HEADER = """\
# Evaluation: the paper's figures, reproduced

Every section below is written by `vinifera experiment run FIGURE` (see
`vinifera experiment --help`) from a declared grid of independent
simulations: systems x workloads x the figure's parameter x seeds. Each
point is the mean over its seeds with min-max error bars. "Vinifera (ours)"
is our default configuration (identifiers placed inside the node's own
subscription, K_f = 4 friends and K_sw = 4 small-world links); "Vinifera
(paper)" is the paper's (identifiers uniformly random, K_sw = 0,
K_f = ceil(log2 N) - 2; in Fig. 3 the sweep sets the links, so there it
differs from ours in the identifiers only). Everything else is the same in
both. The baseline is 2 ring + 8 small-world links, random identifiers and
one rendezvous per attribute. The paper's values are those of
docs/experiments.md, marked in black on each figure.

Results are keyed by their configuration and the commit of the simulated
code, and kept in the run's `results.jsonl`: a section whose grid was
already run is redrawn without simulating anything.

## Running

    vinifera experiment list                      # the figures and their grids
    vinifera experiment run fig3                  # local worker processes (--jobs, default: cores)
    vinifera experiment run fig4a --master spark://head:7077   # each simulation a Spark task
    vinifera experiment run fig5 --end 200        # the first 200 h of the trace

- Every finished simulation is appended to `runs/experiments/results.jsonl`
  (`--out`) at once, keyed by the hash of its full configuration and the
  commit of the simulated code (the last commit that changed `vinifera/` or
  `churn_traces/`, less the daemon, swarms and the modules that only plan,
  store, tabulate and draw; a `-dirty` suffix when those files differ from
  it).
  Ctrl-C loses only the simulations still running; the same command resumes
  and never recomputes a stored one. Figures that share simulations (4a and
  4b, 4c and 4d, 4e) share their results.
- `--seeds N` (default 3), `--profile ours|paper|both` (default both),
  `--nodes`, `--rounds`, `--end`, `--trace`, and `--set KEY=V1,V2,...` for
  any parameter `list` shows, shrink or change a grid. A changed grid writes
  its section to `OUT/evaluation.md` (unless `--doc` says otherwise), so this
  file only ever holds the declared grids.
- `--master URL`: the executors need the same vinifera installed (the run
  stops if a worker's sources differ), Python at `PYSPARK_PYTHON` (default:
  this command's), the trace at the same path, and `--log-dir` on a shared
  file system. Same grid and seeds, same rows as the local runner.
- Each run writes `OUT/FIGURE/FIGURE.{csv,parquet}` (mean, sd, min, max per
  point), `FIGURE-runs.*` (every simulation), `FIGURE-cdf.*` (4e) or
  `FIGURE-series.*` (5), and `FIGURE.png`. A run of a declared grid also
  copies the PNG and the CSVs into `docs/evaluation/`, which its section
  here links (`runs/` is not in the repository).
"""

# The figures' tables: table.METRICS but the drop count, each headed by its
# metric's short name (vinifera/measures.py).
NUMBER_COLUMNS = tuple(
    (k, measures.metric(k).short) for k in table.METRICS if k != "event_messages_dropped"
)


@dataclass(frozen=True)
class RunInfo:
    command: str
    commit: str
    head: str | None
    runner: str
    cpu_seconds: float
    points: int
    seeds: int
    changes: dict  # parameter -> values, where the grid differs from the declared one
    png: str  # link to the PNG, relative to the doc
    tables: str  # where the CSV/Parquet files are


def begin(name: str) -> str:
    return f"<!-- BEGIN {name} -->"


def end(name: str) -> str:
    return f"<!-- END {name} -->"


def _intro(fig: Figure) -> list[str]:
    lines = [f"## {fig.name}: {fig.title}", "", f"The paper: {fig.shows}.", ""]
    if fig.notes:
        lines += [fig.notes, ""]
    return lines


def placeholder(fig: Figure) -> str:
    lines = [
        *_intro(fig),
        "Not run yet at the declared size. To produce it:",
        "",
        f"    vinifera experiment run {fig.name}",
        "",
    ]
    lines += _claims_list(fig)
    return "\n".join(lines)


def _claims_list(fig: Figure) -> list[str]:
    claims = CLAIMS.get(fig.name, ())
    if not claims:
        return []
    out = ["The paper's numbers (docs/experiments.md):", ""]
    out += [f"- {c.system}: {c.text}" for c in claims]
    return [*out, ""]


def section(fig: Figure, rows: list[dict], info: RunInfo) -> str:
    lines = _intro(fig)
    if info.changes:
        changed = ", ".join(
            f"{k} = {values_text(v)} (declared: {values_text(fig.grid[k])})"
            for k, v in info.changes.items()
        )
        lines += [
            f"**Not the declared grid**: {changed}. Numbers from a changed grid are not "
            "a reproduction of the paper's figure.",
            "",
        ]
    lines += [
        f"- command: `{info.command}`",
        f"- simulated code at commit `{info.commit}`"
        + (f" (checkout at `{info.head}`)" if info.head else ""),
        f"- {info.points} simulations ({info.seeds} seed{'s' if info.seeds != 1 else ''} per "
        f"point), {_cpu(info.cpu_seconds)} of CPU, runner: {info.runner}",
        f"- tables: {info.tables}",
        "",
        f"![{fig.name}]({info.png})",
        "",
    ]
    comparisons = compare(fig, rows)
    if comparisons:
        lines += [
            "### The paper's numbers beside ours",
            "",
            "| the paper | workload | system | ours | how it stands |",
            "|---|---|---|---|---|",
        ]
        for c in comparisons:
            lines.append(
                f"| {c.claim.text} | {c.workload} | {c.variant} | {c.ours} | {c.verdict or '—'} |"
            )
        lines.append("")
    lines += _numbers(fig, rows)
    return "\n".join(lines)


def _cpu(seconds: float) -> str:
    return f"{seconds / 3600:.1f} hours" if seconds >= 3600 else f"{seconds:.0f} seconds"


def values_text(values: tuple) -> str:
    shown = ["all" if v is None else f"{v:g}" if isinstance(v, float) else str(v) for v in values]
    return ", ".join(shown)


def _numbers(fig: Figure, rows: list[dict]) -> list[str]:
    swept = [p for p in table.group_params(fig) if len(fig.grid[p]) > 1 and p != "system"]
    swept = [p for p in swept if p not in ("profile",)]
    head = ["system", *swept] + [label for _, label in NUMBER_COLUMNS]
    out = [
        "### Our numbers (mean ± sd over seeds)",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for row in table.summary(fig, rows):
        cells = [row["variant"]] + [_cell(row[p]) for p in swept]
        for metric, _ in NUMBER_COLUMNS:
            mean, sd = row[f"{metric}_mean"], row[f"{metric}_sd"]
            cells.append("—" if mean is None else f"{mean:.3g}" + (f" ± {sd:.2g}" if sd else ""))
        out.append("| " + " | ".join(cells) + " |")
    return [*out, ""]


def _cell(v) -> str:
    return "—" if v is None else f"{v:g}" if isinstance(v, float) else str(v)


def skeleton() -> str:
    """The whole doc with every figure not run yet."""
    parts = [HEADER] + [f"{begin(n)}\n{placeholder(f)}\n{end(n)}\n" for n, f in FIGURES.items()]
    return "\n".join(parts)


def update(doc: Path, fig: Figure, text: str) -> None:
    """Put `text` as the figure's section of `doc`, creating the doc (with
    every other figure's placeholder) if needed."""
    current = doc.read_text(encoding="utf-8") if doc.exists() else skeleton()
    block = f"{begin(fig.name)}\n{text.rstrip()}\n{end(fig.name)}"
    pattern = re.compile(re.escape(begin(fig.name)) + r".*?" + re.escape(end(fig.name)), re.S)
    if pattern.search(current):
        current = pattern.sub(lambda _m: block, current, count=1)
    else:
        current = current.rstrip() + "\n\n" + block + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(current, encoding="utf-8")
