"""`vinifera`: the simulator, swarms, traces and analysis from one command."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from vinifera import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vinifera")
def main() -> None:
    """Vinifera: content-based publish/subscribe over a subscription-aware overlay.

    Run `vinifera COMMAND --help` for the options of each command.
    """


@main.group()
def sim() -> None:
    """Simulate thousands of nodes in virtual time (same protocol code as the daemon)."""


@sim.command("run")
@click.option(
    "--nodes",
    "-n",
    default=1000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Number of nodes that join at the start.",
)
@click.option(
    "--rounds",
    "-r",
    default=50,
    show_default=True,
    type=click.IntRange(min=1),
    help="Gossip rounds to simulate (one round = one gossip period).",
)
@click.option(
    "--seed",
    "-s",
    default=1,
    show_default=True,
    type=int,
    help="Seed of every random choice: same seed, same result.",
)
@click.option(
    "--friends",
    default=8,
    show_default=True,
    type=click.IntRange(min=0),
    help="K_f: friend links per node (subscription-aware).",
)
@click.option(
    "--small-world",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="K_sw: small-world links per node (besides the 2 ring links).",
)
@click.option(
    "--subscriptions",
    type=click.Choice(["random", "skewed"]),
    default="skewed",
    show_default=True,
    help="Subscription workload (see EXPERIMENTS.md).",
)
@click.option(
    "--attributes",
    "-d",
    default=1,
    show_default=True,
    type=click.IntRange(1, 16),
    help="Number of numeric attributes, each with domain [0, 1000].",
)
@click.option(
    "--kill-fraction",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    help="Crash this fraction of the alive nodes at once (with --kill-at).",
)
@click.option("--kill-at", type=click.IntRange(min=0), help="Round at which to crash them.")
@click.option(
    "--join",
    "join_count",
    type=click.IntRange(min=1),
    help="Join this many extra nodes at once (with --join-at).",
)
@click.option("--join-at", type=click.IntRange(min=0), help="Round at which they join.")
@click.option(
    "--loss",
    default=0.0,
    show_default=True,
    type=click.FloatRange(0, 1, max_open=True),
    help="Probability that a message is lost.",
)
@click.option(
    "--latency",
    default="0.01:0.1",
    show_default=True,
    metavar="MIN:MAX",
    help="One-way latency range in gossip periods.",
)
@click.option(
    "--failure-timeout",
    default=5.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Periods of silence after which a neighbour is dropped.",
)
@click.option(
    "--log-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the JSON-lines node log, manifest and summary here.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
def sim_run(
    nodes,
    rounds,
    seed,
    friends,
    small_world,
    subscriptions,
    attributes,
    kill_fraction,
    kill_at,
    join_count,
    join_at,
    loss,
    latency,
    failure_timeout,
    log_dir,
    as_json,
):
    """Run one simulation and print its summary.

    Example: vinifera sim run --nodes 1000 --rounds 50 --kill-fraction 0.2 --kill-at 50
    """
    from vinifera.protocol.config import OverlayConfig
    from vinifera.sim.config import ChurnStep, SimConfig
    from vinifera.sim.driver import Simulation
    from vinifera.sim.network import NetworkModel

    if (kill_fraction is None) != (kill_at is None):
        raise click.UsageError("--kill-fraction and --kill-at go together")
    if (join_count is None) != (join_at is None):
        raise click.UsageError("--join and --join-at go together")
    try:
        lat_min, lat_max = (float(x) for x in latency.split(":"))
        network = NetworkModel(latency_min=lat_min, latency_max=lat_max, loss=loss)
    except ValueError as err:
        raise click.BadParameter(f"{latency!r}: {err}", param_hint="--latency") from None
    churn = []
    if kill_fraction is not None:
        churn.append(ChurnStep(kill_at, "kill", fraction=kill_fraction))
    if join_count is not None:
        churn.append(ChurnStep(join_at, "join", count=join_count))
    try:
        overlay = OverlayConfig(
            friends=friends,
            small_world=small_world,
            failure_timeout=failure_timeout,
            probe_after=min(2.0, failure_timeout / 2),
        )
        config = SimConfig(
            nodes=nodes,
            rounds=rounds,
            seed=seed,
            subscriptions=subscriptions,
            attributes=attributes,
            overlay=overlay,
            network=network,
            churn=tuple(churn),
        )
    except ValueError as err:
        raise click.UsageError(str(err)) from None

    sim_ = Simulation(config, log_dir=log_dir)
    if log_dir is not None:
        _write_json(
            log_dir / "manifest.json",
            {
                "vinifera": __version__,
                "command": "sim run",
                "argv": sys.argv[1:],
                "config": config.to_dict(),
                "schema": sim_.schema.to_dict(),
            },
        )
    show_bar = not as_json and sys.stderr.isatty()
    done = 0
    try:
        if show_bar:
            with click.progressbar(length=rounds, label="simulating", file=sys.stderr) as bar:
                summary = sim_.run(progress=lambda r: bar.update(1))
        else:

            def note(r):
                nonlocal done
                done = r + 1

            summary = sim_.run(progress=note)
    except KeyboardInterrupt:
        where = f"; the log so far is in {log_dir}" if log_dir else ""
        click.echo(f"interrupted after {done} of {rounds} rounds{where}", err=True)
        sys.exit(130)
    if log_dir is not None:
        stable = {
            k: v for k, v in summary.items() if k not in ("wall_seconds", "node_rounds_per_second")
        }
        _write_json(log_dir / "summary.json", stable)
    if as_json:
        click.echo(json.dumps(summary))
    else:
        width = max(len(k) for k in summary)
        for key, value in summary.items():
            click.echo(f"{key:<{width}}  {value}")


def _write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
