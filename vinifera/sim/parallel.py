"""One simulation on several processes (`vinifera sim run --workers W`):
the same run as one process, byte for byte, in less wall time.

Each worker process builds the whole Simulation from the same seed, so the
driver's own draws (who joins and departs when, who publishes, bootstrap
contacts, workloads) stay in step everywhere, but runs only its share of
the nodes: those whose identifier, at their first join, lies in its arc of
the ring. Most messages go to ring neighbours, T-Man partners, friends and
forest rows, which lie in the same arc (docs/results.md, "A parallel
simulator": 14% of messages cross between two arcs).

Time advances in windows no longer than the network's minimum latency, so
a message sent in one window arrives in a later one: after each window the
workers swap the messages bound for each other's nodes, with the queue
entries their senders numbered (events.py), and no worker can be handed
the past. The event order, the random streams and every node's inputs are
therefore those of a one-process run. Worker 0 (this process) merges the
log records of each round in that order, feeds the ledger and the log, and
takes the round's measurements from what every worker reports of its
nodes.
"""

from __future__ import annotations

import contextlib
import heapq
import math
import multiprocessing
import signal
import time
import traceback
from bisect import bisect_right
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

from vinifera.gcpolicy import quiet_garbage_collector
from vinifera.ring import RING_SIZE
from vinifera.sim.config import SimConfig
from vinifera.sim.driver import Simulation
from vinifera.sim.transfer import bind, register


class Partition:
    """What a Simulation needs to know to run a share of the nodes."""

    __slots__ = ("worker", "splits", "owner", "outbox", "records", "key", "idx")

    def __init__(self, worker: int, workers: int) -> None:
        self.worker = worker
        self.splits: list[int] = []  # identifiers where the next worker's arc starts
        self.owner: dict[int, int] = {}  # address -> worker, from its first join
        self.outbox: list[list] = [[] for _ in range(workers)]
        self.records: list = []  # (event key, index, record) in event order
        self.key: tuple = (0.0, -3, -3, 0)  # the event being run
        self.idx = 0

    def join(self, address: int, ident: int) -> bool:
        """A node joins: it stays with the worker of its first identifier
        (a later incarnation or move would cost more to migrate than to
        reach). True if this worker runs it."""
        w = self.owner.get(address)
        if w is None:
            w = self.owner[address] = bisect_right(self.splits, ident)
        return w == self.worker

    def owns(self, address: Hashable) -> bool:
        return self.owner.get(address, self.worker) == self.worker  # type: ignore[arg-type]

    def send(self, dest: int, entry: tuple) -> None:
        self.outbox[self.owner[dest]].append(entry)

    def record(self, rec: dict) -> None:
        self.records.append((self.key, self.idx, rec))
        self.idx += 1


class NodeReport:
    """What a worker reports of one of its alive nodes at a round's end:
    enough for metrics.py, which reads nodes through these names."""

    __slots__ = ("address", "ident", "primary", "subscription", "_links", "_addresses")

    def __init__(self, address, ident, primary, links, addresses) -> None:
        self.address, self.ident, self.primary = address, ident, primary
        self._links, self._addresses = links, addresses
        self.subscription = None  # filled in by worker 0 (it never changes in a run)

    def links(self):
        return self._links

    def link_addresses(self) -> list:
        return self._addresses


class _Links:
    __slots__ = ("succ", "pred", "friends")

    def __init__(self, succ, pred, friends) -> None:
        self.succ, self.pred, self.friends = succ, pred, friends


def _reports(sim: Simulation, part: Partition) -> list[tuple]:
    out = []
    for address, node in sim.alive.items():
        if part.owner.get(address) == part.worker:
            links = node.links()
            out.append((address, node.ident, node.primary, links.succ, links.pred,
                        links.friends, node.link_addresses()))  # fmt: skip
    return out


def _splits(sim: Simulation, workers: int) -> list[int]:
    """Arc boundaries with about as many nodes on each side: the nodes'
    identifiers if they exist yet, else where their subscriptions put them
    (a subscriber's identifier lies in its range), else even arcs."""
    if sim.config.system == "baseline":
        idents: Sequence[int] = []
    elif sim.replay is None:
        idents = [n.ident for n in sim.nodes if n is not None]
    else:
        idents = []
        for sub in sim.trace_subs:
            if sub is not None and sub.attributes:
                lo, hi = sub.key_ranges[sub.attributes[0]]
                idents.append((lo + hi) // 2)
    if len(idents) < workers:
        return [RING_SIZE * k // workers for k in range(1, workers)]
    ordered = sorted(idents)
    return [ordered[len(ordered) * k // workers] for k in range(1, workers)]


def _windows(config: SimConfig) -> int:
    """Windows per round: each at most the minimum latency long."""
    latency = config.network.latency_min
    if latency <= 0:
        raise ValueError("running on several processes needs a minimum latency > 0")
    return math.ceil(config.overlay.period / latency) + 1


class _Peers:
    """Pipes to the other workers; messages are (tag, payload)."""

    def __init__(self, me: int, conns: dict[int, Any]) -> None:
        self.me = me
        self.conns = conns

    def get(self, j: int):
        tag, payload = self.conns[j].recv()
        if tag == "error":
            raise RuntimeError(f"worker {j} failed:\n{payload}")
        return payload

    def swap(self, outbox: list[list]) -> list:
        """Send each worker what is bound for it; return what came back.
        Pairs go in one global order (the lower worker sends first), so no
        two workers ever wait on each other."""
        incoming: list = []
        for j in sorted(self.conns):
            conn = self.conns[j]
            if self.me < j:
                conn.send(("entries", outbox[j]))
                incoming.extend(self.get(j))
            else:
                incoming.extend(self.get(j))
                conn.send(("entries", outbox[j]))
            outbox[j] = []
        return incoming


def _run_rounds(sim: Simulation, part: Partition, peers: _Peers, on_round) -> None:
    period = sim.overlay_config.period
    windows = _windows(sim.config)
    sim._schedule_start()
    part.splits = _splits(sim, len(part.outbox))
    if sim.replay is not None:
        bind(sim.trace_subs.__getitem__)
    else:
        nodes = sim.nodes
        bind(lambda address: nodes[address].subscription)
    queue = sim.queue
    for r in range(sim.config.rounds):
        sim._begin_round(r)
        for k in range(windows):
            limit = period * (r + (k + 1) / windows)
            sim._run_until(limit)
            for entry in peers.swap(part.outbox):
                if entry[0] < limit:
                    raise RuntimeError("a message crossed into the past: windows too long")
                queue.push_entry(entry)
        on_round(r)


def _worker(
    config: SimConfig, me: int, workers: int, conns: dict[int, Any], log_links: bool
) -> None:
    """A worker process other than 0: its rounds, then its counts.
    `log_links`: its nodes log link changes as worker 0's do (a run with a
    log writes them)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is worker 0's to handle
    peers = _Peers(me, conns)
    try:
        sim = Simulation(config)
        if log_links:
            sim.overlay_config = config.overlay  # as Simulation keeps it with a log
        part = sim.part = Partition(me, workers)

        def report(r: int) -> None:
            conns[0].send(("round", (part.records, _reports(sim, part))))
            part.records = []

        with quiet_garbage_collector():
            _run_rounds(sim, part, peers, report)
        conns[0].send(("end", (sim.stats, sim.moves())))
    except BaseException:
        for conn in conns.values():
            with contextlib.suppress(OSError):
                conn.send(("error", traceback.format_exc()))
        raise


def run_parallel(
    config: SimConfig,
    workers: int,
    log_dir: Path | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict:
    """Run `config` on `workers` processes; the summary (and the log in
    `log_dir`) of a one-process run with the same seed. `progress(r)` after
    each round, as Simulation.run."""
    if workers < 2:
        return Simulation(config, log_dir=log_dir).run(progress)
    _windows(config)  # refuse before starting anything
    register()  # before the fork: every worker pickles the protocol's classes
    ctx = multiprocessing.get_context("fork")
    ends: dict[tuple[int, int], Any] = {}
    for i in range(workers):
        for j in range(i + 1, workers):
            ends[(i, j)], ends[(j, i)] = ctx.Pipe()
    children = []
    for w in range(1, workers):
        conns = {j: ends[(w, j)] for j in range(workers) if j != w}
        args = (config, w, workers, conns, log_dir is not None)
        proc = ctx.Process(target=_worker, args=args, daemon=True)
        proc.start()
        children.append(proc)
    try:
        return _coordinate(config, workers, {j: ends[(0, j)] for j in range(1, workers)},
                           log_dir, progress)  # fmt: skip
    finally:
        for proc in children:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()


def _coordinate(config: SimConfig, workers: int, conns: dict[int, Any], log_dir,
                progress: Callable[[int], None] | None) -> dict:  # fmt: skip
    """Worker 0: its share of the nodes, and everything done once."""
    sim = Simulation(config, log_dir=log_dir)
    part = sim.part = Partition(0, workers)
    peers = _Peers(0, conns)
    started = time.perf_counter()

    def merge_round(r: int) -> None:
        streams = [part.records]
        reports = {row[0]: row for row in _reports(sim, part)}
        for j in sorted(conns):
            records, rows = peers.get(j)
            streams.append(records)
            reports.update((row[0], row) for row in rows)
        part.records = []
        for _key, _idx, rec in heapq.merge(*streams, key=lambda x: x[:2]):
            sim.ledger.feed(rec)
            if sim.writer is not None:
                sim.writer.write(rec)
        alive = []
        for address, node in sim.alive.items():  # in join order, as one process
            _, ident, primary, succ, pred, friends, addresses = reports[address]
            stand_in = NodeReport(address, ident, primary, _Links(succ, pred, friends), addresses)
            stand_in.subscription = node.subscription
            alive.append(stand_in)
        sim._measure_round(r, alive)
        last_alive[:] = alive
        if progress is not None:
            progress(r)

    last_alive: list = []
    try:
        with quiet_garbage_collector():
            _run_rounds(sim, part, peers, merge_round)
    finally:
        if sim.writer is not None:
            sim.writer.close()
    moves = sim.moves()
    for j in sorted(conns):
        stats, their_moves = peers.get(j)
        moves += their_moves
        for k, v in stats.items():
            sim.stats[k] += v
    return sim._timed(sim._summary(last_alive, moves), started)
