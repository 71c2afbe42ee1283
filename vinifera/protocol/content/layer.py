"""The content layer of one node: what the node talks to, and the state its
parts share (the routing view, configuration, counters, output).

- installation.py: what is asked of this node and routed on (CRT rows);
- forest.py: events up to their rendezvous and down the rows;
- balancing.py: identifier moves and push shedding;
- filters.py, crt.py, memory.py: the data structures they use.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Hashable

from vinifera.protocol import messages as m
from vinifera.protocol.config import ContentConfig
from vinifera.protocol.content.balancing import Balancer
from vinifera.protocol.content.crt import Crt
from vinifera.protocol.content.forest import Forest, HeldEvent
from vinifera.protocol.content.installation import Installation
from vinifera.protocol.content.retry import Retries
from vinifera.protocol.overlay import Overlay
from vinifera.protocol.profile import Profile
from vinifera.protocol.routing import RouteView
from vinifera.protocol.tman import Links
from vinifera.ranges import IntervalSet
from vinifera.ring import RING_BITS, RING_MAX, in_arc
from vinifera.subscription import Event, Subscription


def attribute_key(attr: str) -> int:
    """The baseline's single rendezvous key of an attribute."""
    return int.from_bytes(hashlib.blake2b(attr.encode(), digest_size=8).digest(), "big")


def subscription_identifier(sub: Subscription | None, attr: str | None, rng: random.Random) -> int:
    """Subscription awareness: a uniformly random key inside the node's own
    range on `attr`, so that the node is a rendezvous of what it wants. A
    point range is widened to 2^16 keys so that equal subscriptions do not
    collide on one identifier."""
    if sub is None or attr is None or attr not in sub.key_ranges:
        return rng.getrandbits(RING_BITS)
    lo, hi = sub.key_ranges[attr]
    return min(RING_MAX, lo + rng.randrange(max(hi - lo, 1 << 16) + 1))


COUNTERS = (
    "events_received", "events_duplicate", "events_dropped", "events_delivered",
    "events_published", "installs_received", "moves", "events_retried",
    "events_caught_up", "events_handed_over", "events_rerouted", "events_pushed", "pushes_shed",
    "up_copies_not_held", "have_sent", "have_received",
)  # fmt: skip


class Content:
    # discard() lets go of the parts, which all refer back to the layer
    __deletable__ = ["installation", "forest", "retries", "balancer"]

    def __init__(self, overlay: Overlay, config: ContentConfig, rng: random.Random, out: list):
        self.overlay = overlay
        self.config = config
        self.rng = rng
        self.out = out
        self.period = overlay.config.period
        self.counters = dict.fromkeys(COUNTERS, 0)
        self._view: RouteView | None = None
        self._view_links: Links | None = None
        # (our identifier, link moves, next hops' version)
        self._view_stamp: tuple[int, int, int] | None = None
        self._view_sig: tuple | None = None
        self._view_hops = 0  # the next hops' version the view was built with
        self.view_version = 0  # bumped when the routing view changes
        # where up copies may jump besides our links (route_shortcuts), as of
        # the last tick: (identifiers, addresses)
        self.shortcuts: tuple[list[int], list[Hashable]] = ([], [])
        self.known_profiles: list[Profile] = []  # ... their profiles (route_to_interest)
        self.started: float | None = None
        self.ready = False  # own subscription installed (see install_min_delay)
        self._last_tick_version = -1
        self._tick_ring: tuple[int, int | None] | None = None  # (our ident, pred's) last tick
        self.installation = Installation(self)
        self.forest = Forest(self)
        self.retries = Retries(self)
        self.balancer = Balancer(self)
        self.installation.on_row_changed = self.forest.catch_up if config.catch_up > 0 else None
        self._refresh_own()

    def discard(self) -> None:
        """The node is retired (Node.discard): break the cycles between the
        layer and its parts so that they are freed without a collection."""
        self.installation.on_row_changed = None
        del self.installation, self.forest, self.retries, self.balancer

    # ----------------------------------------------------------------- queries

    @property
    def profile(self) -> Profile:
        return self.overlay.profile

    @property
    def address(self) -> Hashable:
        return self.overlay.profile.address

    @property
    def name(self) -> str:
        return self.overlay.name

    @property
    def crt(self) -> Crt:
        return self.installation.crt

    def view(self) -> RouteView:
        """Routing knowledge, rebuilt only when the links, their identifiers
        (a link that moved) or ours change."""
        overlay = self.overlay
        links = overlay.links
        lookahead = self.config.route_lookahead or self.config.rows_lookahead
        hops_version = overlay.next_hops_version if lookahead else 0
        stamp = (overlay.profile.ident, overlay.link_moves, hops_version)
        if self._view is not None and self._view_links is links and self._view_stamp == stamp:
            return self._view
        ident = stamp[0]
        by = links.by_address
        known = sorted((e.profile.ident, a) for a, e in by.items())
        # rows route on the look-ahead table too only with rows_lookahead
        sig = (ident, links.pred, links.succ, tuple(known),
               hops_version if self.config.rows_lookahead else 0)  # fmt: skip
        self._view_links, self._view_stamp = links, stamp
        changed = sig != self._view_sig
        if changed or self._view is None or (lookahead and self._view_hops != hops_version):
            pred = by[links.pred].profile.ident if links.pred is not None else None
            succ = (by[links.succ].profile.ident, links.succ) if links.succ is not None else None
            hops = overlay.next_hops if lookahead else None
            self._view = RouteView(ident, pred, succ, known, self.config.rows_overshoot, hops,
                                   self.config.rows_lookahead)  # fmt: skip
            self._view_hops = hops_version
            # rows route on our links alone: a change of our links' links
            # makes a new view for up copies, not a re-route of the rows
            if changed:
                self._view_sig = sig
                self.view_version += 1
        return self._view

    def install_attribute(self) -> str | None:
        sub = self.profile.subscription
        if sub is None:
            return None
        if self.config.use_primary and self.overlay.primary.current in sub.key_ranges:
            return self.overlay.primary.current
        return sub.attributes[0]

    def event_keys(self, event: Event) -> list[tuple[str, int]]:
        if self.config.rendezvous == "attribute":
            return [(attr, attribute_key(attr)) for attr, _ in event.items]
        keys = event.keys()
        return [(attr, keys[attr]) for attr, _ in event.items]

    def dedupe_horizon(self, now: float) -> float:
        """Deliveries (and handled copies) older than this are forgotten."""
        return now - self.config.dedupe_memory * self.period

    # balancing measures the forest feeds and reads
    def note_rendezvous(self, now: float, key: int, interested: bool) -> None:
        self.balancer.note_rendezvous(now, key, interested)

    def note_forwarded(self, now: float, eid: int) -> None:
        self.balancer.note_forwarded(now, eid)

    def forwarded_lately(self, eid: int) -> bool:
        return eid in self.balancer.forwarded

    def shedding(self, now: float) -> bool:
        return self.balancer.shedding(now)

    def load(self) -> float:
        return self.balancer.load()

    def forwarding(self) -> float:
        return self.balancer.forwarding()

    # ----------------------------------------------------------------- periodic

    def tick(self, now: float) -> None:
        cfg = self.config
        forest = self.forest
        if cfg.route_shortcuts or cfg.route_to_interest:
            known = self.overlay.known_fresh(now, cfg.shortcuts_unverified)
            if cfg.route_shortcuts:
                self.shortcuts = self.overlay.shortcuts(known)
            if cfg.route_to_interest:
                self.known_profiles = [e.profile for e in known]
        forest.period_events = 0
        forest.forget_before(self.dedupe_horizon(now), now - cfg.catch_up * self.period)
        self.balancer.forget_before(now - cfg.balance_window * self.period)
        if self.retries.unacked:
            self.retries.retry(now)
        if forest.held:
            forest.release_held(now)
        if cfg.catch_up > 0:
            self._hand_over_keys(now)
        if not self.ready:
            if self.started is None:
                self.started = now - self.period  # first tick: one period after start
            age = (now - self.started) / self.period
            self.view()
            steady = self.view_version == self._last_tick_version
            if age >= cfg.install_min_delay and steady or age >= cfg.install_max_delay:
                self.ready = True
            self._last_tick_version = self.view_version
        self._refresh_own()
        self.installation.tick(now)
        self.balancer.tick(now)

    def _hand_over_keys(self, now: float) -> None:
        """A predecessor that appeared inside the arc we took for ours owns
        part of it: we were the wrong rendezvous for those keys lately (a
        stale ring nobody disputed), so it gets the recent events we handled
        for them (see Forest.hand_over)."""
        view = self.view()
        ring = (view.me, view.pred)
        last, self._tick_ring = self._tick_ring, ring
        if last is None or last[0] != view.me or last[1] is None or view.pred is None:
            return
        if view.pred != last[1] and in_arc(view.pred, last[1], view.me):
            self.forest.hand_over(now, last[1], view.pred, self.overlay.links.pred)

    def _refresh_own(self) -> None:
        """Recompute what we ask for ourselves: one range in one tree."""
        sub = self.profile.subscription
        attr = self.install_attribute()
        if sub is None or attr is None or not self.ready:
            self.installation.refresh_own(None, None, True)
        elif self.config.rendezvous == "attribute":
            key = attribute_key(attr)
            self.installation.refresh_own(attr, IntervalSet.of(key, key), False)
        else:
            self.installation.refresh_own(attr, IntervalSet.of(*sub.key_ranges[attr]), True)

    def subscription_changed(self, now: float) -> None:
        self._refresh_own()
        self.installation.route(now)

    # ----------------------------------------------------------------- inputs

    def publish(self, now: float, event: Event) -> int:
        eid = self.rng.getrandbits(63)
        self.forest.publish(now, eid, event)
        return eid

    def on_install(self, now: float, msg: m.Install) -> None:
        self.overlay.refresh_link(now, msg.profile)
        self.counters["installs_received"] += 1
        self.installation.on_install(now, msg)

    def on_refresh(self, now: float, msg: m.Refresh) -> None:
        self.overlay.refresh_link(now, msg.profile)
        self.installation.on_refresh(now, msg)

    def on_row_request(self, now: float, msg: m.RowRequest) -> None:
        self.overlay.refresh_link(now, msg.profile)
        self.installation.on_row_request(now, msg)

    def on_withdraw(self, now: float, msg: m.Withdraw) -> None:
        self.overlay.refresh_link(now, msg.profile)
        self.installation.on_withdraw(now, msg)

    def peer_gone(self, now: float, address: Hashable) -> None:
        self.installation.peer_gone(now, address)

    def owes(self) -> bool:
        """Events not yet safely on their way, which leaving now would lose:
        ours held for a ring neighbour, or up copies not yet acknowledged."""
        held = any(isinstance(item, HeldEvent) for item in self.forest.held)
        return held or bool(self.retries.unacked)

    def on_ack(self, now: float, address: Hashable) -> None:
        self.retries.on_ack(now, address)

    def restore_delivered(self, journal) -> None:
        self.forest.restore_delivered(journal)
