"""`vinifera experiment`: the paper's figures, one command each, on local
worker processes or as Spark tasks on a cluster."""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import sys
from pathlib import Path

import click

from vinifera.cli.params import FiniteRange
from vinifera.experiment import figures, params, report, store, sweep
from vinifera.experiment.params import GridError

OUT = Path("runs/experiments")
DOC = Path("docs/evaluation.md")


@click.group()
def experiment() -> None:
    """The paper's evaluation: each figure a declared grid of independent
    simulations (systems x workloads x the figure's parameter x seeds).

    `vinifera experiment list` shows the figures and their grids;
    `vinifera experiment run FIGURE` runs one (resuming where an interrupted
    run stopped) and writes its table, PNG and section of docs/evaluation.md.
    """


@experiment.command("list")
def list_cmd() -> None:
    """List the figures, their parameters and the size of each grid."""
    for fig in figures.FIGURES.values():
        count = len(figures.points(fig.grid))
        click.echo(f"{fig.name}  {fig.title} ({count} simulations)")
        click.echo(f"        the paper: {fig.shows}")
        for name, values in fig.grid.items():
            shown = ", ".join("none" if v is None else str(v) for v in values)
            click.echo(f"        {name:<16} {shown}")


def _changes(fig, opts) -> dict[str, tuple]:
    """Command-line options -> parameter -> values; raises GridError."""
    changes: dict[str, tuple] = {}

    def put(name: str, values: tuple, origin: str) -> None:
        if name in changes:
            raise GridError(f"{origin}: {name} is already set by another option")
        changes[name] = values

    for item in opts["set_values"]:
        name, eq, text = item.partition("=")
        name = name.strip()
        if not eq or not name:
            raise GridError(f"--set {item!r}: expected KEY=VALUE[,VALUE...]")
        if name not in params.PARAMS:
            raise GridError(
                f"--set {item!r}: unknown parameter {name!r}; {fig.name}'s parameters: "
                + ", ".join(fig.params)
            )
        put(name, params.parse_values(name, text), f"--set {item}")
    shorthands = {
        "nodes": "nodes",
        "rounds": "rounds",
        "end_hours": "end",
        "trace": "trace",
    }
    for name, opt in shorthands.items():
        if opts[opt] is not None:
            put(name, params.parse_values(name, opts[opt]), f"--{opt.replace('_', '-')}")
    if opts["seeds"] is not None:
        put("seed", params.parse_seeds(opts["seeds"]), "--seeds")
    if opts["profile"] != "both":
        put("profile", (opts["profile"],), "--profile")
    return changes


def _check_master(master: str) -> None:
    """A usage error for a master URL that is malformed or, for spark://,
    that nothing answers at (before paying for a JVM start)."""
    from vinifera.analysis import session

    if not session.valid_master(master):
        raise click.BadParameter(
            f"{master!r} is not a Spark master URL (local[*], local[2], spark://host:7077, "
            "yarn, k8s://...)",
            param_hint="--master",
        )
    if not master.startswith("spark://"):
        return
    failures = []
    for hostport in master.removeprefix("spark://").split(","):
        host, _, port = hostport.rpartition(":")
        if not host or not port.isdigit():
            raise click.BadParameter(
                f"{master!r}: expected spark://HOST:PORT", param_hint="--master"
            )
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=5):
                return
        except OSError as err:
            failures.append(f"{hostport}: {err.strerror or err}")
    raise click.BadParameter(
        f"cannot reach the Spark master ({'; '.join(failures)})", param_hint="--master"
    )


def _start_spark(master: str, parallel: int | None, timeout: float):
    from vinifera.analysis import session
    from vinifera.experiment.build import source_fingerprint
    from vinifera.experiment.runners import SparkRunner

    # Executors run the Python the driver names; by default ours (a cluster
    # whose workers keep Python elsewhere sets PYSPARK_PYTHON).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    click.echo(f"experiment: starting Spark (master {master})", err=True)
    try:
        # the JVM only hands out tasks (the simulations run in Python): a short job
        conf = {"spark.ui.showConsoleProgress": "false"}
        spark, ours = session.start(master, conf, input_bytes=0)
    except Exception as err:  # noqa: BLE001 - py4j/JVM startup errors have no common type
        raise click.ClickException(f"could not start Spark (master {master}): {err}") from None
    runner = SparkRunner(spark.sparkContext, parallel)
    try:
        identity = runner.probe(timeout)
    except TimeoutError as err:
        _stop(spark, ours)
        raise click.ClickException(
            f"{err}: is a worker registered with {master}, with free cores? "
            "(--spark-timeout to wait longer)"
        ) from None
    if identity["fingerprint"] != source_fingerprint():
        _stop(spark, ours)
        raise click.ClickException(
            f"the Spark workers (e.g. {identity['host']}) run other vinifera sources than "
            "this command: install the same commit on every worker"
        )
    return runner, spark, ours


def _stop(spark, ours: bool) -> None:
    if ours:
        spark.stop()


def _doc_path(opts, plan, out: Path) -> Path:
    if opts["doc"] is not None:
        return opts["doc"]
    if not plan.changes and DOC.parent.is_dir():
        return DOC
    return out / "evaluation.md"  # a changed grid never overwrites the published doc


class _Progress:
    """A bar with an ETA on a terminal (weighted by each point's size), else a line per point."""

    def __init__(self, items: list, todo: list[dict]):
        self.cost = {i.key: i.cost for i in items}
        self.total = len(todo)
        self.done = 0
        self.bar = None
        if sys.stderr.isatty() and todo:
            self.bar = click.progressbar(
                length=int(sum(self.cost[t["key"]] for t in todo)) or 1,
                label="simulating",
                file=sys.stderr,
                show_eta=True,
                show_pos=False,
            )
            self.bar.__enter__()

    def __call__(self, record: dict, result: dict) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(int(self.cost[record["key"]]))
        else:
            click.echo(
                f"experiment: {self.done}/{self.total} done ({record['key'][:8]}, "
                f"{record['wall_seconds']:.1f} s)",
                err=True,
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


def _opt(*names, **kw):
    kw.setdefault("show_default", "default" in kw)
    return click.option(*names, **kw)


@experiment.command("run")
@click.argument("figure_name", metavar="FIGURE")
@_opt(
    "--seeds",
    metavar="N|LIST",
    help="Seeds per point: a count (3 = seeds 1, 2, 3) or a list (4,9).  [default: 3]",
)
@_opt(
    "--profile",
    type=click.Choice(["both", "ours", "paper"]),
    default="both",
    help="Vinifera's configuration: ours, the paper's (uniform identifiers, K_sw = 0, "
    "K_f = ceil(log2 N) - 2), or both side by side.",
)
@_opt("--nodes", metavar="N[,N...]", help="N (a list sweeps it): shorthand for --set nodes=...")
@_opt("--rounds", metavar="R[,R...]", help="Rounds per simulation: shorthand for --set rounds=...")
@_opt(
    "--end",
    metavar="HOURS",
    help="fig5: replay the trace up to this hour (default: the whole month).",
)
@_opt(
    "--trace",
    metavar="PATH",
    help="fig5: the Skype superpeer trace.  [default: ../shared/traces/skype-superpeers.avt "
    "beside the checkout, or the file VINIFERA_SKYPE_TRACE names]",
)
@_opt(
    "--set",
    "set_values",
    multiple=True,
    metavar="KEY=VALUE[,VALUE...]",
    help="Replace a grid parameter's values (repeatable); `vinifera experiment list` "
    "shows each figure's parameters.",
)
@_opt(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    help="Simulations at a time.  [default: the core count; with --master: the cluster's cores]",
)
@_opt(
    "--master",
    metavar="URL",
    help="Run each simulation as a Spark task: spark://host:7077, local[4], yarn...",
)
@_opt(
    "--spark-timeout",
    default=120.0,
    type=FiniteRange(min=1),
    help="With --master: seconds to wait for an executor to take the first task.",
)
@_opt(
    "--out",
    default=OUT,
    type=click.Path(file_okay=False, path_type=Path),
    help="Results (results.jsonl, shared by every figure) and each figure's tables and PNG.",
)
@_opt(
    "--log-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep every simulation's node log and manifest in DIR/<key>/ (with --master: a "
    "path every worker can write).",
)
@_opt(
    "--doc",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The Markdown file to update.  [default: docs/evaluation.md for the declared grid; "
    "OUT/evaluation.md for a changed one]",
)
@_opt("--dry-run", is_flag=True, help="Show the points and which are already done; run nothing.")
def run_cmd(figure_name, **opts) -> None:
    """Run one figure's grid and write its table (CSV, Parquet), PNG and doc section.

    Finished simulations are stored as they finish (OUT/results.jsonl, keyed
    by configuration and commit): after Ctrl-C the same command resumes and
    never recomputes them.

    \b
    Examples:
      vinifera experiment run fig3
      vinifera experiment run fig4a --nodes 1000,2000,5000 --jobs 2
      vinifera experiment run fig5 --end 200 --master spark://head:7077
      vinifera experiment run fig3 --nodes 60 --rounds 20 --seeds 1   # a smoke run
    """
    try:
        fig = figures.figure(figure_name)
        changes = _changes(fig, opts)
    except GridError as err:
        raise click.UsageError(str(err)) from None
    if opts["master"] is not None:
        _check_master(opts["master"])
    commit = store.code_commit()
    try:
        plan = sweep.plan(fig, changes, commit)
    except GridError as err:
        raise click.UsageError(str(err)) from None
    out = opts["out"]
    try:
        results = store.Store(out / "results.jsonl")
    except (OSError, ValueError) as err:
        raise click.ClickException(str(err)) from None
    with results:
        todo = sweep.tasks(plan, results, opts["log_dir"])
        seeds = len(plan.grid["seed"])
        click.echo(
            f"experiment: {fig.name}: {len(plan.items)} simulations ({seeds} seed"
            f"{'s' if seeds != 1 else ''} each), {len(plan.items) - len(todo)} already in "
            f"{results.path}, {len(todo)} to run ({_node_rounds(plan, todo)}); code at {commit}",
            err=True,
        )
        if opts["dry_run"]:
            _show_plan(plan, results)
            return
        runner_name = _run(plan, results, todo, opts)
        _outputs(fig, plan, results, out, runner_name, opts)


def _node_rounds(plan, todo) -> str:
    """The work left, in simulated node-rounds (N x rounds; for a trace, its mean online
    population x rounds): how long it takes is this over the simulator's node-rounds per
    second (benchmarks/sim_throughput.py)."""
    cost = {i.key: i.cost for i in plan.items}
    total = sum(cost[t["key"]] for t in todo)
    return f"{total / 1e6:.3g} million node-rounds" if total >= 1e5 else f"{total:,.0f} node-rounds"


def _show_plan(plan, results) -> None:
    for item in plan.items:
        state = "done" if item.key in results else "todo"
        shown = ", ".join(f"{k}={v}" for k, v in item.point.items() if v is not None)
        click.echo(f"{state}  {item.key[:12]}  {shown}")


def _run(plan, results, todo, opts) -> str:
    from vinifera.experiment.execute import WorkerMismatch
    from vinifera.experiment.runners import LocalRunner

    spark = None
    ours = False
    if opts["master"] is not None:
        runner, spark, ours = _start_spark(opts["master"], opts["jobs"], opts["spark_timeout"])
    else:
        runner = LocalRunner(opts["jobs"] or os.cpu_count() or 1)
    if todo:
        click.echo(f"experiment: running on {runner.describe()}", err=True)
    progress = _Progress(plan.items, todo)
    try:
        sweep.run(plan, results, runner, todo, on_result=progress)
    except KeyboardInterrupt:
        progress.close()
        done = sum(1 for i in plan.items if i.key in results)
        click.echo(
            f"\ninterrupted: {done} of {len(plan.items)} simulations are stored in "
            f"{results.path}; the same command resumes from there",
            err=True,
        )
        sys.exit(130)
    except WorkerMismatch as err:
        raise click.ClickException(str(err)) from None
    except Exception as err:
        if spark is None:
            raise
        raise click.ClickException(f"a Spark task failed: {_spark_error(err)}") from None
    finally:
        progress.close()
        if spark is not None:
            _stop(spark, ours)
    return runner.name


def _spark_error(err: Exception) -> str:
    """The Python error at the end of a Spark task failure's text."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    for line in reversed(lines):
        if "Error" in line or "Exception" in line or "Mismatch" in line:
            return line
    return lines[-1] if lines else type(err).__name__


def _relative(path: Path, doc: Path) -> str:
    return os.path.relpath(path.resolve(), doc.resolve().parent)


def _outputs(fig, plan, results, out: Path, runner_name: str, opts) -> None:
    from vinifera.experiment import plots, table

    rows = sweep.rows(plan, results)
    folder = out / fig.name
    written = table.write_all(fig, rows, folder)
    head = store.head_commit()
    seeds = len(plan.grid["seed"])
    subtitle = (
        f"mean over {seeds} seed{'s' if seeds != 1 else ''}, min–max bars; paper's values in "
        f"black; code {plan.commit}"
    )
    if plan.changes:
        subtitle += "; CHANGED GRID: " + ", ".join(
            f"{k}={report.values_text(v)}" for k, v in plan.changes.items()
        )
    png = plots.draw(fig, rows, folder / f"{fig.name}.png", subtitle)
    doc = _doc_path(opts, plan, out)
    tables = [p for t in written.values() for p in t.values()]
    if doc.resolve() == DOC.resolve():
        # The repository's doc links only what the repository holds: the
        # PNG and the CSVs are copied beside it (Parquet stays in OUT).
        shared = doc.parent / "evaluation"
        shared.mkdir(parents=True, exist_ok=True)
        link_target = shared / png.name
        shutil.copyfile(png, link_target)
        tables = [shutil.copyfile(t["csv"], shared / t["csv"].name) for t in written.values()]
    else:
        link_target = png
    cpu = sum(results.get(i.key)["cpu_seconds"] for i in {i.key: i for i in plan.items}.values())
    info = report.RunInfo(
        command=shlex.join(["vinifera", *sys.argv[1:]]),
        commit=plan.commit,
        head=head,
        runner=runner_name,
        cpu_seconds=cpu,
        points=len({i.key for i in plan.items}),
        seeds=seeds,
        changes=plan.changes,
        png=_relative(link_target, doc),
        tables=", ".join(f"`{_relative(p, doc)}`" for p in tables),
    )
    report.update(doc, fig, report.section(fig, rows, info))
    click.echo(f"table: {written['summary']['csv']} (and .parquet)", err=True)
    click.echo(f"figure: {png}", err=True)
    click.echo(f"doc: {doc}", err=True)
