"""The simulator driver: runs the protocol's Node state machines in virtual
time. One event queue (events.py: an order that does not depend on how the
nodes' events interleave), a seeded network model with one random stream
per sending node, churn, workloads. Same seed, same result, byte for byte.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vinifera.gcpolicy import RetiredNodes, quiet_garbage_collector
from vinifera.ledger import Ledger
from vinifera.protocol.actions import Log, Send
from vinifera.protocol.node import Node
from vinifera.protocol.records import node_name, record
from vinifera.schema import Schema
from vinifera.sim import metrics
from vinifera.sim.config import SimConfig
from vinifera.sim.events import EventQueue
from vinifera.sim.logwriter import LOG_FILE_NAME, JsonLinesWriter
from vinifera.workload import Workload

# Event kinds in the queue.
JOIN, TICK, MESSAGE, PUBLISH, DEPART = 0, 1, 2, 3, 4


class Simulation:
    def __init__(
        self,
        config: SimConfig,
        log_dir: Path | None = None,
        tap: Callable[[float, Send], None] | None = None,
    ) -> None:
        """`tap`, if given, sees every message sent (time, Send) before the
        network model: for measurements such as bytes on the wire."""
        self.config = config
        self.tap = tap
        master = random.Random(config.seed)
        # Independent streams, so that e.g. changing the loss rate does not
        # change which subscriptions the nodes get.
        # The network's draws for a message come from its sender's stream,
        # so no node's messages depend on how others' interleave.
        self.net_seed = master.getrandbits(64)
        self.net_rngs: dict[int, random.Random] = {}
        self.incarnations: dict[int, int] = {}  # address -> trace rejoins so far
        # Set by sim/parallel.py when this process runs only some of the
        # nodes (a Partition): which, where the others' messages go, and the
        # log records kept for merging instead of fed at once.
        self.part: Any = None
        self.churn_rng = random.Random(master.getrandbits(64))
        self.workload_rng = random.Random(master.getrandbits(64))
        self.metrics_rng = random.Random(master.getrandbits(64))
        self.node_seed_rng = random.Random(master.getrandbits(64))
        self.event_rng = random.Random(master.getrandbits(64))
        self.schema = Schema.numeric(config.attributes)
        self.workload = Workload(config.subscriptions, self.schema, self.workload_rng)
        overlay = config.overlay
        if log_dir is None and overlay.log_links:
            overlay = overlay.with_(log_links=False)  # nothing would read them
        self.overlay_config = overlay
        self.queue = EventQueue(overlay.period / 64)
        self.nodes: list[Any] = []  # index = address (None: a trace node not yet joined)
        self.alive: dict[int, Node] = {}  # address -> node, in join order
        self.death_time: dict[int, float] = {}
        self.now = 0.0
        self.log_dir = log_dir
        self.writer: JsonLinesWriter | None = None
        if log_dir is not None:
            log_dir.mkdir(parents=True, exist_ok=True)
            self.writer = JsonLinesWriter(log_dir / LOG_FILE_NAME)
        self.stats = {"messages_sent": 0, "messages_lost": 0, "messages_to_dead": 0}
        period = overlay.period
        # Any: experiments put a stand-in here (experiment/series.py's Windows)
        self.ledger: Any = Ledger(
            self.schema,
            window_start=config.warmup * period,
            window_end=(config.rounds - config.deadline_rounds) * period,
            deadline=config.deadline_rounds * period,
        )
        self.ring_history: list[float] = []
        self.node_rounds = 0
        self.kill_rounds: list[int] = []
        self.max_dead_link_seconds = 0.0
        # Trace replay: each trace node's subscription, drawn once up front in
        # address order (so the round length does not change who wants what).
        self.replay: Any = config.replay
        self.trace_subs: list = []
        self.replay_counts = {"joins": 0, "rejoins": 0, "departures": 0}
        self._retired_moves = 0  # identifier moves of incarnations that are gone
        self.retired_nodes = RetiredNodes()
        if self.replay is not None:
            self.trace_subs = [
                self.workload.subscription(self.workload_rng) for _ in self.replay.node_names
            ]

    # ----------------------------------------------------------------- running

    def run(self, progress: Callable[[int], None] | None = None) -> dict:
        with quiet_garbage_collector():
            return self._run(progress)

    def _run(self, progress: Callable[[int], None] | None) -> dict:
        period = self.overlay_config.period
        started = time.perf_counter()
        try:
            self._schedule_start()
            for r in range(self.config.rounds):
                self._begin_round(r)
                self._run_until((r + 1) * period)
                self._measure_round(r)
                if progress is not None:
                    progress(r)
        finally:
            if self.writer is not None:
                self.writer.close()
        return self._timed(self._summary(), started)

    def _schedule_start(self) -> None:
        """The run's joins: all at the start, or as the trace says."""
        if self.replay is None:
            period = self.overlay_config.period
            self._schedule_joins(self.config.nodes, 0.0, self.config.join_spread_rounds * period)
        else:
            self._schedule_trace()

    def _begin_round(self, r: int) -> None:
        """Churn steps and the events to publish in round r."""
        period = self.overlay_config.period
        self._apply_churn(r, r * period)
        self._schedule_events(r * period, period)

    def _timed(self, summary: dict, started: float) -> dict:
        """The summary with the run's wall time since `started`."""
        wall = time.perf_counter() - started
        summary["wall_seconds"] = round(wall, 3)
        summary["node_rounds_per_second"] = round(self.node_rounds / wall, 1) if wall else None
        return summary

    def _run_until(self, limit: float) -> None:
        queue = self.queue
        nodes = self.nodes
        alive = self.alive
        period = self.overlay_config.period
        part = self.part
        while (ev := queue.pop_until(limit)) is not None:
            t, _target, _origin, _seq, kind, a, b = ev
            self.now = t
            if part is not None:
                part.key = ev[:4]
            if kind == MESSAGE:
                node = alive.get(a)
                if node is None:
                    self.stats["messages_to_dead"] += 1
                    continue
                self._act(t, node.receive(t, b), a)
            elif kind == TICK:
                node = alive.get(a)
                if node is None or node is not b:
                    continue  # died (or left) since this tick was scheduled
                self._act(t, node.tick(t), a)
                queue.push(t + period, TICK, a, node, a)
            elif kind == PUBLISH:
                if alive:
                    address = self.event_rng.choice(list(alive))
                    if part is None or part.owns(address):
                        self._act(t, alive[address].publish(t, b).actions, address)
            elif kind == DEPART:
                self._depart(t, a)
            else:  # JOIN
                if b is not None:  # a trace (re)join: a fresh incarnation at this address
                    self._incarnate(a)
                node = nodes[a]
                others = list(alive)
                k = min(self.config.bootstrap_size, len(others))
                bootstrap = self.churn_rng.sample(others, k) if k else []
                alive[a] = node
                self.death_time.pop(a, None)
                if part is not None and not part.join(a, node.ident):
                    continue  # another process runs it
                self._act(t, node.start(t, bootstrap), a)
                queue.push(t + period, TICK, a, node, a)

    def _act(self, now: float, actions: list, origin: int) -> None:
        """Carry out what node `origin` asked for: its messages into the
        network, its log records to the ledger and the log."""
        tap = self.tap
        part = self.part
        rng = None
        for action in actions:
            if type(action) is Send:
                self.stats["messages_sent"] += 1
                if tap is not None:
                    tap(now, action)
                if rng is None:
                    rng = self._net_rng(origin)
                delay = self.config.network.delay(rng)
                if delay is None:
                    self.stats["messages_lost"] += 1
                    continue
                if part is not None and not part.owns(action.dest):
                    entry = self.queue.entry(
                        now + delay, MESSAGE, action.dest, action.message, origin
                    )
                    part.send(action.dest, entry)
                    continue
                self.queue.push(now + delay, MESSAGE, action.dest, action.message, origin)
            elif type(action) is Log:
                if part is not None:
                    part.record(action.record)
                    continue
                self.keep(action.record)

    def _net_rng(self, origin: int) -> random.Random:
        """The network's random stream for messages sent by `origin`, made
        at its first message from the run's seed, the address and the
        incarnation alone."""
        rng = self.net_rngs.get(origin)
        if rng is None:
            incarnation = self.incarnations.get(origin, 0)
            rng = random.Random(f"{self.net_seed}:{origin}:{incarnation}")
            self.net_rngs[origin] = rng
        return rng

    # ----------------------------------------------------------------- churn

    def _new_node(self) -> int:
        address = len(self.nodes)
        node = Node(
            address,
            self.schema,
            self.overlay_config,
            random.Random(self.node_seed_rng.getrandbits(64)),
            subscription=self.workload.subscription(self.workload_rng),
            content=self.config.content,
        )
        self.nodes.append(node)
        return address

    def _schedule_joins(self, count: int, start: float, spread: float) -> None:
        times = sorted(start + spread * self.churn_rng.random() for _ in range(count))
        for t in times:
            self.queue.push(t, JOIN, self._new_node())

    def _schedule_trace(self) -> None:
        """Every join and departure of the trace, at its own instant. Queued
        up front in trace order, so downs run before ups at equal times."""
        period = self.overlay_config.period
        self.nodes = [None] * len(self.replay.node_names)  # created at each join
        for t, address, kind in self.replay.churn():
            if kind == "up":
                self.queue.push(t * period, JOIN, address, True)
            else:
                self.queue.push(t * period, DEPART, address)

    def _incarnate(self, address: int) -> None:
        """A fresh Node at `address`: new identifier and empty tables (a
        restarted peer), the trace node's own subscription."""
        old = self.nodes[address]
        node = Node(
            address,
            self.schema,
            self.overlay_config,
            random.Random(self.node_seed_rng.getrandbits(64)),
            subscription=self.trace_subs[address],
            content=self.config.content,
        )
        if old is not None:
            # a fresh network stream and event numbering, as fresh as its tables
            incarnation = self.incarnations[address] = self.incarnations.get(address, 0) + 1
            self.net_rngs.pop(address, None)
            self.queue.restart_origin(address, incarnation)
            self._retired_moves += old.counters()["moves"]
            self.replay_counts["rejoins"] += 1
            # Everything is fresh but the delivery journal, which a daemon
            # keeps on disk: a copy still travelling toward (or retried to)
            # the old incarnation must not reach the application twice.
            node.restore_delivered(old.delivered_journal())
            old.discard()
            self.retired_nodes.retire()
        self.replay_counts["joins"] += 1
        self.nodes[address] = node

    def _depart(self, now: float, address: int) -> None:
        node = self.alive.pop(address, None)
        if node is None:
            return
        self.death_time[address] = now
        self.replay_counts["departures"] += 1
        if self.part is not None and not self.part.owns(address):
            return
        if self.replay.departures == "leave":
            self._act(now, node.leave(now), address)
        else:
            self._crash_record(now, address)

    def _crash_record(self, now: float, address: int) -> None:
        # A crashed node cannot log; the simulator records it for the analysis.
        rec = record(now, node_name(address), "crash")
        if self.part is not None:
            self.part.record(rec)
            return
        self.keep(rec)

    def keep(self, rec: dict) -> None:
        """A log record into the ledger and the log (sim/parallel.py's
        worker 0 keeps the merged records of every worker through it)."""
        self.ledger.feed(rec)
        if self.writer is not None:
            self.writer.write(rec)

    def _schedule_events(self, start: float, period: float) -> None:
        """The round's events at uniform times; the publisher is drawn among
        the alive nodes when the event fires."""
        rate = self.config.events_per_round
        if rate <= 0:
            return
        count = int(rate)
        if self.event_rng.random() < rate - count:
            count += 1
        times = sorted(start + period * self.event_rng.random() for _ in range(count))
        for t in times:
            self.queue.push(t, PUBLISH, None, self.workload.event(self.event_rng))

    def _apply_churn(self, r: int, now: float) -> None:
        for n_step, step in enumerate(self.config.churn):
            if step.round != r:
                continue
            if step.kind == "join":
                self._schedule_joins(step.count, now, self.overlay_config.period)
                continue
            victims = self.churn_rng.sample(list(self.alive), int(len(self.alive) * step.fraction))
            for i, address in enumerate(victims):
                node = self.alive.pop(address)
                self.death_time[address] = now
                if self.part is not None:
                    if not self.part.owns(address):
                        continue
                    # in step and victim order, before any event at `now`
                    self.part.key = (now, -2, n_step, i)
                if step.kind == "leave":
                    self._act(now, node.leave(now), address)
                else:
                    self._crash_record(now, address)
            if step.kind == "kill":
                self.kill_rounds.append(r)

    # ----------------------------------------------------------------- measuring

    def _measure_round(
        self, r: int, alive: list | None = None, death_time: dict | None = None
    ) -> None:
        """Round r's measures, of `alive` and `death_time` as they stood at
        its end (sim/parallel.py measures a round after running on)."""
        if alive is None:
            alive = list(self.alive.values())
        if death_time is None:
            death_time = self.death_time
        self.node_rounds += len(alive)
        self.ring_history.append(metrics.ring_correct_fraction(alive))
        end = (r + 1) * self.overlay_config.period
        for _node, _dead, died in metrics.dead_links(alive, death_time):
            self.max_dead_link_seconds = max(self.max_dead_link_seconds, end - died)

    def moves(self) -> int:
        """Identifier moves so far, by every incarnation of every node."""
        return self._retired_moves + sum(n.counters()["moves"] for n in self.nodes if n is not None)

    def _summary(self, alive: list | None = None, moves: int | None = None) -> dict:
        """The run's summary; sim/parallel.py passes what the processes
        measured together: the alive nodes (stand-ins) and identifier moves."""
        cfg = self.config
        if alive is None:
            alive = list(self.alive.values())
        history = self.ring_history
        converged = next((i for i, f in enumerate(history) if f == 1.0), None)
        summary = {
            "system": cfg.system,
            "nodes": cfg.nodes,
            "rounds": cfg.rounds,
            "seed": cfg.seed,
            "subscriptions": cfg.subscriptions,
            "attributes": cfg.attributes,
            "friends": self.overlay_config.friends,
            "small_world": self.overlay_config.small_world,
            "alive_nodes": len(alive),
            "ring_correct_fraction": history[-1],
            # First round (0-based) at whose end the ring was entirely correct.
            "ring_converged_round": converged,
            "max_degree": metrics.max_degree(alive),
            "degree_bound": self.overlay_config.max_links,
            "mean_friend_utility": round(metrics.mean_friend_utility(alive, self.alive), 6),
            "random_pair_utility": round(
                metrics.random_pair_utility(alive, self.metrics_rng, cfg.utility_pairs), 6
            ),
            "failure_timeout": self.overlay_config.failure_timeout,
            "max_dead_link_seconds": round(self.max_dead_link_seconds, 6),
            **self.stats,
        }
        if cfg.events_per_round > 0:
            summary["events_per_round"] = cfg.events_per_round
            summary["warmup_rounds"] = cfg.warmup
            summary["deadline_rounds"] = cfg.deadline_rounds
            summary.update(self.ledger.summary())
            summary["identifier_moves"] = moves if moves is not None else self.moves()
        if self.replay is not None:
            summary.update(
                round_seconds=self.replay.round_seconds,
                departure_kind=self.replay.departures,
                trace_nodes=len(self.replay.node_names),
                **self.replay_counts,
            )
        if self.kill_rounds:
            k = self.kill_rounds[-1]
            back = next((i for i in range(k, len(history)) if history[i] == 1.0), None)
            summary["kill_round"] = k
            # Rounds after the kill until the ring was entirely correct again.
            summary["ring_recovery_rounds"] = None if back is None else back - k + 1
        return summary
