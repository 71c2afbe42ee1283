"""Reading node logs (docs/logs.md, schema v1) into one Spark DataFrame.

Lines are parsed with an explicit schema (Spark's JSON reader, permissive,
keeping unparseable lines aside), so that a bad line becomes a counted
problem instead of a failed job or a silently inferred schema.
Heterogeneous lists (subscriptions `[attr, lo, hi]`, event values
`[attr, value]`) are read as arrays of strings: Spark renders a JSON number
into a string field as a text that parses back to the same double, and
analysis/typed.py types them by the attribute schema.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from vinifera.analysis.inputs import LOG_GLOB

LOG_SCHEMA_VERSION = 1

_STR_LISTS = T.ArrayType(T.ArrayType(T.StringType()))

# Only the fields some metric needs; other fields and record kinds are ignored.
RECORD_SCHEMA = T.StructType(
    [
        T.StructField("v", T.LongType()),
        T.StructField("t", T.DoubleType()),
        T.StructField("node", T.StringType()),
        T.StructField("ev", T.StringType()),
        T.StructField("sub", _STR_LISTS),
        T.StructField("eid", T.LongType()),
        T.StructField("values", _STR_LISTS),
        T.StructField("hops", T.LongType()),
        T.StructField("match", T.BooleanType()),
        T.StructField("fwd", T.LongType()),
        T.StructField("attr", T.StringType()),
        T.StructField("had", T.BooleanType()),
        T.StructField("up", T.BooleanType()),
        T.StructField("_corrupt", T.StringType()),
    ]
)

# Fields a record kind cannot do without (the reference Ledger reads them).
REQUIRED = {
    "publish": ("eid", "values"),
    "recv": ("eid", "match", "fwd"),
    "drop": ("eid", "match"),
    "deliver": ("eid", "hops"),
    "rendezvous": ("eid", "attr", "hops"),
}

# Problem labels, in the order they are checked.
PROBLEMS = {
    "bad_json": "not a JSON object, or a field of the wrong type",
    "missing_field": "a field the record kind needs is missing",
    "unsupported_version": f"`v` is not {LOG_SCHEMA_VERSION}",
    "bad_time": "`t` is NaN or infinite",
    "invalid_event": "publish: values do not fit the attribute schema",
    "invalid_subscription": "join/subscribe: sub does not fit the attribute schema (read as none)",
}


def _problem(r: Column) -> Column:
    missing = r["t"].isNull() | r["node"].isNull() | r["ev"].isNull() | r["v"].isNull()
    for kind, fields in REQUIRED.items():
        absent = r[fields[0]].isNull()
        for name in fields[1:]:
            absent = absent | r[name].isNull()
        missing = missing | ((r["ev"] == kind) & absent)
    t = r["t"]
    return (
        F.when(r.isNull() | r["_corrupt"].isNotNull(), F.lit("bad_json"))
        .when(missing, F.lit("missing_field"))
        .when(r["v"] != LOG_SCHEMA_VERSION, F.lit("unsupported_version"))
        .when(F.isnan(t) | (F.abs(t) == float("inf")), F.lit("bad_time"))
    )


def read_records(spark: SparkSession, logdir: str) -> DataFrame:
    """Every non-blank line of every log file under logdir, one row each.

    Columns: file, seq (increases with the line's position inside its file:
    the tie-break for equal times), the RECORD_SCHEMA fields, and `problem`
    (null for a usable record, else a key of PROBLEMS). Not cached.
    """
    parsed = (
        spark.read.schema(RECORD_SCHEMA)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", "_corrupt")
        # A node killed while writing leaves a truncated gzip file: keep what
        # decompresses instead of failing the whole job.
        .option("ignoreCorruptFiles", "true")
        .option("recursiveFileLookup", "true")
        .option("pathGlobFilter", LOG_GLOB)
        .json(logdir)
        .select(
            F.col("_metadata.file_path").alias("file"),
            F.monotonically_increasing_id().alias("seq"),
            F.struct(*[F.col(f.name) for f in RECORD_SCHEMA.fields]).alias("r"),
        )
    )
    r = F.col("r")
    fields = [r[f.name].alias(f.name) for f in RECORD_SCHEMA.fields if f.name != "_corrupt"]
    problem = _problem(r)
    # The line itself for the report's examples (only malformed lines keep it).
    example = F.when(
        problem.isNotNull(), F.substring(F.coalesce(r["_corrupt"], F.to_json(r)), 1, 200)
    )
    return parsed.select("file", "seq", *fields, problem.alias("problem"), example.alias("example"))


def malformed_examples(records: DataFrame, limit: int = 5) -> list[tuple[str, str]]:
    """A few (file, line) pairs that are malformed, for the report."""
    bad = records.where(F.col("problem").isNotNull()).select("file", "example").limit(limit)
    return [(row[0], row[1]) for row in bad.collect()]
