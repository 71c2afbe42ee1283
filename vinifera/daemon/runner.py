"""The trio driver: one UDP socket, one timer, the protocol state machine.

It only moves bytes and time in and actions out; every decision is the pure
core's (vinifera.protocol). Tasks live in one nursery; stopping cancels it
and the node then leaves gracefully and flushes its log.

Receiving is two steps: drain the socket (non-blocking reads, each datagram
through admission: per-host and per-port budgets, on the source address
alone) into a fair queue, then handle a batch from it, one host after
another. Reading stays cheap, so a flood is refused in user space before the
kernel buffer overflows onto honest datagrams.
"""

from __future__ import annotations

import random
import socket
import time
from collections import Counter
from collections.abc import Callable, Mapping

import trio

from vinifera.daemon.admission import Admission, FairQueue
from vinifera.daemon.control import serve_control
from vinifera.daemon.diagnostics import node_logger
from vinifera.daemon.gate import Gate
from vinifera.daemon.journal import recent_deliveries
from vinifera.daemon.metrics import NodeMetrics
from vinifera.daemon.outbox import Outbox
from vinifera.daemon.reassembly import Reassembly
from vinifera.daemon.settings import NodeSettings
from vinifera.errors import SchemaError, brief
from vinifera.expr import parse_subscription
from vinifera.jsonlines import JsonLinesWriter
from vinifera.protocol.actions import Deliver, Log, Send
from vinifera.protocol.messages import EventMessage, EventPush
from vinifera.protocol.node import Node as ProtocolNode
from vinifera.subscription import Event, Subscription
from vinifera.wire import (
    MAX_DATAGRAM,
    Decoder,
    WireError,
    encode_sends,
    format_address,
    parse_address,
)
from vinifera.wire.fragments import MSG_ID_LIMIT, Fragment, split_body

# Bad datagrams are logged individually up to this many per reason, then
# only counted (a flood must not become a flood of log lines).
LOG_BAD_FIRST = 20
# Datagrams read from the socket per round at most, and handled per round:
# reading (and refusing) is ~100x cheaper than handling, so the socket is
# drained far faster than a flood can fill it.
DRAIN_BATCH = 512
# Messages that carry an event, checked against NodeSettings.seal_policy.
SEALED_KINDS = (EventMessage, EventPush)
# CPU time (this thread's: another process taking the core costs the
# sender nothing) one admission token pays for (Admission.charge): above
# what a Ping costs in pure Python, so ordinary messages pay just their token.
WORK_TOKEN_SECONDS = 250e-6
HANDLE_BATCH = 32


class Delivery:
    """An event handed to the application."""

    __slots__ = ("eid", "event", "hops", "t")

    def __init__(self, eid: int, event: Event, hops: int, t: float) -> None:
        self.eid = eid
        self.event = event
        self.hops = hops
        self.t = t

    @property
    def values(self) -> dict:
        return dict(self.event.values)

    def to_json(self) -> dict:
        return {"t": self.t, "eid": self.eid, "hops": self.hops, "values": self.values}

    def __repr__(self) -> str:
        return f"Delivery(eid={self.eid}, hops={self.hops}, {self.event!r})"


class Clock:
    """Monotonic seconds that read as Unix time: logs of different nodes
    line up, and timers never see the wall clock jump."""

    def __init__(self) -> None:
        self._offset = time.time() - trio.current_time()

    def now(self) -> float:
        return self._offset + trio.current_time()


class NodeRunner:
    def __init__(self, settings: NodeSettings) -> None:
        self.settings = settings
        self.address: str | None = None
        self.control_address: str | None = None  # as bound (a TCP port 0 resolved)
        self.node: ProtocolNode | None = None
        self.counters: Counter = Counter()
        # what a node's bandwidth goes to: UDP datagrams and payload bytes by message kind
        self.sent_datagrams: Counter = Counter()
        self.sent_bytes: Counter = Counter()
        self.largest_sent: dict[str, int] = {}  # kind -> the largest datagram sent
        self.received_messages: Counter = Counter()  # kind -> messages that passed every check
        self.received_bytes: Counter = Counter()
        self.bad: Counter = Counter()
        # routing links that appeared since start (sampled every period)
        self.link_changes = 0
        self._links_seen: frozenset = frozenset()
        self.metrics: NodeMetrics | None = None
        self.metrics_address: str | None = None
        self.failures: Counter = Counter()  # exception type -> datagrams it cost
        self._listeners: list[Callable[[Delivery], None]] = []
        self._cancel = trio.CancelScope()
        self._stop_asked: trio.Event | None = None  # set by stop() once running
        self._started = trio.Event()
        self._dest_cache: dict[str, tuple[str, int]] = {}
        self._src_names: dict[tuple, str] = {}
        self._gate: Gate | None = None  # set up in run(), once the clock exists
        self._log: JsonLinesWriter | None = None
        self._sock = None
        self._outbox: Outbox | None = None
        self._decoder = Decoder(settings.schema, settings.network_key)
        self._admission = Admission(settings.limits())
        self._inbound = FairQueue()
        self._reassembly = Reassembly(hold_for=max(2.0, 2 * settings.period))
        self._msg_id = random.SystemRandom().randrange(MSG_ID_LIMIT)  # fragment ids
        self._recv_buf = bytearray(MAX_DATAGRAM + 1)
        self._recv_view = memoryview(self._recv_buf)
        self.recv_buffer: int | None = None  # SO_RCVBUF as the kernel granted it
        # since when we know nobody though given bootstrap nodes (None: we do),
        # and whether we said so
        self._alone_since: float | None = None
        self._said_alone = False
        self.log = node_logger()

    # ----------------------------------------------------------------- life

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Bind, join, serve until stopped; then leave and flush. Signals
        `task_status.started(self)` once the socket is bound and joined."""
        s = self.settings
        host, port = parse_address(s.listen, allow_any_port=True)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_DGRAM) as sock, self._cancel:
            self._set_recv_buffer(sock)
            sock.setblocking(False)
            sock.bind((host, port))  # an IP literal: nothing to resolve, nothing to wait for
            self._sock = sock
            self._outbox = Outbox(sock, self._sent, self.counters)
            self.address = s.advertised_address(sock.getsockname()[1])
            self._decoder.local = self.address  # keyed datagrams are tagged for us
            self.log = self.log.bind(node=self.address)
            if s.signing_key is not None:  # who we are, whatever our address
                self.log = self.log.bind(key=s.signing_key.fingerprint)
            rng = random.Random(s.seed)
            self.node = ProtocolNode(
                self.address,
                s.schema,
                s.overlay_config(),
                rng,
                subscription=s.subscription,
                content=s.content_config(),
            )
            # gossip caps count per host (an IP, an IPv6 prefix), like admission
            self.node.use_hosts(self._host_of)
            if s.links_per_host:
                self.node.use_link_hosts(s.link_host_of(), s.links_per_host)
            self.clock = Clock()
            self._gate = Gate(
                s.network_key,
                self.clock.now(),
                s.replay_skew,
                s.cookie_epoch,
                hold_for=max(2.0, 2 * s.period),
            )
            if s.log_file is not None:
                # A previous life's deliveries are not delivered again.
                since = self.node.dedupe_horizon(self.clock.now())
                self.node.restore_delivered(recent_deliveries(s.log_file, since))
                self._log = JsonLinesWriter(s.log_file, append=True)
            try:
                async with trio.open_nursery() as nursery:
                    await self._execute(self.node.start(self.clock.now(), s.bootstrap))
                    nursery.start_soon(self._receive_loop, sock)
                    nursery.start_soon(self._outbox.serve)
                    nursery.start_soon(self._tick_loop)
                    self._stop_asked = trio.Event()
                    nursery.start_soon(self._stop_when_asked)
                    if s.control is not None:
                        self.control_address = await nursery.start(
                            serve_control, self, s.control, s.control_token
                        )
                    if s.metrics is not None:
                        self.metrics = NodeMetrics(self.status)
                        self.metrics_address = self.metrics.serve(s.metrics)
                    self.log.info(
                        "started",
                        bootstrap=list(s.bootstrap),
                        control=s.control,
                        control_address=self.control_address,
                        metrics_address=self.metrics_address,
                    )
                    self._started.set()
                    task_status.started(self)
            finally:
                with trio.CancelScope(shield=True), trio.move_on_after(2 * s.period):
                    await self._leave()
                if self._log is not None:
                    self._log.close()
                if self.metrics is not None:
                    self.metrics.close()
                self._sock = None

    def stop(self) -> None:
        """Leave gracefully (from any task of this trio run): once the node
        has sent on what it owes (_stop_when_asked), then leave."""
        if self._stop_asked is None or self._sock is None:
            self._cancel.cancel()
        else:
            self._stop_asked.set()

    async def _stop_when_asked(self) -> None:
        """After stop(): let the node tick until its own events are routed
        and its up copies acknowledged (an event published just before
        leaving went nowhere before: issue 73), at most publish_hold + 2
        periods, and not at all once no bootstrap node has answered for
        3 periods (_watch_bootstrap)."""
        await self._stop_asked.wait()
        s = self.settings
        with trio.move_on_after((s.content_config().publish_hold + 2) * s.period):
            while self.node.owes() and not self._said_alone:
                await trio.sleep(s.period / 10)
        self._cancel.cancel()

    async def wait_started(self) -> None:
        await self._started.wait()

    async def _leave(self) -> None:
        node = self.node
        if node is None or not node.alive:
            return
        await self._execute(node.leave(self.clock.now()))
        if self._outbox is not None:
            await self._outbox.drain()
        self.log.info("left", counters=dict(self.counters))

    # ----------------------------------------------------------------- loops

    async def _tick_loop(self) -> None:
        period = self.settings.period
        deadline = trio.current_time()
        while True:
            deadline += period
            await trio.sleep_until(deadline)
            now = self.clock.now()
            await self._execute(self.node.tick(now))
            self._gate.tick(now)
            self._admission.prune(now)
            self._reassembly.prune(now)
            self._watch_bootstrap(now)
            links = frozenset(self.node.overlay.links.by_address)
            self.link_changes += len(links - self._links_seen)
            self._links_seen = links
            if self._log is not None:
                self._log.flush()  # a node killed hard loses at most one period

    def _alone(self) -> bool:
        """Given bootstrap nodes, we know nobody: no view, no links."""
        overlay = self.node.overlay if self.node is not None else None
        return bool(
            self.settings.bootstrap
            and overlay is not None
            and not overlay.cyclon.view
            and not overlay.links.by_address
        )

    def _watch_bootstrap(self, now: float) -> None:
        """Say once, after 3 periods, that no bootstrap node answered (the
        join is retried every period all the same); say when one does."""
        if not self._alone():
            if self._said_alone:
                self.log.info("joined", after_s=round(now - (self._alone_since or now), 1))
            self._alone_since, self._said_alone = None, False
            return
        if self._alone_since is None:
            self._alone_since = now
        elif not self._said_alone and now - self._alone_since >= 3 * self.settings.period:
            self._said_alone = True
            self.log.warning(
                "no bootstrap node answered",
                bootstrap=list(self.settings.bootstrap),
                waited_s=round(now - self._alone_since, 1),
                hint="still trying every period; is a node running at that address, "
                "with the same network key?",
            )

    def _set_recv_buffer(self, sock: socket.socket) -> None:
        want = self.settings.recv_buffer
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, want)
        # Linux reports twice what it grants (the other half is bookkeeping)
        got = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        self.recv_buffer = got
        if got < want:
            self.log.warning(
                "receive buffer capped by the kernel; raise net.core.rmem_max for more",
                wanted=want,
                got=got,
            )

    async def _receive_loop(self, sock: socket.socket) -> None:
        queue = self._inbound
        while True:
            if not queue:
                await trio.lowlevel.wait_readable(sock)
            self._drain(sock)
            for _ in range(HANDLE_BATCH):
                item = queue.pop()
                if item is None:
                    break
                data, src, host = item
                started = time.thread_time()
                try:
                    await self._handle(data, src)
                # The trust boundary: whatever one datagram does to the decoder or a
                # handler (a bug we have not found yet), it costs that datagram only.
                # Cancellation is a BaseException and still ends the loop.
                except Exception as err:  # noqa: BLE001
                    self._count_failure(err, src)
                # budgets count work: beyond the token paid on admission, the
                # sender pays for the CPU its datagram took (a 64-entry Shuffle
                # costs ~10x a Ping), with what it made us send
                extra = (time.thread_time() - started) / WORK_TOKEN_SECONDS - 1.0
                if extra > 0:
                    self._admission.charge(host, src[1], extra)
            await trio.lowlevel.checkpoint()  # the tick loop and control get their turn

    def _drain(self, sock: socket.socket) -> None:
        """Read what the socket holds (at most DRAIN_BATCH datagrams) and
        queue what admission lets through."""
        now = self.clock.now()
        admission, queue, counters = self._admission, self._inbound, self.counters
        buf, view = self._recv_buf, self._recv_view
        for _ in range(DRAIN_BATCH):
            try:
                # Into one reused buffer, then copied at its size: recvfrom(n)
                # would malloc n (60 KB) per datagram and shrink it, which
                # fragments the heap (RSS grew ~30 KiB/min per node).
                size, src = sock.recvfrom_into(buf)
                data = bytes(view[:size])
            except BlockingIOError:
                return
            except OSError as err:  # e.g. ICMP errors reported on the socket
                counters["recv_errors"] += 1
                self.log.debug("recv error", error=str(err))
                continue
            counters["datagrams_received"] += 1
            host = admission.host(src[0])
            refused = admission.admit(host, src[1], len(data), now)
            if refused is not None:
                counters["rate_limited"] += 1
                counters["limited_" + refused] += 1
            elif not queue.push(host, (data, src, host), size):
                counters["queue_full"] += 1

    async def _handle(self, data: bytes, src) -> None:
        """One admitted datagram through the decoder, the address proof (or
        the replay window) and the sender checks into the protocol."""
        now = self.clock.now()
        try:
            d = self._decoder.decode_datagram_untrusted(data)
        except WireError as err:
            self._count_bad(err.reason, src, str(err))
            return
        sender = self._name(src)
        verdict = self._gate.inbound(d, sender, len(data), now)
        for reply in verdict.replies:  # handshakes, and messages a first contact held
            await self._sendto(reply, src[:2], "handshake")
        if verdict.bad is not None:
            self._count_bad(verdict.bad, src, verdict.detail)
        if not verdict.passes:
            return
        msg = d.message
        if type(msg) is Fragment:
            whole = self._reassembly.add(sender, msg, now)
            if whole is None:
                return
            try:
                msg = self._decoder.decode_body_untrusted(*whole)
            except WireError as err:
                self._count_bad(err.reason, src, f"reassembled: {err}")
                return
        if msg.profile.address != sender:
            # A profile must name the address it speaks from: no one can
            # act (or get a node to shower) in another node's name.
            self._count_bad("spoofed", src, f"claims {msg.profile.address}")
            return
        if sender == self.address:
            self._count_bad("self", src, "our own address")
            return
        policy = self.settings.seal_policy
        if policy is not None and type(msg) in SEALED_KINDS:
            why = policy.check(msg.event)
            if why is not None:  # not delivered, not passed on
                self._count_bad(why, src, f"event {msg.eid}")
                return
        self.counters["messages_received"] += 1
        kind = type(msg).__name__
        self.received_messages[kind] += 1
        self.received_bytes[kind] += len(data)
        actions = self.node.receive(now, msg)
        if actions:
            await self._execute(actions)

    def _host_of(self, address: str) -> str:
        """The host of a protocol address ('ip:port' or '[v6]:port')."""
        return self._admission.host(address.rpartition(":")[0].strip("[]"))

    def _name(self, src) -> str:
        name = self._src_names.get(src)
        if name is None:
            if len(self._src_names) > 10_000:
                self._src_names.clear()
            name = self._src_names[src] = format_address(src[0], src[1])
        return name

    def _count_failure(self, err: Exception, src) -> None:
        """A datagram that raised past the decoder: counted under
        bad_internal, logged with its traceback once per exception type."""
        kind = type(err).__name__
        self.failures[kind] += 1
        self.counters["bad"] += 1
        self.bad["internal"] += 1
        if self.failures[kind] == 1:
            self.log.error(
                "datagram handling failed; dropped it",
                source=f"{src[0]}:{src[1]}",
                error=f"{kind}: {brief(str(err), 200)}",
                exc_info=err,
            )

    def _count_bad(self, reason: str, src, detail: str) -> None:
        self.counters["bad"] += 1
        self.bad[reason] += 1
        if self.bad[reason] <= LOG_BAD_FIRST:
            self.log.warning(
                "bad datagram", reason=reason, source=f"{src[0]}:{src[1]}", detail=detail
            )

    # ----------------------------------------------------------------- actions

    async def _execute(self, actions: list) -> None:
        sends = []
        for action in actions:
            t = type(action)
            if t is Send:
                sends.append(action)
            elif t is Log:
                if self._log is not None:
                    self._log.write(action.record)
            elif t is Deliver:
                self._deliver(action)
        if sends:
            await self._send(sends)

    async def _send(self, sends: list[Send]) -> None:
        gate = self._gate
        now = self.clock.now()
        split: dict[int, list] = {}  # id(bodies) -> fragmented: copies share them
        for send, (address, bodies) in zip(sends, encode_sends(sends), strict=True):
            if bodies is None:
                self.counters["oversize"] += 1
                self.log.warning("message too big to send", to=address)
                continue
            parts = split.get(id(bodies))
            if parts is None:
                parts = split[id(bodies)] = self._fragmented(bodies)
            bodies = parts
            dest = self._dest_cache.get(address)
            if dest is None:
                dest = parse_address(address)  # addresses were validated on receipt
                if len(self._dest_cache) > 10_000:
                    self._dest_cache.clear()
                self._dest_cache[address] = dest
            kind = type(send.message).__name__
            for data in gate.outbound(address, bodies, now):
                await self._sendto(data, dest, kind)

    def _fragmented(self, bodies: list) -> list:
        """Bodies too big for --max-datagram as fragments (wire/fragments.py)."""
        out = []
        for b in bodies:
            parts = split_body(b, self._msg_id, self.settings.max_datagram)
            if len(parts) > 1:
                self._msg_id = (self._msg_id + 1) % MSG_ID_LIMIT
                self.counters["fragmented"] += 1
            out.extend(parts)
        return out

    async def _sendto(self, data: bytes, dest: tuple[str, int], kind: str) -> None:
        """Send one datagram, counted by the kind of message it carries (a
        first contact's Hello under the kind it holds back); while the
        socket's buffer is full it waits in the outbox, by priority."""
        if self._outbox is not None:  # (None only before run() binds)
            self._outbox.send(data, dest, kind)

    def _sent(self, kind: str, size: int) -> None:
        self.counters["datagrams_sent"] += 1
        self.sent_datagrams[kind] += 1
        self.sent_bytes[kind] += size
        if size > self.largest_sent.get(kind, 0):
            self.largest_sent[kind] = size

    def _deliver(self, action: Deliver) -> None:
        self.counters["delivered"] += 1
        d = Delivery(action.eid, action.event, action.hops, self.clock.now())
        if self.metrics is not None:
            born = action.event.born
            self.metrics.delivered(d.hops, None if born is None else d.t - born)
        for listener in self._listeners:
            listener(d)

    # ----------------------------------------------------------------- application

    def add_listener(self, listener: Callable[[Delivery], None]) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[Delivery], None]) -> None:
        self._listeners.remove(listener)

    def _require_running(self) -> ProtocolNode:
        if self.node is None or not self.node.alive or self._sock is None:
            raise RuntimeError("the node is not running")
        return self.node

    async def publish(self, values: Mapping | Event) -> int:
        """Publish an event (a mapping attribute -> value, checked against the
        schema: SchemaError on bad values). Returns the event id."""
        node = self._require_running()
        event = values if isinstance(values, Event) else Event.build(self.settings.schema, values)
        now = self.clock.now()
        # our (wall) clock: subscribers measure delivery latency from it
        event = event.carrying(event.seal, now)
        if self.settings.signing_key is not None:
            event = self.settings.signing_key.seal(event)
        published = node.publish(now, event)
        await self._execute(published.actions)
        return published.eid

    async def subscribe(self, subscription: str | Subscription | None) -> Subscription | None:
        """Change the subscription at run time (an expression, a Subscription
        or None to unsubscribe). SchemaError/ExprError on a bad expression."""
        node = self._require_running()
        if isinstance(subscription, str):
            subscription = parse_subscription(subscription, self.settings.schema)
        elif subscription is not None and not isinstance(subscription, Subscription):
            raise SchemaError("subscription must be an expression, a Subscription or None")
        await self._execute(node.subscribe(self.clock.now(), subscription))
        return subscription

    def status(self) -> dict:
        node = self._require_running()
        return {
            "address": self.address,
            **node.snapshot(),
            "counters": {
                **dict(self.counters),
                **{f"bad_{k}": v for k, v in self.bad.items()},
                **self._gate.status(),
                **self._reassembly.counters,
            },
            "sent_datagrams": dict(self.sent_datagrams),
            "sent_bytes": dict(self.sent_bytes),
            "largest_sent": dict(self.largest_sent),
            "received_messages": dict(self.received_messages),
            "received_bytes": dict(self.received_bytes),
            "link_changes": self.link_changes,
            "recv_buffer": self.recv_buffer,
            # datagrams waiting for room in the socket's send buffer (outbox.py)
            "outbox": len(self._outbox) if self._outbox is not None else 0,
            "top_hosts": self._admission.top_hosts(),
            "protocol_counters": node.counters(),
            "period": self.settings.period,
            "signing_key": getattr(self.settings.signing_key, "fingerprint", None),
            "system": self.settings.system,
            # given bootstrap nodes, nobody has answered (yet): the node is alone
            "alone": self._alone(),
        }
