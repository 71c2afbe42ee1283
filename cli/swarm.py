"""`vinifera swarm up | status | down`: a local swarm of real daemons."""

from __future__ import annotations

import json
import math
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import click

from vinifera.cli.params import FiniteRange


@click.group("swarm")
def swarm() -> None:
    """Local swarms of vinifera-node daemons (processes, namespaces, containers).

    `up` starts one and runs it to the end; while it runs, `status DIR` shows
    its nodes and `down DIR` stops it. Everything stays in the log folder:
    node logs, manifest.json (settings, measurement window, node table) and
    results.json (the metrics `up` printed). Analyze it with
    `vinifera analyze DIR --out DIR/analysis`.
    """


@swarm.command("up")
@click.option("--nodes", type=click.IntRange(min=1, max=60_000), default=10, show_default=True,
              help="Slots in the swarm: nodes that run at once (with --trace, trace nodes "
              "are mapped onto them).")  # fmt: skip
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
    type=FiniteRange(min=0, min_open=True),
    default=1.0,
    show_default=True,
    help="Replay the trace this many times faster than real time.",
)
@click.option("--start", "start_h", type=FiniteRange(min=0), help="Trace hour to start at.")
@click.option(
    "--end", "end_h", type=FiniteRange(min=0, min_open=True), help="Trace hour to end at."
)
@click.option(
    "--duration",
    type=FiniteRange(min=0),
    default=60.0,
    show_default=True,
    help="Seconds to publish once the overlay has formed (the measurement window is this "
    "minus the 5-period delivery deadline).",
)
@click.option("--events-per-second", type=FiniteRange(min=0), default=2.0, show_default=True,
              help="Events the runner publishes per second, each through a random live "
              "node (0: none).")  # fmt: skip
@click.option("--period", type=FiniteRange(min=0.05), default=0.5, show_default=True,
              help="Gossip period of every node, seconds.")  # fmt: skip
@click.option("--subscriptions", type=click.Choice(["skewed", "random"]), default="skewed",
              show_default=True,
              help="Subscription and event workload (docs/experiments.md): skewed (Zipf-popular "
              "buckets) or random (uniform).")  # fmt: skip
@click.option("--attributes", type=click.IntRange(1, 5), default=1, show_default=True,
              help="Numeric attributes a0, a1, ... each with domain [0, 1000].")  # fmt: skip
@click.option("--seed", type=int, default=1, show_default=True,
              help="Seed of the subscriptions, the events, the publishers and every node's "
              "random choices (each life of a slot gets its own).")  # fmt: skip
@click.option("--loss", type=FiniteRange(0, 1, max_open=True), default=0.0,
              help="netns: drop this fraction of each host's incoming datagrams "
              "(needs iptables).")  # fmt: skip
@click.option("--cut", "cut_spec", metavar="SLOT@SECONDS",
              help="netns: cut host SLOT off the bridge SECONDS into the run.")  # fmt: skip
@click.option("--image", default="vinifera:latest", show_default=True, help="docker: image to run.")
@click.option(
    "--log-dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Where every node's log, stdout, stderr, the manifest and results.json go.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def up(nodes, backend, trace_path, speedup, start_h, end_h, duration, events_per_second,
       period, subscriptions, attributes, seed, loss, cut_spec, image, log_dir,
       as_json) -> None:  # fmt: skip
    """Start a swarm, drive it with the reference workload (and churn from a
    trace), stop it cleanly on completion, Ctrl-C or `swarm down`, and leave
    all logs in --log-dir with results.json (analyze them with `vinifera
    analyze LOG_DIR`)."""
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
            if not math.isfinite(cut[1]) or cut[1] < 0:
                raise ValueError
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
    log_dir = log_dir.resolve()
    _refuse_running(log_dir)
    made_dir = not log_dir.exists()
    log_dir.mkdir(parents=True, exist_ok=True)
    before = set(log_dir.iterdir())
    sockets, temporary = _socket_dir(log_dir, nodes, backend)
    # `swarm down` (SIGTERM) stops the swarm as Ctrl-C does: cleanly.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        if backend == "process":
            b = ProcessBackend(sockets)
        elif backend == "netns":
            b = NetnsBackend(sockets, loss=loss)
        else:
            b = ContainerBackend(sockets, image)
        runner = SwarmRunner(plan, b, log_dir, period=period,
                             events_per_second=events_per_second, info=info)  # fmt: skip
        summary = runner.run(duration, cut=cut)
    except BackendError as err:
        _forget_failed_start(log_dir, before, made_dir)
        raise click.ClickException(str(err)) from None
    finally:
        _remove_sockets(sockets, temporary)
    from vinifera.swarm.results import RESULTS, swarm_metrics, write_results

    try:
        summary["metrics"] = swarm_metrics(log_dir)
    except (OSError, ValueError, KeyError) as err:
        summary["metrics"] = {"error": str(err)}
    summary["results"] = str(log_dir / RESULTS)
    write_results(log_dir, summary)
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo(_result_line(summary))
    if summary["interrupted"] and not _stopped_by_down:
        sys.exit(130)  # Ctrl-C; `swarm down` is a normal stop (exit 0)


_stopped_by_down = False


def _interrupt(signum, frame) -> None:
    global _stopped_by_down
    _stopped_by_down = True
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: let the clean-up finish
    raise KeyboardInterrupt


def _forget_failed_start(log_dir: Path, before: set, made_dir: bool) -> None:
    """A swarm whose backend failed before any node ran leaves nothing: not
    the manifest (which would say a swarm ran there) nor the schema it
    wrote; what was in the folder before stays."""
    new = [p for p in log_dir.iterdir() if p not in before]
    if any(p.suffix == ".jsonl" or p.is_dir() for p in new):
        return  # nodes ran: their logs are the record of what happened
    for p in new:
        p.unlink(missing_ok=True)
    if made_dir and not any(log_dir.iterdir()):
        log_dir.rmdir()


def _result_line(summary: dict) -> str:
    met = summary["metrics"]
    if "error" in met:
        return f"no metrics: {met['error']}; logs in {summary['log_dir']}"
    died = f", {summary['deaths']} died under the runner" if summary["deaths"] else ""
    return (
        f"{summary['nodes']} nodes on {summary['backend']}{died}: "
        f"{met['events_published']} events counted (published "
        f"{met['window_start']:.1f}-{met['window_end']:.1f} s after the start); hit ratio "
        f"{met['hit_ratio']} ({met['delivered_pairs']} of {met['expected_pairs']} expected "
        f"pairs), {met['false_positives']} false positives, {met['duplicates']} duplicates; "
        f"logs and results.json in {summary['log_dir']}"
    )


def _socket_dir(log_dir: Path, nodes: int, backend: str) -> tuple[Path, bool]:
    """(folder of the nodes' control sockets, whether it is a temp folder).
    In the log folder when the paths fit a Unix socket (107 bytes), else in
    a short temp folder (named in the manifest); containers see the log
    folder mounted."""
    from vinifera.swarm.runner import MAX_SOCKET_DIR

    if backend == "docker":
        return log_dir, False
    inside = log_dir / "control"
    if len(str(inside)) + len(f"/n{nodes}.sock") <= MAX_SOCKET_DIR:
        inside.mkdir(exist_ok=True)
        return inside, False
    return Path(tempfile.mkdtemp(prefix="vnf-")), True


def _remove_sockets(sockets: Path, temporary: bool) -> None:
    """Every node has stopped: its socket is stale (a killed node leaves it)."""
    if temporary or sockets.name == "control":
        shutil.rmtree(sockets, ignore_errors=True)
    else:
        for sock in sockets.glob("n*.sock"):
            sock.unlink(missing_ok=True)


def _manifest_of(log_dir: Path) -> dict:
    from vinifera.swarm.runner import MANIFEST, read_manifest

    try:
        return read_manifest(log_dir)
    except FileNotFoundError:
        raise click.UsageError(f"{log_dir}: no {MANIFEST}: not a swarm's log folder") from None
    except (OSError, ValueError) as err:
        raise click.UsageError(f"{log_dir / MANIFEST}: unreadable: {err}") from None


def _refuse_running(log_dir: Path) -> None:
    from vinifera.swarm.control import runner_alive
    from vinifera.swarm.runner import MANIFEST

    if (log_dir / MANIFEST).is_file():
        try:
            manifest = _manifest_of(log_dir)
        except click.UsageError:
            return
        if manifest.get("command") == "sim run":  # its analysis would mix both
            raise click.UsageError(
                f"{log_dir} holds a simulation's logs (sim run): choose another --log-dir"
            )
        if runner_alive(manifest):
            raise click.UsageError(
                f"a swarm is already running in {log_dir} (runner pid "
                f"{manifest['runner_pid']}): `vinifera swarm down {log_dir}` stops it"
            )


_DIR = click.Path(exists=True, file_okay=False, path_type=Path)


@swarm.command("status")
@click.argument("log_dir", metavar="DIR", type=_DIR)
@click.option("--json", "as_json", is_flag=True, help="Print every node's full status as JSON.")
def status(log_dir, as_json) -> None:
    """Show a swarm's live nodes: address, identifier, links, CRT rows and
    counters, asked of each node through its control socket (listed in
    DIR/manifest.json)."""
    from vinifera.swarm.control import runner_alive, swarm_status

    manifest = _manifest_of(log_dir)
    nodes = swarm_status(manifest)
    running = runner_alive(manifest)
    if as_json:
        click.echo(json.dumps({"state": manifest.get("state"), "runner": running,
                               "nodes": nodes}, indent=2))  # fmt: skip
        return
    state = manifest.get("state", "?")
    if not running:
        state = f"{state} (no runner)" if state != "ended" else f"ended {manifest.get('ended')}"
    up = [n for n in nodes if n["status"] is not None]
    click.echo(f"swarm in {log_dir}: {state}; {len(up)} of {len(nodes)} slots answer; "
               f"{manifest.get('events_published', 0)} events published")  # fmt: skip
    if not up:
        return
    header = ("slot", "address", "pid", "id", "succ", "pred", "friends", "sw", "crt",
              "delivered", "received", "bad")  # fmt: skip
    rows = []
    for n in up:
        st = n["status"]
        links, counters = st["links"], st["counters"]
        rows.append((n["slot"], st["address"], n["pid"], st["id"][:8], links["succ"] or "-",
                     links["pred"] or "-", len(links["friends"]), len(links["small_world"]),
                     len(st["crt_rows"]), counters.get("delivered", 0),
                     counters.get("messages_received", 0), counters.get("bad", 0)))  # fmt: skip
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    for row in (header, *rows):
        click.echo("  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)).rstrip())
    silent = [n for n in nodes if n["up"] and n["status"] is None]
    for n in silent:
        click.echo(f"slot {n['slot']} ({n['address']}): listed as up but does not answer "
                   f"({n['error']})")  # fmt: skip


@swarm.command("down")
@click.argument("log_dir", metavar="DIR", type=_DIR)
@click.option("--timeout", type=FiniteRange(min=1), default=60.0, show_default=True,
              help="Seconds to wait for the swarm to stop.")  # fmt: skip
def down(log_dir, timeout) -> None:
    """Stop the swarm running in DIR as Ctrl-C would: the runner stops every
    node (each logs its leave), writes the manifest and results.json. A
    swarm whose runner is gone has its nodes stopped directly."""
    from vinifera.swarm.control import stop_swarm

    manifest = _manifest_of(log_dir)
    try:
        message = stop_swarm(log_dir, manifest, timeout, say=lambda m: click.echo(m, err=True))
    except TimeoutError as err:
        raise click.ClickException(str(err)) from None
    click.echo(message)
