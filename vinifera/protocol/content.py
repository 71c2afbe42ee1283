"""The content layer of one node: subscription installation (showering),
content routing tables, event delivery down a per-attribute forest, and
Karger-Ruhl identifier balancing. Pure state, like the overlay.

Subscriptions. A node installs its subscription in one attribute's tree
(its primary attribute's): the key range of that attribute is routed by
Algorithm 2 (vinifera.protocol.routing) to the rendezvous nodes of its keys.
Every hop keeps a CRT entry <neighbour, attribute, owner, subscription,
ranges> and passes the entry on at once when it is new or changed, then
re-sends all its entries every period (soft state); an owner no longer
asked for through a hop is withdrawn from there at once.

Events. A published event goes, for each of its attributes, toward the
rendezvous of that attribute's key. Every node a copy reaches forwards it
down the CRT branches whose entries hold the key and match the full event,
and an `up` copy continues toward the rendezvous. A node handles each
(event, attribute) once, delivers an event once, and delivers only what
matches its own current subscription. Under churn: copies are acknowledged
and retried around a silent hop (a silent ring neighbour's keys go to its
heir), an up copy is not lost between two nodes with stale rings, and
recent events are sent down subscriptions that reach the tree late
(catch-up); docs/protocol.md says why each exists.

Balancing. Each node measures its rendezvous load (events it was the
rendezvous of without being interested), reports it to its predecessor
with the key that halves it, and a node whose successor's load exceeds its
own by more than beta moves its identifier to that key, after the
successor has handed over the CRT entries of the keys that move.
"""

from __future__ import annotations

import hashlib
import random
from collections import deque
from collections.abc import Hashable, Iterable

from vinifera.protocol import messages as m
from vinifera.protocol.actions import Deliver, Log, Send
from vinifera.protocol.config import ContentConfig
from vinifera.protocol.crt import Crt
from vinifera.protocol.overlay import Overlay
from vinifera.protocol.records import hex_id, record
from vinifera.protocol.routing import MINE, RouteView, arc_set
from vinifera.ranges import IntervalSet
from vinifera.ring import RING_BITS, RING_MAX, cw_distance, in_arc
from vinifera.subscription import Event, Subscription

# (eid, attr) handling state: what this node has already done for a copy.
DOWN_DONE, UP_DONE = 1, 2


class RecentEvent:
    """An event handled lately (ContentConfig.catch_up) and the neighbours
    that have it, from us or because they sent it to us."""

    __slots__ = ("event", "key", "hops", "had")

    def __init__(self, event: Event, key: int, hops: int) -> None:
        self.event = event
        self.key = key
        self.hops = hops
        self.had: set[Hashable] = set()


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


class Content:
    def __init__(self, overlay: Overlay, config: ContentConfig, rng: random.Random, out: list):
        self.overlay = overlay
        self.config = config
        self.rng = rng
        self.out = out
        self.period = overlay.config.period
        self.crt = Crt(config.max_entries_per_row, config.max_rows_per_attribute)
        # (attr, owner) -> {next hop: key ranges sent there}
        self.forwarded: dict[tuple[str, Hashable], dict[Hashable, IntervalSet]] = {}
        self.own: tuple[str, IntervalSet] | None = None  # own demand: (attr, ranges)
        # (eid, attr) -> DOWN_DONE | UP_DONE; (eid, None): pushed (see _push)
        self.seen: dict[tuple[int, str | None], int] = {}
        self.seen_at: deque = deque()  # (time, (eid, attr)) for expiry
        self.delivered: set[int] = set()
        self.delivered_at: deque = deque()  # (time, eid) for expiry
        # Events handled lately (config.catch_up), oldest first.
        self.recent: dict[tuple[int, str], RecentEvent] = {}
        self.recent_at: deque = deque()  # (time, (eid, attr)) for expiry
        # Event copies awaiting an acknowledgement (config.event_retry):
        # (sent at, hop, eid, event, attr, key, hops, up); acks: hop -> last pong.
        self.unacked: list[tuple] = []
        self.acks: dict[Hashable, float] = {}
        self.rv_keys: deque = deque()  # (time, key): uninterested rendezvous events
        # Events we forwarded to at least one node lately (the load metric
        # of EXPERIMENTS.md, measured locally): eid -> None, and (time, eid).
        self.fwd_eids: dict[int, None] = {}
        self.fwd_at: deque = deque()
        # (address, load, split, forwarding, time)
        self.succ_report: tuple | None = None
        self.pending_move: tuple | None = None  # (new_ident, time)
        self.cooldown_until = 0.0
        self.period_events = 0
        # desynchronized full re-sends
        self.next_full = rng.random() * config.full_refresh_every * self.period
        self._view: RouteView | None = None
        self._view_links = None
        self._view_ident = None
        self._view_sig = None
        # Routing is recomputed only for demands that changed ("dirty") or
        # when the routing view changed (a new version); otherwise the
        # periodic refresh re-sends what was computed before.
        self.view_version = 0
        self.routed_version: dict[tuple[str, Hashable], int] = {}
        self.dirty: set[tuple[str, Hashable]] = set()
        self.started: float | None = None
        self.ready = False  # own subscription installed (see install_min_delay)
        self._last_tick_version = -1
        self.counters = {
            "events_received": 0,
            "events_duplicate": 0,
            "events_dropped": 0,
            "events_delivered": 0,
            "events_published": 0,
            "installs_received": 0,
            "moves": 0,
            "events_retried": 0,
            "events_caught_up": 0,
            "events_rerouted": 0,
            "events_pushed": 0,
            "pushes_shed": 0,
        }
        self._refresh_own()

    # ----------------------------------------------------------------- queries

    @property
    def profile(self):
        return self.overlay.profile

    @property
    def address(self) -> Hashable:
        return self.overlay.profile.address

    def view(self) -> RouteView:
        """Routing knowledge, rebuilt only when links or identifier change."""
        links = self.overlay.links
        ident = self.overlay.profile.ident
        if self._view is not None and self._view_links is links and self._view_ident == ident:
            return self._view
        by = links.by_address
        known = sorted((e.profile.ident, a) for a, e in by.items())
        sig = (ident, links.pred, links.succ, tuple(known))
        self._view_links, self._view_ident = links, ident
        if sig != self._view_sig or self._view is None:
            pred = by[links.pred].profile.ident if links.pred is not None else None
            succ = (by[links.succ].profile.ident, links.succ) if links.succ is not None else None
            self._view = RouteView(ident, pred, succ, known)
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

    def load(self) -> float:
        return len(self.rv_keys) / self.config.balance_window

    def forwarding(self) -> float:
        """Events forwarded to at least one node, per period, lately."""
        return len(self.fwd_eids) / self.config.balance_window

    def shedding(self, now: float) -> bool:
        """Whether we skip pushes that would be our only forwarding of an
        event (ContentConfig.shed_pushes): while our forwarding load is well
        above our successor's. Pushes are optional, the tree delivers
        without them, so a busy relay sheds this work first."""
        cfg = self.config
        report = self._succ_report(now) if cfg.balancing and cfg.shed_pushes else None
        if report is None:
            return False
        mine, theirs = self.forwarding(), report[3]
        return mine - theirs > cfg.balance_beta and mine > cfg.shed_ratio * theirs

    # ----------------------------------------------------------------- periodic

    def tick(self, now: float) -> None:
        self.period_events = 0
        self._forget_old(now)
        if self.unacked:
            self._retry_unacked(now)
        if not self.ready:
            if self.started is None:
                self.started = now - self.period  # first tick: one period after start
            age = (now - self.started) / self.period
            self.view()
            steady = self.view_version == self._last_tick_version
            if age >= self.config.install_max_delay or (
                age >= self.config.install_min_delay and steady
            ):
                self.ready = True
            self._last_tick_version = self.view_version
        self._refresh_own()
        cfg = self.config
        affected = self.crt.expire(now, now - cfg.owner_expiry * self.period)
        self.dirty.update(affected)
        # Soft state: everything we forward is re-sent every period, routed
        # with today's links; expired owners are withdrawn.
        pairs = dict.fromkeys(affected)
        pairs.update(dict.fromkeys(self.forwarded))
        for attr in self.crt.attributes():
            pairs.update(dict.fromkeys((attr, o) for o in self.crt.owners(attr)))
        if self.own is not None:
            pairs[(self.own[0], self.address)] = None
        full = now >= self.next_full
        if full:
            self.next_full = now + self.config.full_refresh_every * self.period
        self._reroute(now, pairs, resend=full)
        if not full:
            self._send_refreshes(now)
        self._balance(now)

    def _send_refreshes(self, now: float) -> None:
        by_hop: dict[tuple[Hashable, str], list] = {}
        for (attr, owner), hops in self.forwarded.items():
            age = self._owner_age(now, attr, owner)
            for hop in hops:
                by_hop.setdefault((hop, attr), []).append((owner, age))
        me = self.profile
        for (hop, attr), owners in by_hop.items():
            self.out.append(Send(hop, m.Refresh(me, attr, tuple(owners))))

    def on_refresh(self, now: float, msg: m.Refresh) -> None:
        self.overlay.refresh_link(now, msg.profile)
        row = self.crt.rows.get(msg.attr, {}).get(msg.profile.address)
        if not row:
            return
        expiry = now + self.config.crt_expiry * self.period
        base = now - self.overlay.transit
        for owner, age in msg.owners:
            entry = row.get(owner)
            if entry is not None:
                if entry.expiry < expiry:
                    entry.expiry = expiry
                if base - age > entry.heard:
                    entry.heard = base - age

    def dedupe_horizon(self, now: float) -> float:
        """Deliveries (and handled copies) older than this are forgotten."""
        return now - self.config.dedupe_memory * self.period

    def _forget_old(self, now: float) -> None:
        horizon = self.dedupe_horizon(now)
        seen_at, seen = self.seen_at, self.seen
        while seen_at and seen_at[0][0] < horizon:
            seen.pop(seen_at.popleft()[1], None)
        delivered_at, delivered = self.delivered_at, self.delivered
        while delivered_at and delivered_at[0][0] < horizon:
            delivered.discard(delivered_at.popleft()[1])
        horizon = now - self.config.catch_up * self.period
        recent_at, recent = self.recent_at, self.recent
        while recent_at and recent_at[0][0] < horizon:
            recent.pop(recent_at.popleft()[1], None)
        window = now - self.config.balance_window * self.period
        while self.rv_keys and self.rv_keys[0][0] < window:
            self.rv_keys.popleft()
        fwd_at, fwd_eids = self.fwd_at, self.fwd_eids
        while fwd_at and fwd_at[0][0] < window:
            fwd_eids.pop(fwd_at.popleft()[1], None)

    def _refresh_own(self) -> None:
        """Recompute what we ask for ourselves: one range in one tree."""
        sub = self.profile.subscription
        attr = self.install_attribute()
        before = self.own
        if sub is None or attr is None or not self.ready:
            self.own = None
        elif self.config.rendezvous == "attribute":
            key = attribute_key(attr)
            self.own = (attr, IntervalSet.of(key, key))
        else:
            self.own = (attr, IntervalSet.of(*sub.key_ranges[attr]))
        if before != self.own:
            for own in (before, self.own):
                if own is not None:
                    self.dirty.add((own[0], self.address))

    def subscription_changed(self, now: float) -> None:
        self._refresh_own()
        pairs = dict.fromkeys(k for k in self.forwarded if k[1] == self.address)
        if self.own is not None:
            pairs[(self.own[0], self.address)] = None
        self.dirty.update(pairs)
        self._reroute(now, pairs, resend=False)

    # ----------------------------------------------------------------- installation

    def _demand(self, attr: str, owner: Hashable) -> tuple[Subscription | None, IntervalSet]:
        if owner == self.address:
            if self.own is not None and self.own[0] == attr:
                return self.profile.subscription, self.own[1]
            return None, IntervalSet()
        return self.crt.owner_demand(attr, owner)

    def _owner_age(self, now: float, attr: str, owner: Hashable) -> float:
        """How long ago the owner itself last vouched for its subscription."""
        if owner == self.address:
            return 0.0
        return max(0.0, now - self.crt.owner_heard(attr, owner))

    def _demand_sub(self, attr: str, owner: Hashable) -> Subscription | None:
        if owner == self.address:
            return self.profile.subscription
        nbs = self.crt.by_owner.get(attr, {}).get(owner)
        if not nbs:
            return None
        return self.crt.rows[attr][next(iter(nbs))][owner].sub

    def _reroute(self, now: float, pairs: Iterable[tuple[str, Hashable]], resend: bool) -> None:
        """Route each (attr, owner) demand and tell the next hops: what is new
        or changed (or everything, when `resend`), and withdrawals."""
        view = self.view()
        version = self.view_version
        installs: dict[tuple[Hashable, str], list] = {}
        withdraws: dict[tuple[Hashable, str], list] = {}
        sources_of = self.crt.by_owner
        dirty = self.dirty
        routed = self.routed_version
        for pair in pairs:
            attr, owner = pair
            old = self.forwarded.get(pair, {})
            if pair not in dirty and routed.get(pair) == version:
                if resend:  # unchanged demand, unchanged view: re-send as is
                    sub = self._demand_sub(attr, owner)
                    age = self._owner_age(now, attr, owner)
                    for hop, part in old.items():
                        installs.setdefault((hop, attr), []).append(
                            (owner, sub, part.intervals, age)
                        )
                continue
            dirty.discard(pair)
            sub, ranges = self._demand(attr, owner)
            new: dict[Hashable, IntervalSet] = {}
            if sub is not None and ranges:
                came_from = sources_of.get(attr, {}).get(owner, {})
                rows = self.crt.rows.get(attr, {})
                for hop, part in view.split(ranges).items():
                    if hop is MINE or hop == owner:
                        continue
                    if hop in came_from:
                        # never send keys back where they came from (2-cycles)
                        part = part - rows[hop][owner].all_ranges()
                        if not part:
                            continue
                    new[hop] = part
            age = self._owner_age(now, attr, owner)
            for hop, part in new.items():
                if resend or old.get(hop) != part:
                    installs.setdefault((hop, attr), []).append((owner, sub, part.intervals, age))
            if not new:
                # The owner's demand is gone: withdraw at once (fast
                # de-aggregation). A route that merely moved is not
                # withdrawn: unrefreshed, it expires after the new one works.
                for hop in old:
                    withdraws.setdefault((hop, attr), []).append(owner)
            if new:
                self.forwarded[pair] = new
                routed[pair] = version
            else:
                self.forwarded.pop(pair, None)
                routed.pop(pair, None)
        me = self.profile
        for (hop, attr), entries in installs.items():
            self.out.append(Send(hop, m.Install(me, attr, tuple(entries))))
        for (hop, attr), owners in withdraws.items():
            self.out.append(Send(hop, m.Withdraw(me, attr, tuple(owners))))

    def on_install(self, now: float, msg: m.Install) -> None:
        sender = msg.profile.address
        self.overlay.refresh_link(now, msg.profile)
        self.counters["installs_received"] += 1
        expiry = now + self.config.crt_expiry * self.period
        changed = []
        newcomers = []
        me = self.address
        base = now - self.overlay.transit
        known = self.crt.by_owner.get(msg.attr, {})
        for owner, sub, intervals, age in msg.entries:
            if owner == me:
                continue
            ranges = IntervalSet.from_intervals(intervals)
            new_owner = not known.get(owner)
            if self.crt.upsert(msg.attr, sender, owner, sub, ranges, expiry, base - age):
                changed.append((msg.attr, owner))
                self.dirty.add((msg.attr, owner))
                if new_owner:
                    newcomers.append(owner)
        if newcomers and self.recent:
            self._catch_up(now, sender, msg.attr, newcomers)
        if changed:
            self._reroute(now, changed, resend=False)

    def on_withdraw(self, now: float, msg: m.Withdraw) -> None:
        sender = msg.profile.address
        self.overlay.refresh_link(now, msg.profile)
        gone = [(msg.attr, o) for o in msg.owners if self.crt.remove(msg.attr, sender, o)]
        self.dirty.update(gone)
        if gone:
            self._reroute(now, gone, resend=False)

    def peer_gone(self, now: float, address: Hashable) -> None:
        """A neighbour left or was suspected: forget what it asked for, and
        what it asked for as a subscriber, and stop forwarding to it."""
        affected = self.crt.drop_neighbour(address) + self.crt.drop_owner(address)
        for pair, hops in self.forwarded.items():
            if hops.pop(address, None) is not None:
                self.dirty.add(pair)
        self.dirty.update(affected)
        if affected:
            self._reroute(now, dict.fromkeys(affected), resend=False)

    # ----------------------------------------------------------------- events

    def publish(self, now: float, event: Event) -> int:
        eid = self.rng.getrandbits(63)
        self.counters["events_published"] += 1
        self.out.append(
            Log(record(now, self.overlay.name, "publish", eid=eid, values=event.to_plain()))
        )
        sub = self.profile.subscription
        interested = sub is not None and sub.matches(event.values)
        if interested:
            self._deliver(now, eid, event, None, 0)
        sent: set[Hashable] = set()
        for attr, key in self.event_keys(event):
            targets, rv = self._handle(now, eid, event, attr, key, 0, True, None)
            sent.update(targets)
            if rv:
                self._note_rendezvous(now, key, interested)
        self._push(now, eid, event, 0, sent, bool(sent))
        return eid

    def _note_rendezvous(self, now: float, key: int, interested: bool) -> None:
        """Count an event toward the balancing load (see balance_load)."""
        if not interested or self.config.balance_load == "all":
            self.rv_keys.append((now, key))

    def on_event(self, now: float, msg: m.EventMessage) -> None:
        interested = self._arrive(now, msg, msg.attr)
        if interested is None:
            return
        event = msg.event
        if self.config.event_retry:
            self.out.append(Send(msg.profile.address, m.Pong(self.profile)))
        if interested and msg.eid not in self.delivered:
            self._deliver(now, msg.eid, event, msg.attr, msg.hops)
        sid = (msg.eid, msg.attr)
        state = self.seen.get(sid, 0)
        need = (DOWN_DONE | UP_DONE) if msg.up else DOWN_DONE
        fwd = 0
        rv = dup = False
        if state & need == need:
            self.counters["events_duplicate"] += 1
            dup = True
            if msg.up:
                fwd = self._up_returned(now, msg)
        elif msg.hops < self.config.max_event_hops:
            targets, rv = self._handle(
                now,
                msg.eid,
                event,
                msg.attr,
                msg.key,
                msg.hops,
                msg.up and not state & UP_DONE,
                msg.profile.address,
                state,
            )
            if rv:
                self._note_rendezvous(now, msg.key, interested)
            fwd = len(targets)
            skip = {msg.profile.address, *targets}
            fwd += self._push(now, msg.eid, event, msg.hops, skip, fwd > 0)
        self._received(now, msg, msg.attr, interested, fwd, dup, rv)

    def _received(self, now: float, msg, attr, interested: bool, fwd: int, dup: bool, rv: bool):
        """The end of handling a copy: its `recv` record, and the event
        counted toward our forwarding load when we sent it on (the same
        records the simulator's load metric counts)."""
        if fwd:
            self._note_forwarded(now, msg.eid)
        rec = record(
            now,
            self.overlay.name,
            "recv",
            eid=msg.eid,
            attr=attr,
            hops=msg.hops,
            match=interested,
            fwd=fwd,
            dup=dup,
            rv=rv,
        )
        self.out.append(Log(rec))

    def _arrive(self, now: float, msg, attr: str | None) -> bool | None:
        """What every event copy (tree or push) goes through first: liveness
        evidence, then the congestion model (past `capacity` event messages
        this period the copy is dropped and logged: None). Returns whether
        our own subscription matches the event."""
        self.overlay.refresh_link(now, msg.profile)
        sub = self.profile.subscription
        interested = sub is not None and sub.matches(msg.event.values)
        cap = self.config.capacity
        self.period_events += 1
        if cap is not None and self.period_events > cap:
            self.counters["events_dropped"] += 1
            rec = record(
                now,
                self.overlay.name,
                "drop",
                eid=msg.eid,
                attr=attr,
                hops=msg.hops,
                match=interested,
            )
            self.out.append(Log(rec))
            return None
        self.counters["events_received"] += 1
        return interested

    def _handle(
        self,
        now: float,
        eid: int,
        event: Event,
        attr: str,
        key: int,
        hops: int,
        up: bool,
        sender: Hashable | None,
        state: int = 0,
    ) -> tuple[dict[Hashable, bool], bool]:
        """Forward one copy: down matching CRT branches (once per event and
        attribute) and, for an `up` copy, on toward the rendezvous. Returns
        (where copies went, whether we are the rendezvous of this key)."""
        sid = (eid, attr)
        if sid not in self.seen:
            self.seen_at.append((now, sid))
        memo = self.recent.get(sid)
        if memo is None and self.config.catch_up > 0:
            memo = self.recent[sid] = RecentEvent(event, key, hops)
            self.recent_at.append((now, sid))
        targets: dict[Hashable, bool] = {}
        if not state & DOWN_DONE:
            for nb in self.crt.matching_neighbours(attr, key, event.values, now, sender):
                targets[nb] = False
        rv = False
        if up:
            view = self.view()
            hop = view.next_hop(key)
            bounce = False
            if hop is not MINE and hop == sender and view.idents:
                # The sender thinks we are nearer the rendezvous, we think it
                # is: one of us has a stale ring (a node joined or died
                # between us). The known node after the key is the likeliest
                # rendezvous; if that is the sender too, it must know a node
                # we do not: hand the copy back (see _up_returned).
                hop = view.successor_of(key)
                self.counters["events_rerouted"] += 1
                bounce = hop == sender
            if hop is MINE:
                rv = True
            elif hop != sender or bounce:
                targets[hop] = True  # the up copy also does the down work there
            state |= UP_DONE
        self.seen[sid] = state | DOWN_DONE
        if memo is not None:
            memo.had.update(targets)
            if sender is not None:
                memo.had.add(sender)
        for nb, is_up in targets.items():
            self._send_copy(now, nb, eid, event, attr, key, hops, is_up)
        return targets, rv

    def on_push(self, now: float, msg: m.EventPush) -> None:
        """A link that knows our subscription sent us an event it matches."""
        interested = self._arrive(now, msg, None)
        if interested is None:
            return
        if interested and msg.eid not in self.delivered:
            self._deliver(now, msg.eid, msg.event, None, msg.hops)
        fwd = 0
        if msg.hops < self.config.max_event_hops:
            fwd = self._push(now, msg.eid, msg.event, msg.hops, {msg.profile.address}, False)
        self._received(now, msg, None, interested, fwd, fwd == 0, False)

    def _note_forwarded(self, now: float, eid: int) -> None:
        if eid not in self.fwd_eids:
            self.fwd_eids[eid] = None
            self.fwd_at.append((now, eid))

    def _push(
        self, now: float, eid: int, event: Event, hops: int, skip: set, forwarding: bool
    ) -> int:
        """Subscription awareness (ContentConfig.push): the first time this
        node handles an event, it sends it straight to the links whose
        subscription (from their profile) matches, except those that already
        had a copy from or to us; at most `push_fanout` of them, drawn at
        random. `forwarding`: this handling already sent tree copies, so
        pushing adds no load; otherwise a shedding node does not push (yet:
        a later tree copy that it forwards may push), unless the event has
        come far (shed_max_hops). Returns the number of pushes."""
        if not self.config.push:
            return 0
        sid = (eid, None)
        if sid in self.seen:
            return 0
        if (
            not forwarding
            and eid not in self.fwd_eids
            and hops < self.config.shed_max_hops
            and self.shedding(now)
        ):
            self.counters["pushes_shed"] += 1
            return 0
        self.seen[sid] = DOWN_DONE
        self.seen_at.append((now, sid))
        values = event.values
        targets = [
            addr
            for addr, entry in self.overlay.links.by_address.items()
            if addr not in skip
            and entry.profile.subscription is not None
            and entry.profile.subscription.matches(values)
        ]
        fanout = self.config.push_fanout
        if fanout is not None and len(targets) > fanout:
            targets = self.rng.sample(targets, fanout)
        for addr in targets:
            self.out.append(Send(addr, m.EventPush(self.profile, eid, event, hops + 1)))
        self.counters["events_pushed"] += len(targets)
        return len(targets)

    def _up_returned(self, now: float, msg: m.EventMessage) -> int:
        """An up copy came back to a node that has done its up work: a loop
        of stale rings. Try the known node after the key, once per node and
        event (the catch-up memory says who had it), so loops end."""
        memo = self.recent.get((msg.eid, msg.attr))
        view = self.view()
        if memo is None or not view.idents:
            return 0
        hop = view.successor_of(msg.key)
        if hop in memo.had:
            return 0
        memo.had.add(hop)
        self.counters["events_rerouted"] += 1
        self._send_copy(now, hop, msg.eid, msg.event, msg.attr, msg.key, msg.hops, True)
        return 1

    def _send_copy(
        self,
        now: float,
        nb: Hashable,
        eid: int,
        event: Event,
        attr: str,
        key: int,
        hops: int,
        up: bool,
    ) -> None:
        self.out.append(Send(nb, m.EventMessage(self.profile, eid, event, attr, key, hops + 1, up)))
        if self.config.event_retry:
            self.unacked.append((now, nb, eid, event, attr, key, hops, up))

    def _catch_up(self, now: float, nb: Hashable, attr: str, owners: list[Hashable]) -> None:
        """Subscribers new to this node arrived through `nb`: send it the
        recent events they want that it has not had from us (see
        ContentConfig.catch_up). Down copies: `nb` passes them on along the
        entries it just installed."""
        row = self.crt.rows.get(attr, {}).get(nb)
        if not row:
            return
        entries = [row[o] for o in owners if o in row]
        for (eid, a), memo in self.recent.items():
            if a != attr or nb in memo.had:
                continue
            key, event = memo.key, memo.event
            if any(e.holds(key, now) and e.sub.matches(event.values) for e in entries):
                memo.had.add(nb)
                self.counters["events_caught_up"] += 1
                self._send_copy(now, nb, eid, event, attr, key, memo.hops, False)

    def on_ack(self, now: float, address: Hashable) -> None:
        """A pong: whatever we sent that node before now has arrived."""
        if self.unacked:
            self.acks[address] = now

    def _retry_unacked(self, now: float) -> None:
        """Copies sent at least an ack round trip ago and still unacknowledged
        are sent once more around their hop (see ContentConfig.event_retry)."""
        wait = 2 * self.overlay.transit  # the assumed round-trip bound
        keep = []
        acks = self.acks
        me = self.profile
        for item in self.unacked:
            sent, hop, eid, event, attr, key, hops, up = item
            if sent > now - wait:
                keep.append(item)  # its ack may still be on the way
                continue
            if acks.get(hop, -1.0) >= sent:
                continue
            self.counters["events_retried"] += 1
            targets: dict[Hashable, bool] = {}
            # The down work the hop was to do: straight to the subscribers
            # whose entries came through it.
            row = self.crt.rows.get(attr, {}).get(hop, {})
            for owner, entry in row.items():
                if (
                    owner != self.address
                    and entry.holds(key, now)
                    and entry.sub.matches(event.values)
                ):
                    targets[owner] = False
            if up:
                # The hop was on the way to the rendezvous (or was it): the
                # subscribers whose keys we forwarded to it, then onward.
                for (a, owner), sent_to in self.forwarded.items():
                    part = sent_to.get(hop) if a == attr else None
                    if part is None or owner == self.address or not part.contains(key):
                        continue
                    sub = self._demand_sub(attr, owner)
                    if sub is not None and sub.matches(event.values):
                        targets[owner] = False
                alt = self._next_hop_without(key, hop)
                if alt is not MINE and alt != hop:
                    targets[alt] = True
            for nb, is_up in targets.items():
                self.out.append(
                    Send(nb, m.EventMessage(me, eid, event, attr, key, hops + 1, is_up))
                )
        self.unacked = keep
        # Only acks newer than the oldest copy still waiting can matter.
        oldest = min((item[0] for item in keep), default=now)
        self.acks = {a: t for a, t in acks.items() if t >= oldest}

    def _next_hop_without(self, key: int, avoid: Hashable) -> Hashable:
        """Where a key would go if `avoid` were not a link. A silent ring
        neighbour's keys pass to its heir, the next node on that side: for
        a silent successor the next successor we know of, and for a silent
        predecessor ourselves (MINE). The heir keeps the event (catch_up)
        and, once ring repair makes it the rendezvous and the subscribers'
        entries arrive, sends it down to them."""
        view = self.view()
        me = view.me
        backups = [e.profile for e in self.overlay.ring_backups if e.profile.address != avoid]
        if avoid == view.succ_address:
            heir = min(backups, key=lambda p: cw_distance(me, p.ident), default=None)
            return MINE if heir is None else heir.address
        if avoid == self.overlay.links.pred and view.pred is not None:
            # its keys, (its own predecessor, it], are ours once it is gone
            before = [p.ident for p in backups if p.ident != view.pred]
            start = min(before, key=lambda i: cw_distance(i, me), default=None)
            if start is not None and in_arc(key, start, view.pred):
                return MINE
        known = [(i, a) for i, a in zip(view.idents, view.addresses, strict=True) if a != avoid]
        succ = (view.succ, view.succ_address) if view.succ is not None else None
        return RouteView(view.me, view.pred, succ, known).next_hop(key)

    def restore_delivered(self, journal) -> None:
        """Deliveries of a previous incarnation (time, eid), oldest first."""
        for t, eid in journal:
            self.delivered.add(eid)
            self.delivered_at.append((t, eid))

    def _deliver(self, now: float, eid: int, event: Event, attr: str | None, hops: int) -> None:
        self.delivered.add(eid)
        self.delivered_at.append((now, eid))
        self.counters["events_delivered"] += 1
        self.out.append(Deliver(event, {"eid": eid, "hops": hops, "attr": attr}))
        self.out.append(Log(record(now, self.overlay.name, "deliver", eid=eid, hops=hops)))

    # ----------------------------------------------------------------- balancing

    def _balance(self, now: float) -> None:
        links = self.overlay.links
        if links.pred is not None:
            keys = sorted(k for _, k in self.rv_keys)
            split = keys[len(keys) // 2] if keys else None
            report = m.LoadReport(self.profile, self.load(), split, self.forwarding())
            self.out.append(Send(links.pred, report))
        if self.pending_move is not None and now - self.pending_move[1] > 2 * self.period:
            self.pending_move = None  # the successor never answered
        cfg = self.config
        if not cfg.balancing or self.pending_move is not None or now < self.cooldown_until:
            return
        report = self._succ_report(now)
        if report is None:
            return
        _, succ_load, split, _, _ = report
        mine = self.load()
        if split is None or succ_load - mine <= cfg.balance_beta or succ_load <= 2 * mine:
            return
        me = self.profile.ident
        succ_ident = links.by_address[links.succ].profile.ident
        if not in_arc(split, me, succ_ident) or split == succ_ident:
            return
        self.pending_move = (split, now)
        self.out.append(Send(links.succ, m.HandoverRequest(self.profile, split)))

    def _succ_report(self, now: float) -> tuple | None:
        """The last LoadReport, if it is from our current successor and no
        more than two periods old."""
        report = self.succ_report
        if report is None or report[0] != self.overlay.links.succ:
            return None
        return report if now - report[4] <= 2 * self.period else None

    def on_load(self, now: float, msg: m.LoadReport) -> None:
        self.overlay.refresh_link(now, msg.profile)
        self.succ_report = (msg.profile.address, msg.load, msg.split, msg.forwarding, now)

    def on_handover_request(self, now: float, msg: m.HandoverRequest) -> None:
        """Our predecessor moves to new_ident: the keys (its old identifier,
        new_ident] become its own. Hand it our CRT entries for them."""
        self.overlay.refresh_link(now, msg.profile)
        links = self.overlay.links
        me = self.profile.ident
        old = msg.profile.ident
        new = msg.new_ident
        if links.pred != msg.profile.address or not in_arc(new, old, me) or new == me:
            return
        moving = arc_set(old, new)
        entries = []
        for attr in self.crt.attributes():
            for nb, owner, sub, part, expiry, heard in self.crt.entries_in(attr, moving):
                entries.append(
                    (
                        attr,
                        nb,
                        owner,
                        sub,
                        part.intervals,
                        max(0.0, expiry - now),
                        max(0.0, now - heard),
                    )
                )
        if self.own is not None and self.profile.subscription is not None:
            part = self.own[1] & moving
            if part:
                ttl = self.config.crt_expiry * self.period
                entries.append(
                    (
                        self.own[0],
                        self.address,
                        self.address,
                        self.profile.subscription,
                        part.intervals,
                        ttl,
                        0.0,
                    )
                )
        self.rv_keys = deque((t, k) for t, k in self.rv_keys if not moving.contains(k))
        self.out.append(Send(msg.profile.address, m.Handover(self.profile, new, tuple(entries))))

    def on_handover(self, now: float, msg: m.Handover) -> None:
        self.overlay.refresh_link(now, msg.profile)
        pending = self.pending_move
        if pending is None or pending[0] != msg.new_ident:
            return
        self.pending_move = None
        me = self.address
        affected = {}
        base = now - self.overlay.transit
        for attr, nb, owner, sub, intervals, ttl, age in msg.entries:
            if nb == me or owner == me:
                continue
            ranges = IntervalSet.from_intervals(intervals)
            self.crt.upsert(attr, nb, owner, sub, ranges, now + ttl, base - age)
            affected[(attr, owner)] = None
            self.dirty.add((attr, owner))
        old = self.profile.ident
        self.overlay.move(now, msg.new_ident)
        self.counters["moves"] += 1
        self.cooldown_until = now + self.config.balance_cooldown * self.period
        self.out.append(
            Log(record(now, self.overlay.name, "move", old=hex_id(old), new=hex_id(msg.new_ident)))
        )
        self._reroute(now, affected, resend=False)
