"""`vinifera`: the simulator, swarms, traces and analysis from one command."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import click

from vinifera import __version__
from vinifera.cli.analyze import analyze
from vinifera.cli.experiment import experiment
from vinifera.cli.params import FiniteRange
from vinifera.cli.progress import RoundProgress
from vinifera.cli.swarm import swarm
from vinifera.cli.trace import trace
from vinifera.protocol.config import PROFILES

_OURS, _BASE = PROFILES["vinifera"], PROFILES["baseline"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vinifera")
def main() -> None:
    """Vinifera: content-based publish/subscribe over a subscription-aware overlay.

    Run `vinifera COMMAND --help` for the options of each command.
    """


main.add_command(trace)
main.add_command(analyze)
main.add_command(swarm)
main.add_command(experiment)


@main.group()
def sim() -> None:
    """Simulate thousands of nodes in virtual time (same protocol code as the daemon)."""


def _opt(*names, **kw):
    kw.setdefault("show_default", "default" in kw)
    return click.option(*names, **kw)


@sim.command("run")
@_opt(
    "--nodes",
    "-n",
    default=1000,
    type=click.IntRange(min=1),
    help="Number of nodes that join at the start.",
)
@_opt(
    "--rounds",
    "-r",
    default=50,
    type=click.IntRange(min=1),
    help="Gossip rounds to simulate (one round = one gossip period).",
)
@_opt(
    "--seed", "-s", default=1, type=int, help="Seed of every random choice: same seed, same result."
)
@_opt(
    "--system",
    type=click.Choice(tuple(PROFILES)),
    default="vinifera",
    help="The system's profile (vinifera/protocol/config.py); the options below change it. "
    + " ".join(f"{p.name}: {p.about}" for p in PROFILES.values()),
)
@_opt(
    "--friends",
    type=click.IntRange(min=0),
    help=f"K_f: friend links per node.  [default: {_OURS.friends}; baseline: {_BASE.friends}; "
    "paper: ceil(log2 N) - 2]",
)
@_opt(
    "--small-world",
    type=click.IntRange(min=0),
    help="K_sw: small-world links besides the 2 ring links.  "
    f"[default: {_OURS.small_world}; baseline: {_BASE.small_world}; paper: 0]",
)
@_opt(
    "--subscriptions",
    type=click.Choice(["random", "skewed"]),
    default="skewed",
    help="Subscription workload (docs/experiments.md).",
)
@_opt(
    "--attributes",
    "-d",
    default=1,
    type=click.IntRange(1, 16),
    help="Number of numeric attributes, each with domain [0, 1000].",
)
@_opt(
    "--events-per-round",
    "-e",
    default=10.0,
    type=FiniteRange(min=0),
    help="Events published per round by random alive nodes (0: none).",
)
@_opt(
    "--warmup",
    type=click.IntRange(min=0),
    help="Rounds before the measurement window.  [default: half the run, at most 50]",
)
@_opt(
    "--deadline",
    default=5.0,
    type=FiniteRange(min=0, min_open=True),
    help="Delivery deadline of the hit ratio, in rounds.",
)
@_opt(
    "--capacity",
    type=click.IntRange(min=1),
    help="Congestion model: event messages a node handles per round; the rest drop.",
)
@_opt(
    "--no-balancing",
    is_flag=True,
    help="Turn balancing off: Karger-Ruhl identifier moves and push shedding.",
)
@_opt(
    "--no-push-shedding",
    is_flag=True,
    help="Balance by identifier moves only: busy nodes keep pushing.",
)
@_opt(
    "--no-push",
    is_flag=True,
    help="Vinifera without pushing events straight to interested links (tree only).",
)
@_opt(
    "--push-fanout",
    type=click.IntRange(min=1),
    help="Push each event to at most this many interested links.  [default: every "
    "matching link of a node that pushes]",
)
@_opt(
    "--set",
    "content_set",
    multiple=True,
    metavar="NAME=VALUE",
    help="Set any option of ContentConfig (delivery) or OverlayConfig (links) in "
    "vinifera/protocol/config.py, e.g. --set push_from=any --set push_max_hops=none "
    "--set route_lookahead=false --set ring_backups=2; "
    "values: true, false, none, numbers or words.  Repeat for several.",
)
@_opt(
    "--tman-backoff",
    type=click.IntRange(min=1),
    help="While its ring and friend links hold, a node's active T-Man exchange "
    "backs off to one in this many periods (doubling; a change of them resets it).  "
    "[default: 1]",
)
@_opt(
    "--row-overshoot",
    type=click.IntRange(min=0),
    help="Route a subscription row's key past it, to come back, only to a known node "
    "this many times nearer it than the one before it: 0 clockwise as Chord, 1 the "
    "nearest either side; 16 measured best (docs/protocol.md, Range routing).  "
    "[default: 16; baseline: 0]",
)
@_opt(
    "--small-world-aim",
    type=click.IntRange(0, 8),
    help="Once its identifier sample is full, a node's small-world slot keeps the "
    "point it aims at while the sample ranks it within this many octaves of the rank "
    "it was drawn for; 0 aims afresh every period, as before (docs/protocol.md, "
    "Small-world links in rank space).  [default: 2]",
)
@_opt(
    "--arrival-route-gap",
    type=FiniteRange(min=0.0, max=1.0),
    help="Subscription rows arriving within this many periods of the last re-route "
    "an arrival caused wait for the next one (a later arrival or the period's tick), "
    "so that a burst of rows is re-routed once; 0 re-routes at every arrival.  "
    "[default: 0.5]",
)
@_opt(
    "--kill-fraction",
    type=FiniteRange(0, 1, min_open=True, max_open=True),
    help="Crash this fraction of the alive nodes at once (with --kill-at).",
)
@_opt("--kill-at", type=click.IntRange(min=0), help="Round at which to crash them.")
@_opt(
    "--join",
    "join_count",
    type=click.IntRange(min=1),
    help="Join this many extra nodes at once (with --join-at).",
)
@_opt("--join-at", type=click.IntRange(min=0), help="Round at which they join.")
@_opt(
    "--loss",
    default=0.0,
    type=FiniteRange(0, 1, max_open=True),
    help="Probability that a message is lost.",
)
@_opt(
    "--latency",
    default="0.01:0.1",
    metavar="MIN:MAX",
    help="One-way latency range in gossip periods.",
)
@_opt(
    "--failure-timeout",
    default=5.0,
    type=FiniteRange(min=0, min_open=True),
    help="Periods of silence after which a neighbour is dropped.",
)
@_opt(
    "--trace",
    "trace_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Replay this churn trace (.avt/.evt): nodes join and depart as it says; "
    "--nodes and --rounds then come from the trace.",
)
@_opt(
    "--round-seconds",
    type=FiniteRange(min=0, min_open=True),
    help="With --trace: trace seconds per round (one gossip period).  [default: 120]",
)
@_opt(
    "--start",
    "start_h",
    type=FiniteRange(min=0),
    help="With --trace: replay from this hour of the trace (times re-based to 0).",
)
@_opt(
    "--end",
    "end_h",
    type=FiniteRange(min=0, min_open=True),
    help="With --trace: replay up to this hour of the trace.",
)
@_opt(
    "--glitches",
    type=click.Choice(["keep", "filter"]),
    help="With --trace: keep one-probe mass leave-and-return glitches as measured, or "
    "merge them back into single sessions.  [default: keep]",
)
@_opt(
    "--departures",
    type=click.Choice(["crash", "leave"]),
    help="With --trace: a trace departure is a crash (silent) or a graceful leave.  "
    "[default: crash]",
)
@_opt(
    "--measure-from",
    "measure_from_h",
    type=FiniteRange(min=0),
    help="With --trace: count events published from this hour of the replay on.  "
    "[default: the end of a start-up flash crowd rounded up to the hour (Skype: 4 h), "
    "else the usual warm-up]",
)
@_opt(
    "--log-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the JSON-lines node log, manifest and summary here.",
)
@_opt(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Processes to run the nodes on (each takes an arc of the ring): the same "
    "result and log as one process, in less wall time on several cores.",
)
@_opt(
    "--limits",
    is_flag=True,
    help="Also print what no routing over the run's final links could beat: the "
    "shortest route to each event's rendezvous, the direct shortest path and the "
    "shortest through the rendezvous, over the same events and pairs "
    "(vinifera/sim/limits.py; one worker, a few seconds per thousand nodes).",
)
@_opt(
    "--force",
    is_flag=True,
    help="Replace the run a --log-dir already holds (without it, such a folder is refused).",
)
@_opt("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
def sim_run(**opts) -> None:
    """Run one simulation and print its summary.

    Prints the overlay measurements and, when events are published, the
    metrics of docs/experiments.md over the measurement window: hit_ratio,
    false_positives, duplicates, traffic_overhead, path_length, load_max,
    load_p95, events_published, expected_pairs.

    Example: vinifera sim run --nodes 1000 --rounds 100 --system baseline --json
    """
    from dataclasses import replace

    from vinifera.gcpolicy import spare_the_exit
    from vinifera.schema import Schema
    from vinifera.sim.parallel import run_parallel

    config = _sim_config(**opts)
    log_dir, as_json, rounds = opts["log_dir"], opts["as_json"], config.rounds
    workers = opts["workers"]
    if workers > config.nodes:
        raise click.UsageError(
            f"--workers {workers} is more than the {config.nodes} nodes (each worker runs an arc "
            "of the ring)"
        )
    if workers > 1:
        import resource

        files = workers * (workers - 1) + 64  # a socket pair per two workers, and some
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and files > soft:
            raise click.UsageError(
                f"--workers {workers} needs about {files} open files; the limit here is {soft} "
                "(ulimit -n)"
            )
    if workers > 1 and config.network.latency_min <= 0:
        raise click.UsageError("--workers above 1 needs a minimum --latency above 0")
    if opts["limits"] and workers > 1:
        raise click.UsageError("--limits needs one worker (it reads every node's links)")
    if opts["limits"] and config.events_per_round <= 0:
        raise click.UsageError("--limits needs events (--events-per-round above 0)")
    for step in config.churn:
        if step.round >= rounds:
            flag = "--join-at" if step.kind == "join" else "--kill-at"
            raise click.UsageError(f"{flag} {step.round} is past the last round ({rounds - 1})")
    if config.replay is None and config.events_per_round > 0 and not as_json:
        need = rounds  # the fewest rounds whose window (warm-up to deadline) is not empty
        while need - config.deadline_rounds <= replace(config, rounds=need).warmup:
            need += 1
        if need > rounds:
            click.echo(
                f"nothing will be measured: events count from round {config.warmup} (the "
                f"warm-up) until {config.deadline_rounds:g} rounds (the delivery deadline) "
                f"before the end; run {need} rounds or more, or a shorter --warmup",
                err=True,
            )
    if config.replay is not None and not as_json:
        r = config.replay.to_dict()
        mh = r["measure_from_hours"]
        measuring = f"from {mh:.2f} h" if mh is not None else f"after {config.warmup} rounds"
        click.echo(
            f"replaying {r['trace']}: {r['trace_nodes']} nodes, "
            f"{r['trace_seconds'] / 3600:.2f} h at {r['round_seconds']:g} s per round "
            f"= {r['rounds']} rounds; glitches {r['glitches']}; departures "
            f"{r['departures']}; measuring {measuring}",
            err=True,
        )
    if log_dir is not None and (log_dir / "manifest.json").exists() and not opts["force"]:
        try:
            what = json.loads((log_dir / "manifest.json").read_text()).get("command", "a run")
        except (OSError, ValueError, AttributeError):
            what = "a run"
        if isinstance(what, list):  # a swarm's manifest keeps its argv
            what = "swarm up" if "swarm" in what else "a run"
        raise click.UsageError(
            f"{log_dir} already holds {what}'s logs: choose another --log-dir, or add --force "
            "to replace them"
        )
    if log_dir is not None:
        _write_json(
            log_dir / "manifest.json",
            {
                "vinifera": __version__,
                "command": "sim run",
                "argv": sys.argv[1:],
                "config": config.to_dict(),
                "schema": Schema.numeric(config.attributes).to_dict(),
            },
        )
    progress = RoundProgress(rounds)
    done = 0

    def note(r: int) -> None:
        nonlocal done
        done = r + 1
        progress.update(done)

    def simulate(progress) -> dict:
        if not opts["limits"]:  # (one worker: run_parallel is Simulation.run)
            return run_parallel(config, workers, log_dir, progress)
        from vinifera.sim.driver import Simulation
        from vinifera.sim.limits import path_limits

        sim = Simulation(config, log_dir=log_dir)
        return {**sim.run(progress), **path_limits(sim)}

    try:
        try:
            summary = simulate(note)
        finally:
            progress.close()
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
        if log_dir is not None:
            click.echo(f"\nlogs in {log_dir}; metrics: vinifera analyze {log_dir} --out "
                       f"{log_dir / 'analysis'}")  # fmt: skip
    spare_the_exit()


TRACE_ONLY = ("round_seconds", "start_h", "end_h", "glitches", "departures", "measure_from_h")
NOT_WITH_TRACE = ("nodes", "rounds", "warmup", "kill_fraction", "kill_at", "join_count", "join_at")


def _option_name(key: str) -> str:
    ctx = click.get_current_context()
    for param in ctx.command.params:
        if param.name == key:
            return param.opts[0]
    return key


def _given(key: str) -> bool:
    """Whether the user set the option (rather than its default)."""
    source = click.get_current_context().get_parameter_source(key)
    return source is not None and source is not click.core.ParameterSource.DEFAULT


def _trace_replay(o):
    """--trace and its options -> TraceReplay (None without --trace)."""
    from vinifera.sim.replay import TraceInputError, load_replay

    path = o["trace_file"]
    if path is None:
        for key in TRACE_ONLY:
            if o[key] is not None:
                raise click.UsageError(f"{_option_name(key)} needs --trace")
        return None
    for key in NOT_WITH_TRACE:
        if _given(key):
            raise click.UsageError(f"{_option_name(key)} does not go with --trace (the trace says)")
    try:
        return load_replay(
            path,
            round_seconds=o["round_seconds"] or 120.0,
            start_hours=o["start_h"],
            end_hours=o["end_h"],
            glitches=o["glitches"] or "keep",
            departures=o["departures"] or "crash",
            measure_from_hours=o["measure_from_h"],
            deadline_rounds=o["deadline"],
            publishing=o["events_per_round"] > 0,
        )
    except TraceInputError as err:
        if err.unreadable:
            raise click.BadParameter(str(err), param_hint="--trace") from None
        raise click.UsageError(str(err)) from None


def _sim_config(**o):
    """Command-line options -> SimConfig, with usage errors for bad combinations."""
    from dataclasses import fields, replace

    from vinifera.protocol.config import OverlayConfig, profile, settings_of
    from vinifera.sim.config import ChurnStep, SimConfig
    from vinifera.sim.network import NetworkModel

    replay = _trace_replay(o)
    if (o["kill_fraction"] is None) != (o["kill_at"] is None):
        raise click.UsageError("--kill-fraction and --kill-at go together")
    if (o["join_count"] is None) != (o["join_at"] is None):
        raise click.UsageError("--join and --join-at go together")
    lo, sep, hi = o["latency"].partition(":")
    try:
        if not sep:
            raise ValueError("expected MIN:MAX in gossip periods, e.g. 0.01:0.1 (or 0.05:0.05)")
        try:
            lat_min, lat_max = float(lo), float(hi)
        except ValueError:
            raise ValueError(
                "MIN and MAX must be numbers of gossip periods, e.g. 0.01:0.1"
            ) from None
        if not (math.isfinite(lat_min) and math.isfinite(lat_max)):
            raise ValueError("MIN and MAX must be finite")
        network = NetworkModel(latency_min=lat_min, latency_max=lat_max, loss=o["loss"])
    except ValueError as err:
        raise click.BadParameter(f"{o['latency']!r}: {err}", param_hint="--latency") from None
    churn = []
    if o["kill_fraction"] is not None:
        churn.append(ChurnStep(o["kill_at"], "kill", fraction=o["kill_fraction"]))
    if o["join_count"] is not None:
        churn.append(ChurnStep(o["join_at"], "join", count=o["join_count"]))
    base = profile(o["system"])  # the system's profile; the options below change it
    if base.links_by_size:  # the paper's K_f = ceil(log2 N) - 2, N the mean online under a trace
        from vinifera.experiment.trace import time_averaged_size

        base = base.for_size(o["nodes"] if replay is None else time_averaged_size(replay.trace))
    content = base.content
    try:
        overlay = base.overlay.with_(
            friends=base.friends if o["friends"] is None else o["friends"],
            small_world=base.small_world if o["small_world"] is None else o["small_world"],
            failure_timeout=o["failure_timeout"],
            probe_after=min(base.overlay.probe_after, o["failure_timeout"] - 1),
            tman_backoff_max=o["tman_backoff"] or base.overlay.tman_backoff_max,
            small_world_aim_octaves=base.overlay.small_world_aim_octaves
            if o["small_world_aim"] is None
            else o["small_world_aim"],
        )
        content = replace(
            content,
            capacity=o["capacity"],
            balancing=content.balancing and not o["no_balancing"],
            shed_pushes=content.shed_pushes and not o["no_push_shedding"],
            push=content.push and not o["no_push"],
            push_fanout=o["push_fanout"] or content.push_fanout,
            rows_overshoot=content.rows_overshoot
            if o["row_overshoot"] is None
            else o["row_overshoot"],
            arrival_route_gap=content.arrival_route_gap
            if o["arrival_route_gap"] is None
            else o["arrival_route_gap"],
        )
        # --set reaches ContentConfig and OverlayConfig (no field name is in both)
        in_overlay = {f.name for f in fields(OverlayConfig)}
        pairs = o["content_set"]
        overlay_pairs = [p for p in pairs if p.partition("=")[0].strip() in in_overlay]
        try:
            content = replace(
                content,
                **settings_of(
                    content, [p for p in pairs if p not in overlay_pairs], also=sorted(in_overlay)
                ),
            )
            overlay = replace(overlay, **settings_of(overlay, overlay_pairs))
        except ValueError as err:
            raise click.BadParameter(str(err), param_hint="--set") from None
        common = dict(
            seed=o["seed"],
            system=base.system,
            subscriptions=o["subscriptions"],
            attributes=o["attributes"],
            overlay=overlay,
            content=content,
            network=network,
            churn=tuple(churn),
            events_per_round=o["events_per_round"],
            deadline_rounds=o["deadline"],
        )
        if replay is not None:
            common.pop("system")
            return SimConfig.for_trace(replay, base.system, **common)
        return SimConfig(nodes=o["nodes"], rounds=o["rounds"], warmup_rounds=o["warmup"], **common)
    except ValueError as err:
        raise click.UsageError(str(err)) from None


def _write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def entry() -> None:
    """The `vinifera` command. Simulations and experiments get huge pages
    for their heap first (vinifera/hugepages.py: the process restarts
    itself once); tests call `main` itself, which never restarts."""
    if sys.argv[1:2] in (["sim"], ["experiment"]):
        from vinifera.hugepages import restart_with_huge_pages

        restart_with_huge_pages()
    main()


if __name__ == "__main__":
    entry()
