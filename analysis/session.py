"""Starting Spark: local[*] by default, any cluster with a master URL, or
whatever spark-submit set up."""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

from pyspark.sql import SparkSession

# What `--master` accepts (Spark's own forms); anything else is a typo we
# can report before paying for a JVM start.
_MASTER = re.compile(
    r"local(\[(\*|[1-9]\d*)(,\s*[1-9]\d*)?\])?|local-cluster\[.+\]|(spark|k8s|mesos)://.+|yarn"
)
_LOG4J = Path(__file__).with_name("log4j2.properties")
# Every query is new generated code, and HotSpot's optimizing compiler (C2)
# took a third of the driver's CPU on 10 M records. Higher C2 thresholds
# compile only what is really hot: 111 -> 94 CPU-s for a first analysis
# of 10 M records, 37 -> 32 from the store (docs/analysis.md). (C1 only
# compiles far less but its code is slower: 180 and 47.)
_JIT = " ".join(
    f"-XX:Tier4{name}Threshold={n}"
    for name, n in (("Invocation", 50000), ("MinInvocation", 20000), ("Compile", 60000))
)
# A short job (small logs, an experiment's task bookkeeping) never runs
# long enough to repay C2's compiling: C1 only, and the serial collector.
# On the tests' hand-made logs 110 -> 63 CPU-s (JVM and driver), on 66 MB
# of synthetic logs 134 -> 88; at 254 MB the two are even (C1's slower
# code costs what its compiling saves), at 1.3 GB C1 loses (above). Inputs
# below SMALL_INPUT bytes count as small.
_JIT_SHORT = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
SMALL_INPUT = 64 * 2**20


def valid_master(master: str) -> bool:
    return _MASTER.fullmatch(master) is not None


def under_spark_submit() -> bool:
    """spark-submit starts the JVM first and hands PySpark its gateway."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def start(
    master: str | None = None,
    conf: dict[str, str] | None = None,
    log: Path | None = None,
    input_bytes: int | None = None,
) -> tuple[SparkSession, bool]:
    """(session, whether we started it). An already active session (a test
    fixture, a notebook) is reused and must not be stopped by us. `log`:
    a file for everything the JVM prints (the incubator-module warning,
    log4j's lines), kept off the user's terminal. `input_bytes`: how much
    the session will read, if known; a small input gets a JVM tuned for a
    short job (java_options)."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    conf = dict(conf or {})
    builder = SparkSession.builder.appName("vinifera-analyze")
    if master is None and not under_spark_submit():
        master = "local[*]"
    if master is not None:
        builder = builder.master(master)
    if master is not None and master.startswith("local"):
        # One machine: no web UI (it would bind a port), fewer shuffle
        # partitions than the cluster default of 200, a heap for caching.
        conf.setdefault("spark.ui.enabled", "false")
        conf.setdefault("spark.sql.shuffle.partitions", str(max(4, 2 * (os.cpu_count() or 1))))
        conf.setdefault("spark.driver.memory", "2g")
    conf.setdefault("spark.ui.showConsoleProgress", "false")
    if not under_spark_submit():  # spark-submit has started the driver JVM already
        conf.setdefault("spark.driver.extraJavaOptions", java_options(input_bytes))
    for key, value in conf.items():
        builder = builder.config(key, value)
    if log is not None and not under_spark_submit():
        _launch_jvm_quietly(master, conf, log)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session, True


def unreachable_master(master: str | None, timeout: float = 3.0) -> str | None:
    """For a standalone master (spark://host:port, or several for high
    availability): why none of them accepts a connection, or None when one
    does (or the master is not a standalone one). Spark itself would retry
    its registration for about a minute and then fail with a Java stack."""
    if master is None or not master.startswith("spark://"):
        return None
    reasons = []
    for hostport in master[len("spark://") :].split(","):
        host, _, port = hostport.rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
                return None
        except (OSError, ValueError) as err:
            reasons.append(f"{hostport}: {getattr(err, 'strerror', None) or err}")
    return "no Spark master answers (" + "; ".join(reasons) + ")"


def failure_cause(err: BaseException, log: Path | None) -> str:
    """One line for a Spark start-up failure: the JVM's own cause where its
    log names one (e.g. "All masters are unresponsive"), else the first
    line of the error."""
    if log is not None:
        try:
            lines = log.read_text(errors="replace").splitlines()
        except OSError:
            lines = []
        for line in reversed(lines):
            if "All masters are unresponsive" in line or "Exception:" in line:
                return line.split(" ERROR ")[-1].strip()[:300]
    first = str(err).strip().splitlines()
    return (first[0] if first else type(err).__name__)[:300]


def java_options(input_bytes: int | None) -> str:
    """The driver JVM's options: our log4j set-up, and the JIT policy for
    the input's size (None: unknown, so large)."""
    short = input_bytes is not None and input_bytes < SMALL_INPUT
    return f"-Dlog4j2.configurationFile={_LOG4J} {_JIT_SHORT if short else _JIT}"


def _launch_jvm_quietly(master: str | None, conf: dict[str, str], log: Path) -> None:
    """Start the driver JVM as PySpark would, with its stderr in `log`."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:  # a JVM from an earlier session: reuse it
        return
    sconf = SparkConf(loadDefaults=False).setAppName("vinifera-analyze")
    if master is not None:
        sconf.setMaster(master)
    for key, value in conf.items():
        sconf.set(key, value)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as fh:  # the JVM keeps its own descriptor
        gateway = launch_gateway(sconf, popen_kwargs={"stderr": fh})
    SparkContext._gateway = gateway
    SparkContext._jvm = gateway.jvm
