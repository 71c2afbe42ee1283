"""`vinifera swarm up`: a local swarm of real daemons in one command."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import click


@click.group("swarm")
def swarm() -> None:
    """Local swarms of vinifera-node daemons (processes, namespaces, containers)."""


@swarm.command("up")
@click.option("--nodes", type=click.IntRange(min=1, max=60_000), default=10, show_default=True)
@click.option(
    "--backend",
    type=click.Choice(["process", "netns", "docker"]),
    default="process",
    show_default=True,
    help="process: one process per node on its own 127.1.x.y address; netns: one network "
    "namespace per node on a bridge (root); docker: one container per node.",
)
@click.option(
    "--trace",
    "trace_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Churn trace (.avt/.evt) to replay: trace nodes are mapped onto the N slots.",
)
@click.option(
    "--speedup",
    type=click.FloatRange(min=0, min_open=True),
    default=1.0,
    show_default=True,
    help="Replay the trace this many times faster than real time.",
)
@click.option("--start", "start_h", type=click.FloatRange(min=0), help="Trace hour to start at.")
@click.option(
    "--end", "end_h", type=click.FloatRange(min=0, min_open=True), help="Trace hour to end at."
)
@click.option(
    "--duration",
    type=click.FloatRange(min=0),
    default=60.0,
    show_default=True,
    help="Seconds to run once the overlay has formed.",
)
@click.option("--events-per-second", type=click.FloatRange(min=0), default=2.0, show_default=True)
@click.option("--period", type=click.FloatRange(min=0.05), default=0.5, show_default=True,
              help="Gossip period of every node, seconds.")  # fmt: skip
@click.option("--subscriptions", type=click.Choice(["skewed", "random"]), default="skewed",
              show_default=True)  # fmt: skip
@click.option("--attributes", type=click.IntRange(1, 5), default=1, show_default=True)
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--loss", type=click.FloatRange(0, 1, max_open=True), default=0.0,
              help="netns: drop this fraction of each host's incoming datagrams.")  # fmt: skip
@click.option("--cut", "cut_spec", metavar="SLOT@SECONDS",
              help="netns: cut host SLOT off the bridge SECONDS into the run.")  # fmt: skip
@click.option("--image", default="vinifera:latest", show_default=True, help="docker: image to run.")
@click.option(
    "--log-dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Where every node's log, stdout, stderr and the run manifest go.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def up(nodes, backend, trace_path, speedup, start_h, end_h, duration, events_per_second,
       period, subscriptions, attributes, seed, loss, cut_spec, image, log_dir,
       as_json) -> None:  # fmt: skip
    """Start a swarm, drive it with the reference workload (and churn from a
    trace), stop it cleanly on completion or Ctrl-C, and leave all logs in
    --log-dir (analyze them with `vinifera analyze`)."""
    from vinifera.churn_traces import TraceError, read_trace, window
    from vinifera.swarm.backends import BackendError, ContainerBackend, NetnsBackend, ProcessBackend
    from vinifera.swarm.plan import make_plan
    from vinifera.swarm.runner import SwarmRunner

    cut = None
    if cut_spec is not None:
        if backend != "netns":
            raise click.UsageError("--cut needs --backend netns")
        try:
            slot_text, at_text = cut_spec.split("@")
            cut = (int(slot_text), float(at_text))
        except ValueError:
            raise click.BadParameter(
                "expected SLOT@SECONDS, e.g. 3@20", param_hint="--cut"
            ) from None
        if not 0 <= cut[0] < nodes:
            raise click.BadParameter(
                f"slot {cut[0]} is not one of 0..{nodes - 1}", param_hint="--cut"
            )
    if loss and backend != "netns":
        raise click.UsageError("--loss needs --backend netns")
    trace = None
    info: dict = {"trace": None}
    if trace_path is not None:
        try:
            trace = read_trace(trace_path)
            if start_h is not None or end_h is not None:
                s = round((start_h or 0) * 3600)  # as `trace filter` and `sim run` do
                e = None if end_h is None else round(end_h * 3600)
                trace = window(trace, s, e)
        except (TraceError, ValueError) as err:
            raise click.UsageError(str(err)) from None
        info["trace"] = {"path": str(trace_path), "start_hours": start_h, "end_hours": end_h,
                         "speedup": speedup}  # fmt: skip
    elif start_h is not None or end_h is not None:
        raise click.UsageError("--start/--end select a window of --trace")
    plan = make_plan(nodes, seed, subscriptions, attributes, trace, speedup, duration)
    if not plan.initially_up:
        raise click.UsageError("no node of the trace is up at its start; choose another --start")
    log_dir.mkdir(parents=True, exist_ok=True)
    # Unix socket paths are short (108 bytes): keep them in a short temp dir,
    # except for containers, which see the log folder mounted.
    sockets = log_dir.resolve() if backend == "docker" else Path(tempfile.mkdtemp(prefix="vnf-"))
    try:
        if backend == "process":
            b = ProcessBackend(sockets)
        elif backend == "netns":
            b = NetnsBackend(sockets, loss=loss)
        else:
            b = ContainerBackend(sockets, image)
        runner = SwarmRunner(plan, b, log_dir.resolve(), period=period,
                             events_per_second=events_per_second, info=info)  # fmt: skip
        summary = runner.run(duration, cut=cut)
    except BackendError as err:
        raise click.ClickException(str(err)) from None
    from vinifera.swarm.results import swarm_metrics

    try:
        summary["metrics"] = swarm_metrics(log_dir.resolve())
    except (OSError, ValueError) as err:
        summary["metrics"] = {"error": str(err)}
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        met = summary["metrics"]
        click.echo(f"{summary['nodes']} nodes on {summary['backend']}: "
                   f"{summary['events_published']} events published; hit ratio "
                   f"{met.get('hit_ratio')} over {met.get('expected_pairs')} expected pairs, "
                   f"{met.get('false_positives')} false positives, "
                   f"{met.get('duplicates')} duplicates; logs in {log_dir}")  # fmt: skip
    if summary["interrupted"]:
        sys.exit(130)
