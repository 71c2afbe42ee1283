"""The driver JVM's options follow the input's size: a short job gets C1
only (compiling with C2 costs it more than it saves), a large or unknown
one the higher C2 thresholds."""

from __future__ import annotations

import gzip

from vinifera.analysis import inputs, session
from vinifera.schema import Schema


def spec(logdir, files=()):
    return inputs.RunSpec(
        str(logdir), "run", Schema.numeric(1), 5.0, 10.0, files=tuple(str(f) for f in files)
    )


def test_small_inputs_get_c1_only_and_large_or_unknown_get_c2():
    for small in (0, session.SMALL_INPUT - 1):
        opts = session.java_options(small)
        assert "-XX:TieredStopAtLevel=1" in opts and "Tier4" not in opts
    for large in (session.SMALL_INPUT, None):
        opts = session.java_options(large)
        assert "Tier4InvocationThreshold" in opts and "TieredStopAtLevel" not in opts
    assert all("log4j2.configurationFile" in session.java_options(n) for n in (0, None))


def test_input_bytes_counts_gzip_tenfold_and_remote_as_unknown(tmp_path):
    plain = tmp_path / "a.jsonl"
    plain.write_text("x" * 1000)
    packed = tmp_path / "b.jsonl.gz"
    packed.write_bytes(gzip.compress(b"y" * 5000))
    size = packed.stat().st_size
    assert inputs.input_bytes([spec(tmp_path, [plain])]) == 1000
    assert (
        inputs.input_bytes([spec(tmp_path, [plain]), spec(tmp_path, [packed])]) == 1000 + 10 * size
    )
    remote = spec("hdfs://namenode/logs")
    assert inputs.input_bytes([spec(tmp_path, [plain]), remote]) is None


def test_the_tests_spark_runs_a_short_job_jvm(spark):
    """The session fixture (session.start with input_bytes=0) really gave
    the driver JVM the short-job options."""
    jvm = spark.sparkContext._jvm
    args = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert "-XX:TieredStopAtLevel=1" in args and "-XX:+UseSerialGC" in args
    assert not any("Tier4" in a for a in args)
