"""PNG plots of the aggregated results, every run on the same axes (so
Vinifera and the baseline sit side by side). Headless: the Agg backend.
Times are seconds after each run's origin (its start); metric definitions
are in docs/metrics.md."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on servers and CI; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from vinifera.measures import titled  # noqa: E402

_DPI = 110
# Markers only while they can be told apart.
_MARKER_LIMIT = 80


def _legend(ax, **kw) -> None:
    """A legend when the axes have labelled lines (an empty one makes
    matplotlib warn on the terminal, e.g. for a run with no events)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**{"fontsize": "small", **kw})


def fmt(value, digits: int = 3) -> str:
    """One precision for every ratio shown (tables, legends, findings)."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _times(result) -> list[float]:
    """Window midpoints, seconds after the run's origin."""
    return [(w["start"] + w["end"]) / 2 for w in result.windows]


# Per series (in order): two series that coincide (both at 1.0) stay visible
# as a solid line with dots and a dashed one with hollow squares.
_MARKERS = ("o", "s", "^", "D", "v")
_LINESTYLES = ("-", "--", "-.", ":")


def _style(result, i: int = 0) -> dict:
    many = len(result.windows) > _MARKER_LIMIT
    return {
        "marker": None if many else _MARKERS[i % len(_MARKERS)],
        "markersize": 4 + 2 * (i % 2),
        "markerfacecolor": "none" if i % 2 else None,
        "linestyle": _LINESTYLES[i % len(_LINESTYLES)],
        "linewidth": 1.2,
        "clip_on": False,  # a series at exactly 1.0 is drawn whole on the top edge
    }


def _time_label(results) -> str:
    kinds = {r.spec.kind for r in results}
    if kinds == {"simulator"}:
        return "time since the start of the run (simulated s; one round = one gossip period)"
    return "time since the start of the run (s)"


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=_DPI)
    plt.close(fig)
    return path


def _churn_free(result) -> bool:
    return all(w["joins"] == 0 and w["departures"] == 0 for w in result.windows)


def _size_panel(ax, results) -> None:
    for r in results:
        ax.step(_times(r), [w["alive_nodes"] for w in r.windows], where="mid",
                label=r.spec.label, linewidth=1.2)  # fmt: skip
    ax.set_ylabel("alive nodes")
    top = max((w["alive_nodes"] for r in results for w in r.windows), default=1)
    ax.set_ylim(0, top * 1.12 + 1)  # room above the line, which sits at the top
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    steady = [r for r in results if _churn_free(r) and r.windows]
    if len(steady) == len(results) and steady:
        sizes = {r.windows[0]["alive_nodes"] for r in steady}
        ax.text(0.01, 0.08, f"no joins or departures in the window: {', '.join(map(str, sizes))}"
                " nodes throughout", transform=ax.transAxes, fontsize="small")  # fmt: skip


def hit_ratio(results, path: Path) -> Path:
    """Hit ratio per window above the network size (two panels, one time axis)."""
    fig, (ax, size) = plt.subplots(
        2, 1, figsize=(8, 5.5), sharex=True, gridspec_kw={"height_ratios": [2, 1]}
    )
    for i, r in enumerate(results):
        ax.plot(_times(r), [w["hit_ratio"] for w in r.windows], label=r.spec.label,
                **_style(r, i))  # fmt: skip
    lows = [w["hit_ratio"] for r in results for w in r.windows if w["hit_ratio"] is not None]
    bottom = min(lows, default=0.0)
    # Zoom in when every window is near 1, so the series do not sit on one
    # line; the axis ends at 1.0, the most a hit ratio can be.
    ax.set_ylim(max(0.0, bottom - 0.05) if bottom > 0.5 else -0.02, 1.0)
    ax.set_ylabel(titled("hit_ratio"))
    ax.set_title("Hit ratio per time window, and the network size")
    _legend(ax, loc="lower left")
    ax.grid(alpha=0.3)
    _size_panel(size, results)
    size.set_xlabel(_time_label(results))
    return _save(fig, path)


def overhead(results, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, r in enumerate(results):
        ax.plot(_times(r), [w["traffic_overhead"] for w in r.windows],
                label=f"{r.spec.label} (overall {fmt(r.summary['traffic_overhead'])})",
                **_style(r, i))  # fmt: skip
    ax.set_xlabel(_time_label(results))
    ax.set_ylabel(titled("traffic_overhead"))
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("Traffic overhead per time window (copies to uninterested nodes / all copies)")
    _legend(ax)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def over_time(results, path: Path) -> Path:
    """The paper's Fig. 5 layout: hit ratio, overhead and path length over
    time, above the network size."""
    fig, axes = plt.subplots(
        4, 1, figsize=(8, 9), sharex=True, gridspec_kw={"height_ratios": [2, 2, 2, 1.3]}
    )
    rows = (
        ("hit_ratio", (-0.02, 1.02)),
        ("traffic_overhead", (-0.02, 1.02)),
        ("path_length", None),
    )
    for ax, (key, limits) in zip(axes, rows, strict=False):
        for i, r in enumerate(results):
            ax.plot(_times(r), [w[key] for w in r.windows], label=r.spec.label, **_style(r, i))
        ax.set_ylabel(titled(key))
        if limits:
            ax.set_ylim(*limits)
        else:
            ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    _legend(axes[0], loc="lower left")
    axes[0].set_title("Per time window, over the run")
    _size_panel(axes[3], results)
    axes[3].set_xlabel(_time_label(results))
    return _save(fig, path)


def path_length(results, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    n = max(len(results), 1)
    width = 0.8 / n
    for i, r in enumerate(results):
        total = sum(c for _, c in r.hops)
        if not total:
            continue
        xs = [h - 0.4 + width * (i + 0.5) for h, _ in r.hops]
        ax.bar(xs, [c / total for _, c in r.hops], width=width,
               label=f"{r.spec.label} (mean {fmt(r.summary['path_length'], 2)} hops)")  # fmt: skip
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("hops from publisher to subscriber")
    ax.set_ylabel("fraction of delivered pairs")
    ax.set_title("Delivery path length")
    _legend(ax)
    ax.grid(alpha=0.3, axis="y")
    return _save(fig, path)


def load_cdf(results, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for r in results:
        events = r.summary["events_published"]
        nodes = sum(c for _, c in r.load_hist)
        if not events or not nodes:
            continue
        xs, ys, seen = [0.0], [0.0], 0
        for fwd, c in r.load_hist:
            seen += c
            xs.append(fwd / events)
            ys.append(seen / nodes)
        label = (f"{r.spec.label} (max {fmt(r.summary['load_max'])}, "
                 f"p95 {fmt(r.summary['load_p95'])})")  # fmt: skip
        ax.step(xs, ys, where="post", label=label)
    ax.set_xlabel("load: events forwarded / events published")
    ax.set_ylabel("fraction of nodes")
    ax.set_ylim(0, 1.02)
    ax.set_title("Load distribution (CDF)")
    _legend(ax, loc="lower right")
    ax.grid(alpha=0.3)
    return _save(fig, path)


def draw(results, folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return {
        "hit_ratio": hit_ratio(results, folder / "hit_ratio.png"),
        "over_time": over_time(results, folder / "over_time.png"),
        "overhead": overhead(results, folder / "overhead.png"),
        "path_length": path_length(results, folder / "path_length.png"),
        "load_cdf": load_cdf(results, folder / "load_cdf.png"),
    }
