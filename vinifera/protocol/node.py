"""One Vinifera node as a pure state machine: the only object a driver talks to.

    node = Node(address, schema, config, rng, subscription=...)
    actions = node.start(now, bootstrap)      # Send / Log actions
    actions = node.tick(now)                  # once per gossip period
    actions = node.receive(now, message)      # a message from a peer
    actions = node.leave(now)

Every call takes `now` and returns the list of actions the driver must carry
out. Messages are dispatched through a table of small handlers.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from vinifera.protocol import messages as m
from vinifera.protocol.actions import Log, Published
from vinifera.protocol.config import ContentConfig, OverlayConfig
from vinifera.protocol.content import Content, subscription_identifier
from vinifera.protocol.overlay import Overlay
from vinifera.protocol.profile import Profile
from vinifera.protocol.records import hex_id, record
from vinifera.protocol.tman import Links
from vinifera.ring import RING_BITS
from vinifera.schema import Schema
from vinifera.subscription import Event, Subscription


class Node:
    def __init__(
        self,
        address: Hashable,
        schema: Schema,
        config: OverlayConfig,
        rng: random.Random,
        subscription: Subscription | None = None,
        ident: int | None = None,
        content: ContentConfig | None = None,
    ) -> None:
        self.schema = schema
        self.config = config
        self.content_config = content = content or ContentConfig()
        self.rng = rng
        self.out: list = []
        if ident is None:
            if content.identifier == "subscription" and subscription is not None:
                ident = subscription_identifier(subscription, subscription.attributes[0], rng)
            else:
                ident = rng.getrandbits(RING_BITS)
        share = content.route_lookahead or content.rows_lookahead
        self.overlay = Overlay(Profile(address, ident, subscription), config, rng, self.out, share)
        # The content layer draws from its own stream, so its choices (event
        # ids, push targets, shedding) never consume the overlay's draws.
        content_rng = random.Random(rng.getrandbits(64))
        self.content = Content(self.overlay, content, content_rng, self.out)
        self.overlay.peer_gone = self.content.peer_gone
        self.alive = False
        self._received = 0  # messages handled
        self._handlers: dict[type, Callable[[float, Any], None]] = {
            m.Join: self.overlay.on_join,
            m.JoinReply: self.overlay.on_join_reply,
            m.Shuffle: self.overlay.on_shuffle,
            m.ShuffleReply: self.overlay.on_shuffle_reply,
            m.TmanRequest: self.overlay.on_tman,
            m.TmanReply: self.overlay.on_tman_reply,
            m.Ping: self.overlay.on_ping,
            m.Pong: self._on_pong,
            m.Leave: self.overlay.on_leave,
            m.Install: self.content.on_install,
            m.Refresh: self.content.on_refresh,
            m.RowRequest: self.content.on_row_request,
            m.Withdraw: self.content.on_withdraw,
            m.EventMessage: self.content.forest.on_event,
            m.EventPush: self.content.forest.on_push,
            m.Have: self.content.forest.on_have,
            m.LoadReport: self.content.balancer.on_load,
            m.HandoverRequest: self.content.balancer.on_handover_request,
            m.Handover: self.content.balancer.on_handover,
        }

    # ----------------------------------------------------------------- queries

    @property
    def profile(self) -> Profile:
        return self.overlay.profile

    @property
    def address(self) -> Hashable:
        return self.overlay.profile.address

    @property
    def ident(self) -> int:
        return self.overlay.profile.ident

    @property
    def subscription(self) -> Subscription | None:
        return self.overlay.profile.subscription

    @property
    def name(self) -> str:
        return self.overlay.name

    @property
    def primary(self) -> str | None:
        """The attribute our friends are chosen on (Algorithm 1)."""
        return self.overlay.primary.current

    def links(self) -> Links:
        """The routing table now: addresses by role (`succ`, `pred`,
        `friends`, `small_world`) and `by_address`. Read only: a reselection
        replaces it."""
        return self.overlay.links

    def link_addresses(self) -> list[Hashable]:
        return self.overlay.link_addresses()

    def view(self) -> list[Hashable]:
        """The addresses in the Cyclon view (peer sampling)."""
        return list(self.overlay.cyclon.view)

    def counters(self) -> dict[str, int]:
        """Every protocol counter: the overlay's, the content layer's, and
        `received` (messages handled)."""
        return {**self.overlay.counters, **self.content.counters, "received": self._received}

    def snapshot(self) -> dict[str, Any]:
        """What a driver shows of this node (JSON-able): identity, links,
        view, vetting and CRT rows (counters: `counters()`)."""
        overlay, content = self.overlay, self.content
        links = overlay.links
        sub = self.subscription
        rows = [
            {
                "attribute": attr,
                "neighbour": nb,
                "filters": len(row.filters),
                "ranges": [[hex_id(lo), hex_id(hi)] for lo, hi in row.keys.intervals],
            }
            for attr, by_nb in content.crt.rows.items()
            for nb, row in by_nb.items()
        ]
        return {
            "id": hex_id(self.ident),
            "subscription": None if sub is None else str(sub),
            "primary": self.primary,
            # own subscription installed toward its rendezvous (or nothing to install)
            "installed": content.ready or sub is None,
            "links": {
                "succ": links.succ,
                "pred": links.pred,
                "friends": list(links.friends),
                "small_world": list(links.small_world),
            },
            "view": sorted(overlay.cyclon.view),
            # gossip vetting: nodes that answered us lately, and those ignored
            "verified": len(overlay.vetting.answered),
            "silent": len(overlay.vetting.silent),
            "crt_rows": rows,
        }

    def dedupe_horizon(self, now: float) -> float:
        """Deliveries older than this are forgotten (so a restarted daemon
        needs its journal only back to here)."""
        return self.content.dedupe_horizon(now)

    def use_hosts(self, host_of: Callable[[Hashable], Hashable]) -> None:
        """Count gossip caps per host(address), not per address (the daemon:
        an IP or an IPv6 prefix, one machine with many ports)."""
        self.overlay.use_hosts(host_of)

    def use_link_hosts(self, host_of: Callable[[Hashable], Hashable], per_host: int) -> None:
        """At most `per_host` routing links per host(address), never both
        ring links (Overlay.use_link_hosts)."""
        self.overlay.use_link_hosts(host_of, per_host)

    # ----------------------------------------------------------------- inputs

    def start(self, now: float, bootstrap: Sequence[Hashable] = ()) -> list:
        if self.alive:
            raise RuntimeError("node already started")
        self.alive = True
        sub = self.subscription
        self.out.append(
            Log(
                record(
                    now,
                    self.name,
                    "join",
                    id=hex_id(self.ident),
                    sub=None if sub is None else sub.to_plain(),
                )
            )
        )
        self.overlay.start(now, bootstrap)
        return self._flush()

    def tick(self, now: float) -> list:
        self._require_alive()
        self.overlay.tick(now)
        self.content.tick(now)
        return self._flush()

    def publish(self, now: float, event: Event) -> Published:
        """Publish an event; returns its id with the actions."""
        self._require_alive()
        if not isinstance(event, Event):
            raise TypeError("event must be a vinifera.subscription.Event")
        eid = self.content.publish(now, event)
        return Published(eid, self._flush())

    def receive(self, now: float, message: m.Message) -> list:
        """A decoded message from a peer. Its profile names the sender."""
        self._require_alive()
        handler = self._handlers.get(type(message))
        if handler is None:
            raise TypeError(f"no handler for {type(message).__name__}")
        self._received += 1
        handler(now, message)
        return self._flush()

    def subscribe(self, now: float, subscription: Subscription | None) -> list:
        """Change the local subscription at run time (logged: ground truth)."""
        self._require_alive()
        if subscription is not None and not isinstance(subscription, Subscription):
            raise TypeError("subscription must be a Subscription or None")
        profile = self.profile.changed(subscription=subscription)
        self.out.append(
            Log(
                record(
                    now,
                    self.name,
                    "subscribe",
                    sub=None if subscription is None else subscription.to_plain(),
                )
            )
        )
        self.overlay.set_profile(now, profile, subscription_changed=True)
        self.content.subscription_changed(now)
        return self._flush()

    def owes(self) -> bool:
        """Whether leaving now would lose events this node still has to send
        on (a driver that can wait lets the node tick until it does not)."""
        return self.alive and self.content.owes()

    def leave(self, now: float) -> list:
        """Graceful departure: tell the neighbours, log it, stop."""
        self._require_alive()
        self.overlay.leave(now)
        self.out.append(Log(record(now, self.name, "leave")))
        self.alive = False
        return self._flush()

    def delivered_journal(self) -> tuple[tuple[float, Hashable], ...]:
        """(time, event id) of the recent deliveries (within dedupe_memory):
        what a daemon keeps on disk so that a restart does not deliver an
        event twice to its application."""
        return self.content.forest.delivered.times()

    def restore_delivered(self, journal) -> None:
        """Before start: take a previous incarnation's delivery journal; its
        events are not delivered again (they expire as usual)."""
        if self.alive:
            raise RuntimeError("restore_delivered goes before start")
        self.content.restore_delivered(journal)

    def discard(self) -> None:
        """The driver is done with this incarnation (a simulator's trace
        rejoin replaces it): its parts let go of each other, so reference
        counting frees it at once instead of a cyclic collection that walks
        every live node. Nothing may be called on it afterwards."""
        self.alive = False
        self._handlers.clear()  # bound methods, one of them our own
        self.overlay.peer_gone = None
        self.content.discard()

    # ----------------------------------------------------------------- internals

    def _on_pong(self, now: float, msg: m.Pong) -> None:
        # A pong is a liveness answer and also acknowledges event copies.
        self.overlay.on_pong(now, msg)
        self.content.on_ack(now, msg.profile.address)

    def _require_alive(self) -> None:
        if not self.alive:
            raise RuntimeError("node is not running (call start first)")

    def _flush(self) -> list:
        out = self.out[:]
        self.out.clear()
        return out
