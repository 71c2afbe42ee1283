"""PNG plots of the aggregated results, every run on the same axes (so
Vinifera and the baseline sit side by side). Headless: the Agg backend."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on servers and CI; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402

_DPI = 110


def _times(result) -> list[float]:
    """Window midpoints."""
    return [(w["start"] + w["end"]) / 2 for w in result.windows]


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=_DPI)
    plt.close(fig)
    return path


def hit_ratio(results, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    size = ax.twinx()
    for r in results:
        x = _times(r)
        (line,) = ax.plot(x, [w["hit_ratio"] for w in r.windows], marker=".", label=r.spec.label)
        size.plot(
            x,
            [w["alive_nodes"] for w in r.windows],
            linestyle="--",
            color=line.get_color(),
            alpha=0.6,
            label=f"{r.spec.label}: alive nodes",
        )
    ax.set_xlabel("time (s; simulator: rounds)")
    ax.set_ylabel("hit ratio (solid)")
    ax.set_ylim(-0.02, 1.05)
    size.set_ylabel("alive nodes at window start (dashed)")
    size.set_ylim(bottom=0)
    ax.set_title("Hit ratio and network size over time")
    lines = ax.get_legend_handles_labels()
    more = size.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], loc="lower left", fontsize="small")
    ax.grid(alpha=0.3)
    return _save(fig, path)


def overhead(results, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for r in results:
        ax.plot(
            _times(r), [w["traffic_overhead"] for w in r.windows], marker=".", label=r.spec.label
        )
    ax.set_xlabel("time (s; simulator: rounds)")
    ax.set_ylabel("traffic overhead")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("Traffic overhead over time (messages to uninterested nodes / all)")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
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
        mean = r.summary["path_length"]
        ax.bar(
            xs, [c / total for _, c in r.hops], width=width, label=f"{r.spec.label} (mean {mean})"
        )
    ax.set_xlabel("hops from publisher to subscriber")
    ax.set_ylabel("fraction of delivered pairs")
    ax.set_title("Delivery path length")
    ax.legend(fontsize="small")
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
        ax.step(
            xs,
            ys,
            where="post",
            label=f"{r.spec.label} (max {r.summary['load_max']}, p95 {r.summary['load_p95']})",
        )
    ax.set_xlabel("load: events forwarded / events published")
    ax.set_ylabel("fraction of nodes")
    ax.set_ylim(0, 1.02)
    ax.set_title("Load distribution (CDF)")
    ax.legend(fontsize="small", loc="lower right")
    ax.grid(alpha=0.3)
    return _save(fig, path)


def draw(results, folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return {
        "hit_ratio": hit_ratio(results, folder / "hit_ratio.png"),
        "overhead": overhead(results, folder / "overhead.png"),
        "path_length": path_length(results, folder / "path_length.png"),
        "load_cdf": load_cdf(results, folder / "load_cdf.png"),
    }
