"""The Spark runner gives the local runner's rows: on a local Spark master
(default suite) and on a real standalone cluster of a master and a worker
started from PySpark's own launcher on 127.0.0.1 (slow, needs Java)."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent / "vinifera"
TINY = ["experiment", "run", "fig3", "--nodes", "30", "--rounds", "12", "--seeds", "1"]
TINY += ["--set", "friends=0,8", "--profile", "ours"]

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java")


def run_grid(out: Path, *extra: str) -> str:
    r = subprocess.run(
        [str(BIN), *TINY, "--out", str(out), *extra], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return r.stderr


def rows(out: Path) -> list[dict]:
    import pyarrow.parquet as pq

    return pq.read_table(out / "fig3" / "fig3-runs.parquet").to_pylist()


def test_spark_rows_equal_local_rows(tmp_path):
    run_grid(tmp_path / "local", "--jobs", "2")
    err = run_grid(tmp_path / "spark", "--master", "local[2]")
    assert "Spark at local[2]" in err
    local, spark = rows(tmp_path / "local"), rows(tmp_path / "spark")
    assert len(local) == 6 and local == spark
    runners = {
        line.split('"runner": "')[1].split('"')[0]
        for line in (tmp_path / "spark" / "results.jsonl").read_text().splitlines()
    }
    assert runners == {"spark"}


def _spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def _start(args: list[str], env: dict, log: Path, ready: str) -> tuple[subprocess.Popen, str]:
    """Start a Spark daemon; return it and the first line of its log matching `ready`."""
    f = log.open("w")
    proc = subprocess.Popen(
        [str(_spark_class()), *args],
        stdout=f,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,  # its own process group: stopped as one
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        m = re.search(ready, log.read_text())
        if m:
            return proc, m.group(0)
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    _stop(proc)
    raise AssertionError(f"{args[0]} did not start:\n{log.read_text()[-3000:]}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.slow
def test_standalone_cluster_rows_equal_local_rows(tmp_path):
    import pyspark

    env = dict(
        os.environ,
        SPARK_HOME=str(Path(pyspark.__file__).parent),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(tmp_path / "spark-logs"),
        SPARK_WORKER_DIR=str(tmp_path / "spark-work"),
        # No REST submission server: it would bind a fixed port (6066).
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
        PYSPARK_PYTHON=sys.executable,
    )
    master, url = _start(
        ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0",
         "--webui-port", "0"],
        env,
        tmp_path / "master.log",
        r"spark://127\.0\.0\.1:\d+",
    )  # fmt: skip
    worker = None
    try:
        worker, _ = _start(
            ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--port", "0",
             "--webui-port", "0", "--cores", "2", "--memory", "1g"],
            env,
            tmp_path / "worker.log",
            r"Successfully registered with master",
        )  # fmt: skip
        err = run_grid(tmp_path / "cluster", "--master", url)
        assert f"Spark at {url}" in err
        run_grid(tmp_path / "local")
        cluster, local = rows(tmp_path / "cluster"), rows(tmp_path / "local")
        assert len(local) == 6 and cluster == local
    finally:
        if worker is not None:
            _stop(worker)
        _stop(master)
    assert master.poll() is not None and (worker is None or worker.poll() is not None)
