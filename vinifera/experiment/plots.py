"""A figure's PNG, drawn like the paper's: one column per workload, one row
per metric; every line is the mean over seeds with min-max error bars or a
min-max band, and the paper's reported values are marked in black beside
ours (a star: "about"; a triangle: "above"/"below"; a dotted line: a factor
of our own baseline). Headless: the Agg backend."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on servers and CI; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402

from vinifera.experiment import table  # noqa: E402
from vinifera.experiment.claims import CLAIMS, Claim  # noqa: E402
from vinifera.experiment.figures import Figure, variant  # noqa: E402
from vinifera.measures import titled  # noqa: E402

COLOURS = {"vinifera (ours)": "tab:blue", "vinifera (paper)": "tab:green", "baseline": "tab:red"}
DASHES = ("-", "--", ":", "-.")
MARKERS = {"≈": "*", "<": "v", "≤": "v", ">": "^", "≥": "^"}
LABELS = {
    **{k: titled(k) for k in ("traffic_overhead", "path_length", "hit_ratio")},
    "load_cdf": "fraction of nodes with load ≤ x",
    "friends": "K_f friend links (K_sw = 8 − K_f)",
    "nodes": "N (nodes)",
    "attributes": "d (attributes)",
    "rate": "publication rate (multiples of the capacity X)",
    "hours": "time (hours of the trace)",
    "load": "load (events forwarded / events published)",
}
PAPER = "black"


def draw(fig: Figure, rows: list[dict], path: Path, subtitle: str) -> Path:
    workloads = list(dict.fromkeys(r["subscriptions"] for r in rows))
    metrics = fig.metrics
    width, height = 5.2 * len(workloads), 3.4 * len(metrics) + 0.7
    canvas, axes = plt.subplots(
        len(metrics), len(workloads), figsize=(width, height), squeeze=False
    )
    claims = CLAIMS.get(fig.name, ())
    for col, workload in enumerate(workloads):
        mine = [r for r in rows if r["subscriptions"] == workload]
        for row_i, metric in enumerate(metrics):
            ax = axes[row_i][col]
            ours = [c for c in claims if c.metric == metric or _cdf_pair(fig, c, metric)]
            ours = [c for c in ours if c.subscriptions in (None, workload)]
            if fig.kind == "lines":
                _lines(ax, fig, mine, metric, ours)
            elif fig.kind == "cdf":
                _cdf(ax, fig, mine, ours)
            else:
                _series(ax, fig, mine, metric, ours, first_row=row_i == 0)
            for claim in ours:
                if claim.value is None:  # the paper's words only: in the legend
                    ax.plot([], [], " ", label=f"paper: {claim.system} {claim.text}")
            if metric == "hit_ratio":
                ax.set_ylim(-0.02, 1.05)
            ax.set_title(f"{workload} subscriptions", fontsize="medium")
            ax.set_ylabel(LABELS.get(metric, metric))
            ax.set_xlabel(LABELS.get(fig.x, fig.x))
            ax.grid(alpha=0.3)
    # One legend under the panels (ours, then the paper's values), off the data.
    entries: dict = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    columns = 2 if len(workloads) > 1 else 1
    legend_inches = 0.2 * math.ceil(len(entries) / columns) + 0.25
    canvas.set_size_inches(width, height + legend_inches)
    canvas.legend(
        entries.values(),
        entries.keys(),
        loc="lower center",
        ncol=columns,
        fontsize="small",
        frameon=False,
    )
    wrapped = textwrap.fill(subtitle, width=int(12 * 5.2 * len(workloads)))
    canvas.suptitle(f"{fig.name}: {fig.title}\n{wrapped}", fontsize="medium")
    canvas.tight_layout(rect=(0, legend_inches / (height + legend_inches), 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    canvas.savefig(path, dpi=110)
    plt.close(canvas)
    return path


def _cdf_pair(fig: Figure, claim: Claim, metric: str) -> bool:
    return fig.kind == "cdf" and claim.metric == "load_max"


def _lines(ax, fig: Figure, rows: list[dict], metric: str, claims: list[Claim]) -> None:
    xs_all = sorted({r[fig.x] for r in rows if r[fig.x] is not None})
    baseline: dict = {}
    by_variant: dict[str, dict] = {}
    for params, runs in table.groups(fig, rows):
        name = variant(params)
        s = table.stats([r.get(metric) for r in runs])
        by_variant.setdefault(name, {})[params[fig.x]] = s
    for name, points in by_variant.items():
        colour = COLOURS[name]
        if list(points) == [None]:  # not swept (the baseline in Fig. 3): a band
            s = points[None]
            if s["mean"] is None:
                continue
            ax.axhline(s["mean"], color=colour, label=f"{name} (mean, min–max)")
            ax.axhspan(s["min"], s["max"], color=colour, alpha=0.15)
            baseline = dict.fromkeys(xs_all, s["mean"]) if name == "baseline" else baseline
            continue
        xs = [x for x in sorted(points) if points[x]["mean"] is not None]
        if not xs:
            continue
        means = [points[x]["mean"] for x in xs]
        low = [points[x]["mean"] - points[x]["min"] for x in xs]
        high = [points[x]["max"] - points[x]["mean"] for x in xs]
        ax.errorbar(
            xs,
            means,
            yerr=[low, high],
            color=colour,
            marker="o",
            capsize=3,
            label=f"{name} (mean, min–max)",
        )
        if name == "baseline":
            baseline = dict(zip(xs, means, strict=True))
    if fig.log_x:
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
    # the paper's values at an x of their own (Fig. 3's K_f = 8) get a tick too
    ticks = sorted({*xs_all, *(c.x for c in claims if c.x is not None and c.value is not None)})
    if ticks:
        ax.set_xticks(ticks, [f"{x:g}" for x in ticks])
    for claim in claims:
        _mark(ax, claim, xs_all, baseline)


def _mark(ax, claim: Claim, xs: list, baseline: dict) -> None:
    """The paper's value: a marker at its x, a line over every x, or a
    dotted factor of our baseline."""
    if claim.value is None:
        return
    label = f"paper: {claim.system} {claim.text}"
    if claim.of_baseline:
        at = [x for x in xs if claim.x is None or x == claim.x]
        pts = [(x, baseline[x] * claim.value) for x in at if baseline.get(x) is not None]
        if pts:
            style = dict(color=PAPER, linestyle=":", marker=MARKERS[claim.relation], label=label)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], **style)
        return
    if claim.x is None:
        ax.axhline(claim.value, color=PAPER, linestyle=_dash(claim), linewidth=1, label=label)
        return
    _point(ax, claim, label)


def _dash(claim: Claim) -> str:
    return "-." if claim.system == "baseline" else "--"


def _point(ax, claim: Claim, label: str) -> None:
    """A claim at one x: filled for Vinifera, hollow for the baseline (whose
    lines are dash-dotted)."""
    face = "white" if claim.system == "baseline" else PAPER
    ax.plot(
        [claim.x],
        [claim.value],
        linestyle="none",
        marker=MARKERS[claim.relation],
        markersize=11,
        color=PAPER,
        markerfacecolor=face,
        label=label,
    )


def _cdf(ax, fig: Figure, rows: list[dict], claims: list[Claim]) -> None:
    ds = sorted({r["attributes"] for r in rows})
    for params, runs in table.groups(fig, rows):
        name = variant(params)
        dash = DASHES[ds.index(params["attributes"]) % len(DASHES)]
        columns = list(zip(*(r["load_cdf"] for r in runs), strict=True))
        s = [table.stats(list(c)) for c in columns]
        if s[0]["mean"] is None:
            continue
        xs = list(table.LOAD_GRID)
        ax.step(
            xs,
            [v["mean"] for v in s],
            where="post",
            color=COLOURS[name],
            linestyle=dash,
            label=f"{name}, d = {params['attributes']}",
        )
        ax.fill_between(
            xs,
            [v["min"] for v in s],
            [v["max"] for v in s],
            step="post",
            color=COLOURS[name],
            alpha=0.12,
        )
    for claim in claims:
        label = f"paper: {claim.system} {claim.text}"
        if claim.metric == "load_max":
            ax.axvline(claim.value, color=PAPER, linestyle=_dash(claim), linewidth=1, label=label)
        else:
            _point(ax, claim, label)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(0, 1.02)


def _series(ax, fig: Figure, rows: list[dict], metric: str, claims, first_row: bool) -> None:
    base_series = None
    size_drawn = False
    for params, runs in table.groups(fig, rows):
        name = variant(params)
        windows = runs[0]["series"]
        xs = [(w["start_hours"] + w["end_hours"]) / 2 for w in windows]
        s = [table.stats([r["series"][i][metric] for r in runs]) for i in range(len(windows))]
        ax.plot(
            xs,
            [v["mean"] for v in s],
            color=COLOURS[name],
            marker=".",
            label=f"{name} (mean, min–max)",
        )
        ax.fill_between(
            xs,
            [_nan(v["min"]) for v in s],
            [_nan(v["max"]) for v in s],
            color=COLOURS[name],
            alpha=0.15,
        )
        if name == "baseline":
            base_series = (xs, [v["mean"] for v in s])
        if first_row and not size_drawn:
            size = ax.twinx()
            size.plot(
                xs, [w["alive_nodes"] for w in windows], color="grey", linestyle="--", linewidth=1
            )
            size.set_ylabel("alive nodes (grey, dashed)")
            size.set_ylim(bottom=0)
            size_drawn = True
    for claim in claims:
        if claim.of_baseline and claim.value is not None and base_series is not None:
            xs, ys = base_series
            ax.plot(
                xs,
                [None if y is None else y * claim.value for y in ys],
                color=PAPER,
                linestyle=":",
                label=f"paper: vinifera {claim.text}",
            )


def _nan(v):
    return float("nan") if v is None else v
