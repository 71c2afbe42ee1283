"""Where points run: local worker processes, or Spark tasks on a cluster.

Both take a list of tasks (execute.py) and yield results as they finish, so
the caller stores each one at once and an interruption loses only the
points still running. Both call the same `run_task`: same tasks, same rows.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from vinifera.experiment.execute import run_task


def _ignore_sigint() -> None:
    # Ctrl-C goes to the whole process group; the parent alone decides what
    # to do about it (stop the pool), so workers do not die mid-write.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class LocalRunner:
    """A pool of worker processes, one simulation per process (a big
    simulation's memory goes back to the system when it ends)."""

    name = "local"

    def __init__(self, jobs: int):
        if jobs < 1:
            raise ValueError("jobs must be >= 1")
        self.jobs = jobs

    def describe(self) -> str:
        return f"{self.jobs} local worker process{'es' if self.jobs > 1 else ''}"

    def run(self, tasks: list[dict]) -> Iterator[dict]:
        if not tasks:
            return
        pool = multiprocessing.Pool(
            min(self.jobs, len(tasks)), initializer=_ignore_sigint, maxtasksperchild=1
        )
        finished = False
        try:
            yield from pool.imap_unordered(run_task, tasks, chunksize=1)
            finished = True
        finally:
            if finished:
                pool.close()
            else:  # interrupted or failed: do not wait for the running points
                pool.terminate()
            pool.join()


class SparkRunner:
    """Each point is one Spark job of one task, submitted from a thread per
    slot, so results come back (and are stored) one by one while the
    cluster runs `parallel` of them at a time."""

    name = "spark"

    def __init__(self, context, parallel: int | None = None):
        self.sc = context
        self.parallel = parallel or max(1, context.defaultParallelism)

    def describe(self) -> str:
        return f"Spark at {self.sc.master}, {self.parallel} tasks at a time"

    def probe(self, timeout: float) -> dict:
        """Run one tiny task; raises TimeoutError if no executor takes it."""
        with ThreadPoolExecutor(1) as pool:
            future = pool.submit(self._collect_one, _worker_identity, None)
            done, _ = wait([future], timeout=timeout)
            if not done:
                self.sc.cancelAllJobs()
                raise TimeoutError(f"no Spark executor ran a task within {timeout:g} s")
            return future.result()

    def _collect_one(self, function, task):
        return self.sc.parallelize([task], 1).map(function).collect()[0]

    def run(self, tasks: list[dict]) -> Iterator[dict]:
        if not tasks:
            return
        pending = iter(tasks)
        pool = ThreadPoolExecutor(self.parallel)
        running: set = set()
        finished = False
        try:
            for task in pending:
                running.add(pool.submit(self._collect_one, run_task, task))
                if len(running) >= self.parallel:
                    break
            while running:
                done, running = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()
                    nxt = next(pending, None)
                    if nxt is not None:
                        running.add(pool.submit(self._collect_one, run_task, nxt))
            finished = True
        finally:
            if not finished:
                self.sc.cancelAllJobs()
            pool.shutdown(wait=True, cancel_futures=True)


def _worker_identity(_task) -> dict:
    import socket
    import sys

    from vinifera.experiment.build import source_fingerprint

    return {
        "host": socket.gethostname(),
        "python": sys.version,
        "fingerprint": source_fingerprint(),
    }
