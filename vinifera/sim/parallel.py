"""One simulation on several processes (`vinifera sim run --workers W`):
the same run as one process, byte for byte, in less wall time.

Each worker process builds the whole Simulation from the same seed, so the
driver's own draws (who joins and departs when, who publishes, bootstrap
contacts, workloads) stay in step everywhere, but runs only its share of
the nodes: those whose identifier, at their first join, lies in its arc of
the ring. Most messages go to ring neighbours, T-Man partners, friends and
forest rows, which lie in the same arc (docs/decisions/simulator-speed.md,
"A parallel simulator": 14% of messages cross between two arcs).

Time advances in windows no longer than 1/(LAG + 1) of the network's
minimum latency, so a message sent in window k arrives in window k + LAG + 1
or later. After each window a worker sends the others the messages bound
for their nodes, as the queue entries their senders numbered (events.py),
and before running window k + 1 it needs only theirs of window k - LAG: a
worker may run LAG windows ahead, which absorbs most of the imbalance
between them, and no worker is ever handed the past. The event order, the
random streams and every node's inputs are therefore those of a
one-process run. A round ends with every window in. Worker 0 (this
process) merges the log records of each round in that order, feeds the
ledger and the log, and takes the round's measurements from what every
worker reports of its nodes; all of it while it waits for the others, as
far as it can, a round or two behind the one it runs, so that no worker
waits at a round's end. Without a log, the recv and drop records (most of
a run's) are summed where they are made instead (ledger.Receipts): the
ledger alone reads them, and in any order. sim/channels.py carries the
messages.
"""

from __future__ import annotations

import contextlib
import heapq
import math
import multiprocessing
import signal
import socket
import time
import traceback
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from itertools import chain, islice
from pathlib import Path

from vinifera.gcpolicy import quiet_garbage_collector
from vinifera.ledger import Receipts
from vinifera.ring import RING_SIZE
from vinifera.sim.channels import Peers, socket_pairs
from vinifera.sim.config import SimConfig
from vinifera.sim.driver import Simulation
from vinifera.sim.transfer import bind, register


class Partition:
    """What a Simulation needs to know to run a share of the nodes."""

    __slots__ = ("worker", "splits", "owner", "outbox", "records", "key", "idx", "receipts")

    def __init__(self, worker: int, workers: int) -> None:
        self.worker = worker
        self.splits: list[int] = []  # identifiers where the next worker's arc starts
        self.owner: dict[int, int] = {}  # address -> worker, from its first join
        self.outbox: list[list] = [[] for _ in range(workers)]
        self.records: list = []  # (event key, index, record) in event order
        self.key: tuple = (0.0, -3, -3, 0)  # the event being run
        self.idx = 0
        # recv and drop records summed instead of kept (a run without a
        # log: the ledger alone reads them, and in any order)
        self.receipts: Receipts | None = None

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
        receipts = self.receipts
        if receipts is not None:
            ev = rec["ev"]
            if ev == "recv" or ev == "drop":
                receipts.add(rec)
                return
        self.records.append((self.key, self.idx, rec))
        self.idx += 1

    def take_round(self) -> tuple[list, tuple | None]:
        """The round's records and summed receipts (as plain data: a
        compiled class does not unpickle), and a fresh start for the next."""
        records, self.records = self.records, []
        receipts = self.receipts
        if receipts is None:
            return records, None
        self.receipts = Receipts()
        return records, (receipts.by_event, receipts.forwarded)


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
    identifiers if they exist yet, else where their subscriptions put them,
    else even arcs."""
    if sim.config.system == "baseline":
        idents: Sequence[int] = []
    elif sim.replay is None:
        idents = [n.ident for n in sim.nodes if n is not None]
    else:
        spans = []
        for sub in sim.trace_subs:
            if sub is not None and sub.attributes:
                spans.append(sub.key_ranges[sub.attributes[0]])
        if len(spans) >= workers:
            return _expected_quantiles(spans, workers)
        idents = []
    if len(idents) < workers:
        return [RING_SIZE * k // workers for k in range(1, workers)]
    ordered = sorted(idents)
    return [ordered[len(ordered) * k // workers] for k in range(1, workers)]


def _expected_quantiles(spans: Sequence[tuple[int, int]], workers: int) -> list[int]:
    """Cuts with k/workers of the nodes expected below the k-th, for nodes
    whose identifier is drawn uniformly inside their span (a subscriber's
    range: content/layer.py's subscription_identifier), by bisection on the
    ring. The spans' centres would do for narrow ranges only: where a
    popular bucket's many wide ranges straddle a cut, the centres' median
    put 902 of a day's 1,633 trace nodes below it
    (docs/decisions/simulator-speed.md, "Workers' arcs cut where identifiers
    fall")."""

    def expected_below(x: int) -> float:
        n = 0.0
        for lo, hi in spans:
            if x >= hi:
                n += 1.0
            elif x > lo:
                n += (x - lo) / (hi - lo)
        return n

    cuts = []
    for k in range(1, workers):
        want = len(spans) * k / workers
        lo, hi = 0, RING_SIZE  # expected_below(lo) < want <= expected_below(hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if expected_below(mid) < want:
                lo = mid
            else:
                hi = mid
        cuts.append(hi)
    return cuts


# Windows a worker may run ahead of the others' entries: a window is at
# most 1/(LAG + 1) of the minimum latency long, so what is sent in window k
# arrives in window k + LAG + 1 or later. With LAG = 0 every window would be
# a barrier, and each worker would wait out every imbalance between them.
LAG = 1


def _windows(config: SimConfig) -> int:
    """Windows per round: each at most 1/(LAG + 1) of the minimum latency."""
    latency = config.network.latency_min
    if latency <= 0:
        raise ValueError("running on several processes needs a minimum latency > 0")
    return math.ceil((LAG + 1) * config.overlay.period / latency) + 1


def _run_rounds(sim: Simulation, part: Partition, peers: Peers, on_round) -> None:
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

    def take_in(entries: list, limit: float) -> None:
        for entry in entries:
            if entry[0] < limit:
                raise RuntimeError("a message crossed into the past: windows too long")
            queue.push_entry(entry)

    for r in range(sim.config.rounds):
        sim._begin_round(r)
        for k in range(windows):
            limit = period * (r + (k + 1) / windows)
            sim._run_until(limit)
            peers.send_window(part.outbox)
            if k >= LAG:
                take_in(peers.receive_window(), limit)  # the others' window k - LAG
        for _ in range(min(LAG, windows)):  # a round ends with every window in
            take_in(peers.receive_window(), limit)
        on_round(r)


class _Backlog:
    """Log records worker 0 has merged but not yet fed to the ledger and
    the log. They are fed a chunk at a time while it waits for the other
    workers at the windows' exchanges, so that the others do not wait for
    this work at every round's end; in the same order, so the ledger and
    the log are those of one process."""

    CHUNK = 64  # records per call: a fraction of a window's work
    MAX_ROUNDS = 4  # older rounds are fed at once: the backlog's memory stays bounded

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.rounds: deque[Iterator[tuple]] = deque()

    def add(self, streams: list[list], receipts: list[tuple | None]) -> None:
        """A round's records, one stream per worker, and what each summed
        (fed after the round's records, so after its publishes)."""
        merged = heapq.merge(*streams, key=lambda x: x[:2])
        summed = [(None, 0, r) for r in receipts if r is not None]
        self.rounds.append(chain(merged, summed))
        while len(self.rounds) > self.MAX_ROUNDS:
            self._feed(self.rounds.popleft())

    def feed_some(self) -> bool:
        """Feed up to CHUNK records; whether any are left."""
        if not self.rounds:
            return False
        if self._feed(islice(self.rounds[0], self.CHUNK)) < self.CHUNK:
            self.rounds.popleft()
        return bool(self.rounds)

    def drain(self) -> None:
        while self.rounds:
            self._feed(self.rounds.popleft())

    def _feed(self, records: Iterable[tuple]) -> int:
        keep = self.sim.keep
        ledger = self.sim.ledger
        n = 0
        for key, _idx, rec in records:
            if key is None:
                ledger.add_receipts(Receipts(*rec))
            else:
                keep(rec)
            n += 1
        return n


def _worker(config: SimConfig, me: int, workers: int, ends: dict[tuple[int, int], socket.socket],
            log_links: bool) -> None:  # fmt: skip
    """A worker process other than 0: its rounds, then its counts.
    `log_links`: its nodes log link changes as worker 0's do (a run with a
    log writes them)."""
    socks = _keep_own(ends, me)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is worker 0's to handle
    peers = Peers(socks)
    try:
        sim = Simulation(config)
        if log_links:
            sim.overlay_config = config.overlay  # as Simulation keeps it with a log
        part = sim.part = Partition(me, workers)
        if not log_links:
            part.receipts = Receipts()

        def report(r: int) -> None:
            records, receipts = part.take_round()
            peers.put(0, "round", (records, receipts, _reports(sim, part)))

        with quiet_garbage_collector():
            _run_rounds(sim, part, peers, report)
        peers.put(0, "end", (sim.stats, sim.moves()))
        peers.finish()
    except BaseException:
        peers.fail(traceback.format_exc())
        raise


def _keep_own(ends: dict[tuple[int, int], socket.socket], me: int) -> dict[int, socket.socket]:
    """Close the other workers' ends in this process, so that a worker
    that dies without a word is seen to (its peers read the end of its
    sockets); this worker's sockets, by the worker at the other end."""
    for (i, _j), sock in ends.items():
        if i != me:
            sock.close()
    return {j: sock for (i, j), sock in ends.items() if i == me}


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
    ends = socket_pairs(workers)
    children = []
    for w in range(1, workers):
        args = (config, w, workers, ends, log_dir is not None)
        proc = ctx.Process(target=_worker, args=args, daemon=True)
        proc.start()
        children.append(proc)
    try:
        return _coordinate(config, workers, _keep_own(ends, 0), log_dir, progress)
    finally:
        for proc in children:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()


def _coordinate(config: SimConfig, workers: int, socks: dict[int, socket.socket], log_dir,
                progress: Callable[[int], None] | None) -> dict:  # fmt: skip
    """Worker 0: its share of the nodes, and everything done once."""
    sim = Simulation(config, log_dir=log_dir)
    part = sim.part = Partition(0, workers)
    if log_dir is None:
        part.receipts = Receipts()
    peers = Peers(socks)
    backlog = _Backlog(sim)
    started = time.perf_counter()
    # Rounds run but not merged yet: each is merged once every worker has
    # reported it, while this worker waits for the others anyway (or when
    # MAX_PENDING are waiting), so that no worker waits at a round's end
    # for another's report or for this merge.
    pending: deque[_RoundEnd] = deque()
    last_alive: list = []

    def end_round(r: int) -> None:
        records, receipts = part.take_round()
        own = _reports(sim, part)
        pending.append(_RoundEnd(r, records, receipts, own, sim))
        while len(pending) > MAX_PENDING:
            merge_round()

    merging = False

    def merge_round() -> None:
        nonlocal merging
        done = pending.popleft()
        streams, receipts = [done.records], [done.receipts]
        reports = {row[0]: row for row in done.reports}
        merging = True  # no merge from the idle work while this one waits
        try:
            for j in sorted(socks):
                records, summed, rows = peers.get(j, "round")
                streams.append(records)
                receipts.append(summed)
                reports.update((row[0], row) for row in rows)
        finally:
            merging = False
        backlog.add(streams, receipts)
        alive = []
        for address, node in done.alive:  # in join order, as one process
            _, ident, primary, succ, pred, friends, addresses = reports[address]
            stand_in = NodeReport(address, ident, primary, _Links(succ, pred, friends), addresses)
            stand_in.subscription = node.subscription
            alive.append(stand_in)
        sim._measure_round(done.r, alive, done.death_time)
        last_alive[:] = alive
        if progress is not None:
            progress(done.r)

    def merge_reported() -> None:
        while not merging and pending and all(peers.has(j, "round") for j in socks):
            merge_round()

    def idle() -> bool:
        merge_reported()
        return backlog.feed_some()

    peers.idle = idle
    try:
        with quiet_garbage_collector():
            _run_rounds(sim, part, peers, end_round)
            while pending:
                merge_round()
    finally:
        # what every worker ran and reported reaches the log, on Ctrl-C too
        with contextlib.suppress(Exception):
            merge_reported()
        backlog.drain()
        if sim.writer is not None:
            sim.writer.close()
    moves = sim.moves()
    for j in sorted(socks):
        stats, their_moves = peers.get(j, "end")
        moves += their_moves
        for k, v in stats.items():
            sim.stats[k] += v
    return sim._timed(sim._summary(last_alive, moves), started)


# Rounds worker 0 may have run ahead of merging them (_coordinate)
MAX_PENDING = 2


class _RoundEnd:
    """What worker 0 keeps of a round's end until it merges the round: its
    own records and node reports, and the alive nodes and deaths then."""

    __slots__ = ("r", "records", "receipts", "reports", "alive", "death_time")

    def __init__(self, r: int, records: list, receipts: tuple | None, reports: list,
                 sim: Simulation) -> None:  # fmt: skip
        self.r, self.records, self.receipts, self.reports = r, records, receipts, reports
        self.alive = list(sim.alive.items())
        self.death_time = dict(sim.death_time)
