"""Ingest once: the logs' JSON lines parsed a single time into a Parquet
store, which every query of the analysis (and every later analysis of the
same logs) reads instead of the JSON.

The store is partitioned by record family (`family=msg`: recv and drop,
`deliver`, `other`: everything else, malformed lines included), so that a
query reads only its family's files and, Parquet being columnar, only the
columns it needs: the ground truth (joins, subscriptions, publications,
leaves: a few rows per node and per event) comes from a small `other`
partition instead of a scan of every record. The partitions are written by
concurrent writers (no sort of the records by family before writing).

Beside the store: the per-file counts (`_vinifera_stats.json`: records per
file, node, kind and problem, with their time span), which depend on the
logs only, so a later analysis of the same logs does not count again.

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
from dataclasses import dataclass
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from vinifera.analysis.reading import LOG_SCHEMA_VERSION, read_records

# Bump when the stored columns or their meaning change: old stores are rebuilt.
STORE_VERSION = 6
FINGERPRINT = "_vinifera_ingest.json"
STATS = "_vinifera_stats.json"
FAMILIES = {"msg": ("recv", "drop"), "deliver": ("deliver",)}
_WRITING = {
    # At most this many files open per writing task: one per family, no sort.
    "spark.sql.maxConcurrentOutputFileWriters": str(len(FAMILIES) + 1),
    # A store is written from local files (a local master), which open
    # cheaply: Spark's default cost of 4 MB per file (for remote storage)
    # packed 32 files of a 1,000-node log of 60 MB into a task, 32 tasks of
    # 3 Parquet files each; at 256 kB, 3 tasks (8.1 -> 6.7 CPU-s to ingest
    # 450 k records, and later queries open 9 files instead of 97).
    "spark.sql.files.openCostInBytes": str(256 * 1024),
}
# Columns with a distinct value on almost every row: a dictionary is built
# and then abandoned (12% of the writing CPU on 2 M records). lz4_raw: as
# small as snappy here, a little cheaper.
_WRITE_OPTIONS = {
    "compression": "lz4_raw",
    **{f"parquet.enable.dictionary#{c}": "false" for c in ("t", "seq", "eid", "nid")},
}


def node_id(node: Column) -> Column:
    """A 64-bit hash of the node's name: the key of the large aggregations
    (hashing and shuffling a long is cheaper than a string). Used only when
    the run's node names hash apart (metrics.measure checks)."""
    return F.xxhash64(node)


def family_of(ev: Column, problem: Column) -> Column:
    """msg, deliver or other (every other kind, and every malformed line)."""
    usable = problem.isNull()
    out = F.lit("other")
    for name, kinds in FAMILIES.items():
        out = F.when(usable & ev.isin(*kinds), F.lit(name)).otherwise(out)
    return out


@dataclass(frozen=True)
class FileStats:
    """Records of one (file, node, kind, problem): how many, first and last t.
    `nid`: the node's node_id (a function of the name: grouping by it too
    changes no group), so the driver can check the ids for collisions."""

    file: str
    node: str | None
    nid: int
    ev: str | None
    problem: str | None
    n: int
    t0: float | None
    t1: float | None


class Records:
    """The records of one run. `all` is every row (the columns of
    analysis/reading.py and `family`); `msg` (recv, drop), `deliver` (both
    usable only) and `other` (everything else) are its families."""

    def __init__(self, df: DataFrame, cached: bool, store: Path | None, reused: bool) -> None:
        self.all = df
        self.cached = cached
        self.store = store
        self.reused = reused

    def family(self, part: str) -> DataFrame:
        return self.all.where(F.col("family") == part)  # a partition filter on a store

    @property
    def msg(self) -> DataFrame:
        return self.family("msg")

    @property
    def deliver(self) -> DataFrame:
        return self.family("deliver")

    @property
    def other(self) -> DataFrame:
        return self.family("other")

    def stats(self) -> list[FileStats]:
        """Counts per (file, node, kind, problem); kept beside a store (one
        saved by an older version, without nid, is counted again)."""
        saved = None if self.store is None else self.store / STATS
        if saved is not None and saved.is_file():
            try:
                return [FileStats(*row) for row in json.loads(saved.read_text(encoding="utf-8"))]
            except (ValueError, TypeError):
                pass
        rows = (
            self.all.groupBy("file", "node", "nid", "ev", "problem")
            .agg(F.count(F.lit(1)).alias("n"), F.min("t").alias("t0"), F.max("t").alias("t1"))
            .collect()
        )
        stats = [FileStats(*row) for row in rows]
        if saved is not None:
            saved.write_text(json.dumps([list(s.__dict__.values()) for s in stats]), "utf-8")
        return stats

    def release(self) -> None:
        if self.cached:
            self.all.unpersist()


def fingerprint(files: tuple[str, ...]) -> dict:
    stats = []
    for f in files:
        st = os.stat(f)
        stats.append([f, st.st_size, st.st_mtime_ns])
    return {"store_version": STORE_VERSION, "log_schema": LOG_SCHEMA_VERSION, "files": stats}


def parsed(spark: SparkSession, logdir: str) -> DataFrame:
    """The logs' records with their family (not cached)."""
    df = read_records(spark, logdir)
    return df.select(
        "*",
        node_id(F.col("node")).alias("nid"),
        family_of(F.col("ev"), F.col("problem")).alias("family"),
    )


def load(
    spark: SparkSession, logdir: str, files: tuple[str, ...], store: Path | None, say
) -> Records:
    """Read the run's records: from the store if it matches the files, else
    parse the logs (into the store when there is one)."""
    if store is None or not files:
        say("parsing the logs (kept in memory: no local store)")
        df = parsed(spark, logdir).persist(StorageLevel.MEMORY_AND_DISK)
        return Records(df, True, None, False)
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
    with _session_conf(spark, _WRITING):
        parsed(spark, logdir).write.partitionBy("family").options(**_WRITE_OPTIONS).parquet(
            str(store)
        )
    stamp.write_text(json.dumps(want), encoding="utf-8")
    return Records(spark.read.parquet(str(store)), False, store, False)


class _session_conf:
    """Set SQL settings for a block, then put back what was there."""

    def __init__(self, spark: SparkSession, conf: dict[str, str]) -> None:
        self.spark, self.conf, self.saved = spark, conf, {}

    def __enter__(self) -> None:
        for key, value in self.conf.items():
            self.saved[key] = self.spark.conf.get(key, None)
            self.spark.conf.set(key, value)

    def __exit__(self, *exc) -> None:
        for key, value in self.saved.items():
            if value is None:
                self.spark.conf.unset(key)
            else:
                self.spark.conf.set(key, value)
