"""`vinifera analyze`: the PySpark analysis of node logs (docs/analysis.md)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from vinifera.cli.params import FINITE, FiniteRange


def _conf(ctx, param, values) -> dict[str, str]:
    conf = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r}: expected KEY=VALUE", ctx=ctx, param=param)
        conf[key.strip()] = value
    return conf


_SECONDS = FiniteRange(min=0, min_open=True)


@click.command("analyze")
@click.argument("logdirs", nargs=-1, required=True, metavar="LOGDIR...")
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the report, plots and tables (created; files in it are replaced).",
)
@click.option(
    "--master",
    help="Spark master URL: local[N], spark://host:port, yarn, k8s://...  "
    "[default: local[*], or what spark-submit set]",
)
@click.option(
    "--window",
    type=_SECONDS,
    help="Width of the time windows, in seconds.  [default: one gossip period from the "
    "manifest (simulator or swarm), else 60]",
)
@click.option(
    "--deadline",
    type=_SECONDS,
    help="Delivery deadline of the hit ratio, in seconds.  [default: the manifest's, else 5]",
)
@click.option(
    "--from",
    "start",
    type=FINITE,
    help="Count events published from this time (seconds after the run's start).  [default: "
    "the manifest's (simulator: the warm-up's end; swarm: when publishing began), else the "
    "first record]",
)
@click.option(
    "--until",
    "end",
    type=FINITE,
    help="... and before this time (seconds after the run's start).  [default: the "
    "manifest's, else the last record minus the deadline]",
)
@click.option(
    "--schema",
    "schema_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="TOML attribute schema (needed only when a log folder has no manifest.json: "
    "simulator and swarm folders carry theirs).",
)
@click.option(
    "--conf",
    multiple=True,
    callback=_conf,
    metavar="KEY=VALUE",
    help="Extra Spark configuration, e.g. --conf spark.driver.memory=8g (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as one JSON object.")
@click.option(
    "--verbose",
    is_flag=True,
    help="Show Spark's own output (JVM warnings, log4j lines) on the terminal instead of "
    "writing it to OUT/spark.log.",
)
def analyze(logdirs, out, master, window, deadline, start, end, schema_path, conf, as_json,
            verbose):  # fmt: skip
    """Compute hit ratio, false positives, duplicates, traffic overhead, path
    length and load from node logs, overall and per time window, with Spark.

    Each LOGDIR holds one run's *.jsonl / *.jsonl.gz logs (a simulator
    --log-dir, or a swarm's folder). Give two (e.g. Vinifera and the
    baseline) to compare them in one report. Prints the report's path.

    Example: vinifera analyze runs/demo/vinifera runs/demo/baseline --out runs/demo/analysis
    """
    from vinifera.analysis import inputs, session

    if master is not None and not session.valid_master(master):
        raise click.BadParameter(
            f"{master!r} is not a Spark master URL (local[*], local[2], spark://host:7077, "
            "yarn, k8s://https://host:443)",
            param_hint="--master",
        )
    if start is not None and end is not None and not end > start:
        raise click.UsageError(f"--until ({end}) must be after --from ({start})")
    try:
        specs = [
            inputs.resolve(
                d,
                schema_path=schema_path,
                start=start,
                end=end,
                deadline=deadline,
                window=window,
            )
            for d in logdirs
        ]
    except inputs.InputError as err:
        raise click.UsageError(str(err)) from None
    specs = inputs.unique_labels(specs)

    def progress(msg: str) -> None:
        click.echo(f"analyze: {msg}", err=True)

    unreachable = session.unreachable_master(master)
    if unreachable is not None:
        raise click.BadParameter(unreachable, param_hint="--master")
    progress("starting Spark (10-15 s)")
    from vinifera.analysis import job

    spark_log = None if verbose else out / "spark.log"
    try:
        spark, ours = session.start(
            master, conf, log=spark_log, input_bytes=inputs.input_bytes(specs)
        )
    except Exception as err:  # noqa: BLE001 - py4j/JVM startup errors have no common type
        where = f"; Spark's output is in {spark_log}" if spark_log else ""
        cause = session.failure_cause(err, spark_log)
        raise click.ClickException(
            f"could not start Spark (master {master}): {cause}{where}"
        ) from None
    from pyspark.errors import AnalysisException

    try:
        report, results = job.analyze(spark, specs, out, progress=progress, master=master)
    except inputs.InputError as err:
        raise click.UsageError(str(err)) from None
    except AnalysisException as err:  # e.g. a remote path that does not exist
        raise click.ClickException(str(err).splitlines()[0]) from None
    finally:
        if ours:
            spark.stop()
    if as_json:
        click.echo(
            json.dumps({"report": str(report), "runs": {r.spec.label: r.summary for r in results}})
        )
        return
    keys = ("hit_ratio", "false_positives", "duplicates", "traffic_overhead", "path_length",
            "load_max", "load_p95", "expected_pairs", "malformed_lines")  # fmt: skip
    from vinifera.analysis.plots import fmt
    from vinifera.measures import digits

    labels = [r.spec.label for r in results]
    click.echo("Spark's analysis of the logs (each metric is defined in docs/metrics.md):")
    click.echo(f"{'metric':<20}" + "".join(f"{label:>14}" for label in labels))
    for k in keys:
        click.echo(f"{k:<20}" + "".join(f"{fmt(r.summary[k], digits(k)):>14}" for r in results))
    click.echo(f"report: {report}")
