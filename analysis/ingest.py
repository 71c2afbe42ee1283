"""Ingest once: the logs' JSON lines parsed a single time into a Parquet
store, which every query of the analysis (and every later analysis of the
same logs) reads instead of the JSON.

Parsing JSON is most of the cost of an analysis; Parquet is columnar, so a
query reads only the columns it needs. The store is partitioned by record
family, so the queries on lives, subscriptions and events (a few records)
do not scan the event copies (most of them):

- `part=msg`: `recv` and `drop` (traffic, load);
- `part=deliver`: `deliver`;
- `part=other`: everything else, malformed lines included.

The store is reused while the log files are the same (paths, sizes and
modification times, recorded beside it) and the reader is the same version;
otherwise it is rebuilt. Without a store (a cluster, whose executors cannot
read the driver's disk, or remote logs) the parsed records are persisted in
Spark's memory for the run instead.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from vinifera.analysis.reading import LOG_SCHEMA_VERSION, read_records

# Bump when the stored columns or their meaning change: old stores are rebuilt.
STORE_VERSION = 2
FINGERPRINT = "_vinifera_ingest.json"
PARTS = ("msg", "deliver", "other")


def part_of(ev: Column, problem: Column) -> Column:
    return (
        F.when(problem.isNotNull(), F.lit("other"))
        .when(ev.isin("recv", "drop"), F.lit("msg"))
        .when(ev == "deliver", F.lit("deliver"))
        .otherwise(F.lit("other"))
    )


class Records:
    """The records of one run, by family. `all` is every row (columns of
    analysis/reading.py plus `part`); `msg`, `deliver` and `other` read one
    family each (partition pruning on the store)."""

    def __init__(self, df: DataFrame, cached: bool, store: Path | None, reused: bool) -> None:
        self.all = df
        self.cached = cached
        self.store = store
        self.reused = reused

    def family(self, part: str) -> DataFrame:
        return self.all.where(F.col("part") == part)

    @property
    def msg(self) -> DataFrame:
        return self.family("msg")

    @property
    def deliver(self) -> DataFrame:
        return self.family("deliver")

    @property
    def other(self) -> DataFrame:
        return self.family("other")

    def release(self) -> None:
        if self.cached:
            self.all.unpersist()


def fingerprint(files: tuple[str, ...]) -> dict:
    stats = []
    for f in files:
        st = os.stat(f)
        stats.append([f, st.st_size, st.st_mtime_ns])
    return {"store_version": STORE_VERSION, "log_schema": LOG_SCHEMA_VERSION, "files": stats}


def load(
    spark: SparkSession, logdir: str, files: tuple[str, ...], store: Path | None, say
) -> Records:
    """Read the run's records: from the store if it matches the files, else
    parse the logs (into the store when there is one)."""
    if store is None or not files:
        say("parsing the logs (kept in memory: no local store)")
        raw = read_records(spark, logdir)
        df = raw.withColumn("part", part_of(F.col("ev"), F.col("problem")))
        return Records(df.persist(StorageLevel.MEMORY_AND_DISK), True, None, False)
    want = fingerprint(files)
    stamp = store / FINGERPRINT
    if stamp.is_file():
        try:
            if json.loads(stamp.read_text(encoding="utf-8")) == want:
                say(f"reading the ingested records from {store}")
                return Records(spark.read.parquet(str(store)), False, store, True)
        except ValueError:
            pass
    say(f"ingesting the logs into {store} (once: later runs on the same logs reuse it)")
    if store.exists():
        shutil.rmtree(store)
    raw = read_records(spark, logdir)
    raw.withColumn("part", part_of(F.col("ev"), F.col("problem"))).write.partitionBy(
        "part"
    ).parquet(str(store))
    stamp.write_text(json.dumps(want), encoding="utf-8")
    return Records(spark.read.parquet(str(store)), False, store, False)
