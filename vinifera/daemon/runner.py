"""The trio driver: one UDP socket, one timer, the protocol state machine.

It only moves bytes and time in and actions out; every decision is the pure
core's (vinifera.protocol). Tasks live in one nursery; stopping cancels it
and the node then leaves gracefully and flushes its log.
"""

from __future__ import annotations

import random
import socket
import time
from collections import Counter
from collections.abc import Callable, Mapping

import structlog
import trio

from vinifera.daemon.control import serve_control
from vinifera.daemon.journal import recent_deliveries
from vinifera.daemon.ratelimit import PeerRateLimiter
from vinifera.daemon.settings import NodeSettings
from vinifera.errors import SchemaError, brief
from vinifera.expr import parse_subscription
from vinifera.jsonlines import JsonLinesWriter
from vinifera.protocol.actions import Deliver, Log, Send
from vinifera.protocol.node import Node as ProtocolNode
from vinifera.protocol.records import hex_id
from vinifera.subscription import Event, Subscription
from vinifera.wire import (
    MAX_DATAGRAM,
    Decoder,
    WireError,
    encode_sends,
    format_address,
    parse_address,
)

# Bad datagrams are logged individually up to this many per reason, then
# only counted (a flood must not become a flood of log lines).
LOG_BAD_FIRST = 20


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
        self.node: ProtocolNode | None = None
        self.counters: Counter = Counter()
        self.bad: Counter = Counter()
        self.failures: Counter = Counter()  # exception type -> datagrams it cost
        self._listeners: list[Callable[[Delivery], None]] = []
        self._cancel = trio.CancelScope()
        self._started = trio.Event()
        self._dest_cache: dict[str, tuple[str, int]] = {}
        self._log: JsonLinesWriter | None = None
        self._sock = None
        self._decoder = Decoder(settings.schema, settings.network_key)
        self._limiter = PeerRateLimiter(settings.peer_rate, settings.peer_burst)
        self.log = structlog.get_logger("vinifera.node")

    # ----------------------------------------------------------------- life

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Bind, join, serve until stopped; then leave and flush. Signals
        `task_status.started(self)` once the socket is bound and joined."""
        s = self.settings
        host, port = parse_address(s.listen, allow_any_port=True)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with trio.socket.socket(family, socket.SOCK_DGRAM) as sock, self._cancel:
            await sock.bind((host, port))
            self._sock = sock
            self.address = s.advertised_address(sock.getsockname()[1])
            self.log = self.log.bind(node=self.address)
            rng = random.Random(s.seed)
            self.node = ProtocolNode(
                self.address,
                s.schema,
                s.overlay_config(),
                rng,
                subscription=s.subscription,
                content=s.content_config(),
            )
            self.clock = Clock()
            if s.log_file is not None:
                # A previous life's deliveries are not delivered again.
                since = self.node.content.dedupe_horizon(self.clock.now())
                self.node.restore_delivered(recent_deliveries(s.log_file, since))
                self._log = JsonLinesWriter(s.log_file, append=True)
            try:
                async with trio.open_nursery() as nursery:
                    await self._execute(self.node.start(self.clock.now(), s.bootstrap))
                    nursery.start_soon(self._receive_loop, sock)
                    nursery.start_soon(self._tick_loop)
                    if s.control is not None:
                        await nursery.start(serve_control, self, s.control)
                    self.log.info("started", bootstrap=list(s.bootstrap), control=s.control)
                    self._started.set()
                    task_status.started(self)
            finally:
                with trio.CancelScope(shield=True), trio.move_on_after(2 * s.period):
                    await self._leave()
                if self._log is not None:
                    self._log.close()
                self._sock = None

    def stop(self) -> None:
        """Leave gracefully (from any task of this trio run)."""
        self._cancel.cancel()

    async def wait_started(self) -> None:
        await self._started.wait()

    async def _leave(self) -> None:
        node = self.node
        if node is None or not node.alive:
            return
        await self._execute(node.leave(self.clock.now()))
        self.log.info("left", counters=dict(self.counters))

    # ----------------------------------------------------------------- loops

    async def _tick_loop(self) -> None:
        period = self.settings.period
        deadline = trio.current_time()
        while True:
            deadline += period
            await trio.sleep_until(deadline)
            await self._execute(self.node.tick(self.clock.now()))
            if self._log is not None:
                self._log.flush()  # a node killed hard loses at most one period

    async def _receive_loop(self, sock) -> None:
        counters = self.counters
        while True:
            try:
                data, src = await sock.recvfrom(MAX_DATAGRAM + 1)
            except OSError as err:  # e.g. ICMP errors reported on the socket
                counters["recv_errors"] += 1
                self.log.debug("recv error", error=str(err))
                continue
            counters["datagrams_received"] += 1
            try:
                actions = self._accept(data, src)
                if actions:
                    await self._execute(actions)
            # The trust boundary: whatever one datagram does to the decoder or a
            # handler (a bug we have not found yet), it costs that datagram only.
            # Cancellation is a BaseException and still ends the loop.
            except Exception as err:  # noqa: BLE001
                self._count_failure(err, src)

    def _accept(self, data: bytes, src) -> list:
        """One datagram through the rate limit, the decoder and the sender
        checks into the protocol; the actions it causes."""
        now = self.clock.now()
        if not self._limiter.allow(src[:2], now):
            self.counters["rate_limited"] += 1
            return []
        try:
            msg = self._decoder.decode_untrusted(data)
        except WireError as err:
            self._count_bad(err.reason, src, str(err))
            return []
        if msg.profile.address != format_address(src[0], src[1]):
            # A profile must name the address it speaks from: no one can
            # act (or get a node to shower) in another node's name.
            self._count_bad("spoofed", src, f"claims {msg.profile.address}")
            return []
        if msg.profile.address == self.address:
            self._count_bad("self", src, "our own address")
            return []
        self.counters["messages_received"] += 1
        return self.node.receive(now, msg)

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
        counters = self.counters
        for address, datagrams in encode_sends(sends, self.settings.network_key):
            if datagrams is None:
                counters["oversize"] += 1
                self.log.warning("message too big to send", to=address)
                continue
            dest = self._dest_cache.get(address)
            if dest is None:
                dest = parse_address(address)  # addresses were validated on receipt
                if len(self._dest_cache) > 10_000:
                    self._dest_cache.clear()
                self._dest_cache[address] = dest
            for data in datagrams:
                try:
                    await self._sock.sendto(data, dest)
                except OSError:
                    counters["send_errors"] += 1
                else:
                    counters["datagrams_sent"] += 1

    def _deliver(self, action: Deliver) -> None:
        self.counters["delivered"] += 1
        d = Delivery(action.info["eid"], action.event, action.info["hops"], self.clock.now())
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
        eid, actions = node.publish(self.clock.now(), event)
        await self._execute(actions)
        return eid

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
        overlay = node.overlay
        links = overlay.links
        crt = node.content.crt
        rows = []
        for attr, by_nb in crt.rows.items():
            for nb, row in by_nb.items():
                rows.append(
                    {
                        "attribute": attr,
                        "neighbour": nb,
                        "filters": len(row.filters),
                        "ranges": [[hex_id(lo), hex_id(hi)] for lo, hi in row.keys.intervals],
                    }
                )
        sub = node.subscription
        return {
            "address": self.address,
            "id": hex_id(node.ident),
            "subscription": None if sub is None else str(sub),
            "primary": overlay.primary.current,
            # own subscription installed toward its rendezvous (or nothing to install)
            "installed": node.content.ready or sub is None,
            "links": {
                "succ": links.succ,
                "pred": links.pred,
                "friends": list(links.friends),
                "small_world": list(links.small_world),
            },
            "view": sorted(overlay.cyclon.view),
            "crt_rows": rows,
            "counters": {**dict(self.counters), **{f"bad_{k}": v for k, v in self.bad.items()}},
            "protocol_counters": {**overlay.counters, **node.content.counters},
            "period": self.settings.period,
            "system": self.settings.system,
        }
