"""One local Spark session for every analysis test (a JVM start costs 10-15 s)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    from vinifera.analysis import session

    # Tiny logs: few shuffle partitions, and no adaptive re-planning (each
    # adaptive stage is one more job, and jobs cost more than the data here).
    conf = {"spark.sql.shuffle.partitions": "2", "spark.sql.adaptive.enabled": "false"}
    spark_, ours = session.start("local[2]", conf, input_bytes=0)  # tiny logs
    yield spark_
    if ours:
        spark_.stop()


@pytest.fixture(scope="session")
def log_writer():
    return write_log


def write_log(path: Path, records: list, gz: bool = False) -> None:
    """Records (dicts, or raw strings for malformed lines) as JSON lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    text = "\n".join(lines) + "\n"
    if gz:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text, encoding="utf-8")
