"""Event delivery down the per-attribute forest.

A published event goes, for each of its attributes, toward the rendezvous
of that attribute's key. Every node a copy reaches forwards it down the CRT
rows whose filters hold the key and the event, and an `up` copy continues
toward the rendezvous. A node handles each (event, attribute) once,
delivers an event once, and delivers only what matches its own current
subscription. Under churn: an up copy is not lost between two nodes with
stale rings, recent events are sent down rows that reach a node late
(catch-up), and unacknowledged up copies are retried (retry.py).
Subscription awareness: the first time a node handles an event it also
pushes it to links whose subscription matches. docs/protocol.md says why
each exists.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from vinifera.draws import sample
from vinifera.matching import satisfies
from vinifera.protocol import messages as m
from vinifera.protocol.actions import Deliver, Log, Send
from vinifera.protocol.content.cover import Cover, token
from vinifera.protocol.content.crt import Row
from vinifera.protocol.content.memory import ExpiringMap
from vinifera.protocol.records import record
from vinifera.protocol.routing import MINE
from vinifera.ring import RING_SIZE, in_arc
from vinifera.subscription import Event

if TYPE_CHECKING:  # (a cycle: the layer holds its parts)
    from vinifera.protocol.content.layer import Content

# (eid, attr) handling state: what this node has already done for a copy.
DOWN_DONE, UP_DONE = 1, 2
# seen's key for "this node has pushed the event": (eid, PUSHED); and for
# "... to its new links only" (ContentConfig.push_new_links): (eid, NEW_PUSHED)
PUSHED = None
NEW_PUSHED = ""
# Held for the ring at once (our events and up copies), at most, before an
# up copy from a peer is held: a cap on what peers can make a ringless node
# keep. Past it a copy is handled as it comes, as it was before the hold.
MAX_HELD_COPIES = 256
# Have notices remembered at once, at most (ContentConfig.have_notices).
MAX_DECLINED = 4096


class RecentEvent:
    """An event handled lately (ContentConfig.catch_up), the neighbours
    that have it, from us or because they sent it to us, whether we took
    its key for ours (we were its rendezvous) and whether any row of ours
    wanted it (we sent it down)."""

    __slots__ = ("event", "key", "hops", "had", "rendezvous", "sent_down")

    def __init__(self, event: Event, key: int, hops: int) -> None:
        self.event = event
        self.key = key
        self.hops = hops
        self.had: set[Hashable] = set()
        self.rendezvous = False
        self.sent_down = False

    @property
    def orphan(self) -> bool:
        """We took its key for ours and no row of ours wanted it: nobody
        below us has it from the tree."""
        return self.rendezvous and not self.sent_down


class HeldEvent(NamedTuple):
    """An event published before this node had a ring to route it on."""

    since: float
    eid: int
    event: Event
    interested: bool


class Copy(NamedTuple):
    """One event copy in one attribute's tree."""

    eid: int
    event: Event
    attr: str
    key: int
    hops: int  # hops it has come (it arrives with one more)
    up: bool  # still on its way to the rendezvous
    covered: Sequence = ()  # nodes sent the event before (ContentConfig.covered)
    pushed: Sequence = ()  # ... and those pushed it


class HeldCopy(NamedTuple):
    """An up copy that reached us before we had a ring to route it on."""

    since: float
    copy: Copy
    sender: Hashable
    interested: bool
    had: bool  # we had the event already when it arrived


class Arrival(NamedTuple):
    """What an event copy that got past the congestion model found here."""

    interested: bool  # our own subscription matches the event
    had: bool  # we had the event already (published it, or got a copy): redundant


class Forest:
    def __init__(self, content: Content) -> None:
        self.content = content
        self.crt = content.installation.crt
        self.seen = ExpiringMap()  # (eid, attr) -> DOWN_DONE | UP_DONE
        self.delivered = ExpiringMap()  # eid
        self.recent = ExpiringMap()  # (eid, attr) -> RecentEvent (catch_up)
        # eids we published or got a copy of: a copy of one arrives redundant
        # (measured only: the `had` of recv and drop records)
        self.have = ExpiringMap()
        # (eid, neighbour): it told us it has the event (have_notices)
        self.declined = ExpiringMap()
        self.period_events = 0
        # published, or up copies received, before we had a ring (publish_hold)
        self.held: list[HeldEvent | HeldCopy] = []

    def forget_before(self, dedupe_horizon: float, catch_up_horizon: float) -> None:
        self.seen.forget_before(dedupe_horizon)
        self.delivered.forget_before(dedupe_horizon)
        self.have.forget_before(dedupe_horizon)
        self.declined.forget_before(dedupe_horizon)
        self.recent.forget_before(catch_up_horizon)

    # ----------------------------------------------------------------- publish

    def publish(self, now: float, eid: int, event: Event) -> None:
        c = self.content
        c.counters["events_published"] += 1
        c.out.append(Log(record(now, c.name, "publish", eid=eid, values=event.to_plain())))
        self.have.set(now, eid)
        sub = c.profile.subscription
        interested = sub is not None and satisfies(sub.constraints, event.values)
        if interested:
            self._deliver(now, eid, event, None, 0)
        if self._ringless():
            self.held.append(HeldEvent(now, eid, event, interested))
            return
        self._route_published(now, eid, event, interested)

    def _ringless(self) -> bool:
        """Without a ring neighbour every key looks like ours, and before
        its first tick a node's ring is what its join reply offered: an
        event routed now could stop here, its rendezvous by mistake. Our
        own events and the up copies we receive wait for the first tick
        and a predecessor instead (publish_hold)."""
        c = self.content
        return c.config.publish_hold > 0 and (c.started is None or c.view().pred is None)

    def release_held(self, now: float) -> None:
        """At a tick: route the held events once we have a ring neighbour,
        or when they have waited publish_hold periods (alone, they are ours)."""
        c = self.content
        if c.view().pred is None:
            limit = now - c.config.publish_hold * c.period
            if self.held[0].since > limit:
                return
        held, self.held = self.held, []
        for item in held:
            if isinstance(item, HeldCopy):
                self._take(now, item.copy, item.sender, item.interested, item.had)
            else:
                self._route_published(now, item.eid, item.event, item.interested)

    def _route_published(self, now: float, eid: int, event: Event, interested: bool) -> None:
        """Our own event's up copies, one per attribute, and its pushes."""
        c = self.content
        sent: set[Hashable] = set()
        cover = self._cover((), ())
        for attr, key in c.event_keys(event):
            copy = Copy(eid, event, attr, key, 0, True)
            targets, rv = self._handle(now, copy, None, 0, interested, cover=cover)
            sent.update(targets)
            if rv:
                self._at_rendezvous(now, copy, interested)
        self._push(now, eid, event, 0, sent, bool(sent), True, cover=cover)
        if cover is not None:
            cover.close(c.config.covered)

    def _cover(self, inherited: Sequence, pushed: Sequence) -> Cover | None:
        c = self.content
        return Cover(inherited, pushed, c.profile.address) if c.config.covered else None

    # ----------------------------------------------------------------- tree copies

    def on_event(self, now: float, msg: m.EventMessage) -> None:
        arrival = self._arrive(now, msg, msg.attr, msg.up)
        if arrival is None:
            return
        interested, had = arrival
        c = self.content
        if not had and c.config.have_notices:
            self._tell_parents(msg.eid, msg.event, msg.profile.address)
        if msg.up and c.config.event_retry:  # only up copies are retried
            c.out.append(Send(msg.profile.address, m.Pong(c.profile)))
        if interested and msg.eid not in self.delivered:
            self._deliver(now, msg.eid, msg.event, msg.attr, msg.hops)
        copy = Copy(msg.eid, msg.event, msg.attr, msg.key, msg.hops, msg.up, msg.covered,
                    msg.pushed)  # fmt: skip
        if msg.up and self._ringless():
            if len(self.held) < MAX_HELD_COPIES:
                # (its recv record comes when it is handled, at release_held)
                self.held.append(HeldCopy(now, copy, msg.profile.address, interested, had))
                return
            c.counters["up_copies_not_held"] += 1
        self._take(now, copy, msg.profile.address, interested, had)

    def _take(self, now: float, copy: Copy, sender: Hashable, interested: bool, had: bool) -> None:
        """Handle a tree copy that arrived from `sender` (delivered already)."""
        c = self.content
        state = self.seen.items.get((copy.eid, copy.attr), 0)
        need = (DOWN_DONE | UP_DONE) if copy.up else DOWN_DONE
        fwd = 0
        rv = dup = False
        if state & need == need:
            c.counters["events_duplicate"] += 1
            dup = True
            if copy.up:
                fwd = self._up_returned(now, copy)
        elif copy.hops < c.config.max_event_hops:
            # an up copy whose up work is done here already only goes down
            if copy.up and state & UP_DONE:
                copy = copy._replace(up=False)
            cover = self._cover(copy.covered, copy.pushed)
            targets, rv = self._handle(now, copy, sender, state, interested, cover=cover)
            if rv:
                self._at_rendezvous(now, copy, interested)
            if c.config.every_tree_at_once:
                others = self._other_trees(now, copy.eid, copy.event, copy.hops, copy.attr, sender,
                                           {sender, *targets}, cover)  # fmt: skip
                targets = targets + others
            fwd = len(targets)
            fwd += self._push(now, copy.eid, copy.event, copy.hops, {sender, *targets}, fwd > 0,
                              copy.up, sender, cover)  # fmt: skip
            if cover is not None:
                cover.close(c.config.covered)
        self._received(now, copy, copy.attr, interested, fwd, dup, rv, had)

    def _at_rendezvous(self, now: float, copy: Copy, interested: bool) -> None:
        """We took an up copy's key for ours: balancing's load, and the
        `rendezvous` record (its hops: the route the copy took here)."""
        c = self.content
        c.note_rendezvous(now, copy.key, interested)
        c.out.append(Log(record(now, c.name, "rendezvous", eid=copy.eid, attr=copy.attr,
                                hops=copy.hops)))  # fmt: skip

    def _received(self, now: float, msg, attr, interested: bool, fwd: int, dup: bool, rv: bool,
                  had: bool) -> None:  # fmt: skip
        """The end of handling a copy (a message or a Copy): its `recv`
        record, and the event counted toward our forwarding load when we
        sent it on (the same records the simulator's load metric counts)."""
        c = self.content
        if fwd:
            c.note_forwarded(now, msg.eid)
        c.out.append(Log(record(now, c.name, "recv", eid=msg.eid, attr=attr, hops=msg.hops,
                                match=interested, fwd=fwd, dup=dup, rv=rv, had=had)))  # fmt: skip

    def _arrive(self, now: float, msg, attr: str | None, up: bool) -> Arrival | None:
        """What every event copy (tree or push) goes through first: liveness
        evidence, then the congestion model (past `capacity` event messages
        this period the copy is dropped and logged: None). Returns whether
        our own subscription matches the event, and whether we had it."""
        c = self.content
        c.overlay.refresh_link(now, msg.profile)
        sub = c.profile.subscription
        interested = sub is not None and satisfies(sub.constraints, msg.event.values)
        had = msg.eid in self.have
        cap = c.config.capacity
        self.period_events += 1
        dropped = False
        if cap is not None:
            share = c.config.capacity_push_share
            if (
                share is not None
                and self.period_events > max(1, int(cap * share))
                and self._gives_way(msg.eid, attr, up, had)
            ):
                self.period_events -= 1  # past the share: dropped, takes no slot
                dropped = True
            else:
                dropped = self.period_events > cap
        if dropped:
            c.counters["events_dropped"] += 1
            c.out.append(Log(record(now, c.name, "drop", eid=msg.eid, attr=attr, hops=msg.hops,
                                    match=interested, up=up, had=had)))  # fmt: skip
            return None
        c.counters["events_received"] += 1
        if not had:
            self.have.set(now, msg.eid)
        return Arrival(interested, had)

    def _gives_way(self, eid: int, attr: str | None, up: bool, had: bool) -> bool:
        """Whether a copy yields its slot past capacity_push_share: a push,
        or (capacity_duplicates_give_way) a down copy of an event whose
        down work in `attr`'s tree is done here already (handling it would
        do nothing)."""
        if attr is None:
            return had or self.content.config.capacity_new_pushes_give_way
        return (
            had
            and not up
            and self.content.config.capacity_duplicates_give_way
            and bool(self.seen.items.get((eid, attr), 0) & DOWN_DONE)
        )

    def _handle(
        self, now: float, copy: Copy, sender: Hashable | None, state: int = 0,
        interested: bool = True, skip: set | None = None, cover: Cover | None = None,
    ) -> tuple[list, bool]:  # fmt: skip
        """Forward one copy: down matching CRT rows (once per event and
        attribute) and, for an `up` copy, on toward the rendezvous. Returns
        (the neighbours copies went to, whether we are the rendezvous)."""
        c = self.content
        sid = (copy.eid, copy.attr)
        memo = self.recent.items.get(sid)
        if memo is None and c.config.catch_up > 0:
            memo = RecentEvent(copy.event, copy.key, copy.hops)
            self.recent.set(now, sid, memo)
        if state & DOWN_DONE:
            down = []
        else:
            down = self.crt.matching_neighbours(copy.attr, copy.key, copy.event.keys(), now, sender)
            if skip:
                down = [nb for nb in down if nb not in skip]
            if cover is not None and down:
                known = cover.known if c.config.covered_pushes_stop_tree else cover.tree
                down = [nb for nb in down if token(nb) not in known]
            if down and self.declined:
                declined = self.declined.items
                down = [nb for nb in down if (copy.eid, nb) not in declined]
        up_hop = None
        rv = False
        if copy.up:
            view = c.view()
            if c.config.route_shortcuts:
                hop = view.up_hop(copy.key, c.shortcuts)
            else:
                hop = view.next_hop(copy.key)
            if not interested and hop is not MINE and c.config.route_to_interest:
                hop = self._interested_hop(view, copy, hop)
            bounce = False
            if hop is not MINE and hop == sender and view.idents:
                # The sender thinks we are nearer the rendezvous, we think it
                # is: one of us has a stale ring (a node joined or died
                # between us). The known node after the key is the likeliest
                # rendezvous; if that is the sender too, it must know a node
                # we do not: hand the copy back (see _up_returned).
                hop = view.successor_of(copy.key)
                c.counters["events_rerouted"] += 1
                bounce = hop == sender
            if hop is MINE:
                rv = True
            elif hop != sender or bounce:
                up_hop = hop  # the up copy also does the down work there
            state |= UP_DONE
        self.seen.set(now, sid, state | DOWN_DONE)
        if memo is not None:
            if rv:
                memo.rendezvous = True
            had = memo.had
            if down:
                had.update(down)
                memo.sent_down = True
            if up_hop is not None:
                had.add(up_hop)
            if sender is not None:
                had.add(sender)
        targets = down
        up_sent = False
        covered: Sequence = ()
        pushed: Sequence = ()
        if cover is not None:
            cover.add(down)
            if up_hop is not None:
                cover.add((up_hop,))
            covered = cover.nodes
            pushed = cover.pushed
        if down:
            out = c.out
            message = None  # one message object for every down copy
            for nb in down:
                if nb == up_hop:
                    self._send_copy(now, nb, copy._replace(up=True, covered=covered, pushed=pushed))
                    up_sent = True
                    continue
                if message is None:
                    message = m.EventMessage(c.profile, copy.eid, copy.event, copy.attr, copy.key,
                                             copy.hops + 1, False, covered, pushed)  # fmt: skip
                out.append(Send(nb, message))
        if up_hop is not None and not up_sent:
            self._send_copy(now, up_hop, copy._replace(up=True, covered=covered, pushed=pushed))
            targets = [*down, up_hop]
        return targets, rv

    def _other_trees(
        self, now: float, eid: int, event: Event, hops: int, done: str | None, sender: Hashable,
        sent: set, cover: Cover | None = None,
    ) -> list:  # fmt: skip
        """The down work of every attribute's tree but `done`'s, where
        not done yet: a pushed node's (push_tree_work), and a node handling
        a tree copy's (every_tree_at_once). Whoever pushes has then done
        every tree's work, so a pushed node may skip its sender in every
        tree. With every_tree_at_once each receiver does the same, so a
        neighbour in `sent` (and those already sent to in another tree
        here) gets no second copy."""
        every = self.content.config.every_tree_at_once
        skip = set(sent) if every else None
        out: list = []
        for attr, key in self.content.event_keys(event):
            if attr == done:
                continue
            state = self.seen.items.get((eid, attr), 0)
            if not state & DOWN_DONE:
                part = Copy(eid, event, attr, key, hops, False)
                targets, _ = self._handle(now, part, sender, state, skip=skip, cover=cover)
                out.extend(targets)
                if skip is not None:
                    skip.update(targets)
        return out

    def _interested_hop(self, view, copy: Copy, hop: Hashable) -> Hashable:
        """route_to_interest: the node we know (link or shortcut) that wants
        the event and lies between us and the key, the nearest the key; the
        routed hop when none does."""
        c = self.content
        me = view.me
        span = (copy.key - me) % RING_SIZE
        values = copy.event.values
        best, best_d = hop, RING_SIZE
        links = c.overlay.links.by_address
        for p in (*(e.profile for e in links.values()), *c.known_profiles):
            ahead = (p.ident - me) % RING_SIZE
            if ahead == 0 or ahead > span:
                continue
            d = span - ahead
            sub = p.subscription
            if d < best_d and sub is not None and satisfies(sub.constraints, values):
                best, best_d = p.address, d
        return best

    def _up_returned(self, now: float, copy: Copy) -> int:
        """An up copy came back to a node that has done its up work: a loop
        of stale rings. Try the known node after the key, once per node and
        event (the catch-up memory says who had it), so loops end."""
        memo = self.recent.get((copy.eid, copy.attr))
        view = self.content.view()
        if memo is None or not view.idents:
            return 0
        hop = view.successor_of(copy.key)
        if hop in memo.had:
            return 0
        memo.had.add(hop)
        self.content.counters["events_rerouted"] += 1
        self._send_copy(now, hop, copy._replace(up=True))
        return 1

    def _send_copy(self, now: float, nb: Hashable, copy: Copy) -> None:
        c = self.content
        msg = m.EventMessage(c.profile, copy.eid, copy.event, copy.attr, copy.key,
                             copy.hops + 1, copy.up, copy.covered, copy.pushed)  # fmt: skip
        c.out.append(Send(nb, msg))
        if copy.up and c.config.event_retry:
            c.retries.sent(now, nb, copy)

    # ----------------------------------------------------------------- pushes

    def on_push(self, now: float, msg: m.EventPush) -> None:
        """A link that knows our subscription sent us an event it matches."""
        arrival = self._arrive(now, msg, None, False)
        if arrival is None:
            return
        interested, had = arrival
        if not had and self.content.config.have_notices:
            self._tell_parents(msg.eid, msg.event, msg.profile.address)
        if interested and msg.eid not in self.delivered:
            self._deliver(now, msg.eid, msg.event, None, msg.hops)
        fwd = 0
        cfg = self.content.config
        if msg.hops < cfg.max_event_hops:
            sender = msg.profile.address
            sent = {sender}
            cover = self._cover(msg.covered, msg.pushed)
            if cfg.push_tree_work:
                others = self._other_trees(now, msg.eid, msg.event, msg.hops, None, sender, sent,
                                           cover)  # fmt: skip
                sent.update(others)
                fwd = len(sent) - 1
            fwd += self._push(now, msg.eid, msg.event, msg.hops, sent, fwd > 0, False, sender,
                              cover)  # fmt: skip
            if cover is not None:
                cover.close(cfg.covered)
        self._received(now, msg, None, interested, fwd, fwd == 0, False, had)

    def _push(
        self, now: float, eid: int, event: Event, hops: int, skip: set, forwarding: bool,
        up: bool, sender: Hashable = None, cover: Cover | None = None,
    ) -> int:  # fmt: skip
        """Subscription awareness (ContentConfig.push): the first time this
        node handles an event, it sends it straight to the links whose
        subscription (from their profile) matches, except those that already
        had a copy from or to us; off the route up (unless push_fanout_up) at
        most `push_fanout` of them, drawn at random. `forwarding`: this
        handling already sent tree copies, so pushing adds no load;
        otherwise a shedding node does not push (yet: a later tree copy that
        it forwards may push), unless the event has come far
        (shed_max_hops). Returns the number of pushes."""
        c = self.content
        cfg = c.config
        if not cfg.push:
            return 0
        limit = cfg.push_max_hops
        # only to links newer than `fresh` (push_new_links), not a full push
        new_only = not (up and cfg.push_from == "up") and (
            (cfg.push_from == "up" and limit is None) or (limit is not None and hops >= limit)
        )
        if new_only and not cfg.push_new_links:
            return 0
        sid = (eid, PUSHED)
        if sid in self.seen:
            return 0
        new_sid = (eid, NEW_PUSHED)
        pushed_new = new_sid in self.seen
        if new_only and pushed_new:
            return 0
        if (
            not forwarding
            and not c.forwarded_lately(eid)
            and hops < cfg.shed_max_hops
            and c.shedding(now)
        ):
            c.counters["pushes_shed"] += 1
            return 0
        # (a push to new links only leaves the event's full push to come)
        self.seen.set(now, new_sid if new_only else sid, DOWN_DONE)
        values = event.values
        if cfg.push_skip_senders_links and sender is not None:
            theirs = c.overlay.next_hops.get(sender)
            if theirs:
                skip = skip | {
                    a for a, e in c.overlay.links.by_address.items() if e.profile.ident in theirs
                }
        links = c.overlay.links
        new: set[Hashable] = set()
        if new_only or pushed_new:
            fresh = now - cfg.push_new_links * c.period
            since = c.overlay.link_since
            new = {a for a in links.by_address if since.get(a, fresh) > fresh}
            if not cfg.push_new_small_world:
                new.difference_update(links.small_world)
        if pushed_new:  # the new links had it then
            skip = skip | new
        if self.declined:  # have notices (empty unless peers send them)
            declined = self.declined.items
            skip = skip | {a for a in links.by_address if (eid, a) in declined}
        if cover is not None:
            known = cover.known
            skip = skip | {a for a in links.by_address if token(a) in known}
            if cfg.push_skip_covered_links:
                # and our links that are a covered node's links: it had them
                linked: set[int] = set()
                for a, ys in c.overlay.next_hops.items():
                    if token(a) in known:
                        linked.update(ys)
                if linked:
                    by_address = links.by_address
                    skip = skip | {a for a, e in by_address.items() if e.profile.ident in linked}
        targets = [
            addr
            for addr, entry in links.by_address.items()
            if addr not in skip
            and (not new_only or addr in new)
            and (sub := entry.profile.subscription) is not None
            and satisfies(sub.constraints, values)
        ]
        fanout = cfg.push_fanout if cfg.push_fanout_up or not up else None
        if fanout is not None and len(targets) > fanout:
            targets = sample(c.rng, targets, fanout)
        covered: Sequence = ()
        pushed: Sequence = ()
        if cover is not None:
            cover.add_pushed(targets)
            covered = cover.nodes
            pushed = cover.pushed
        if targets:
            # one object: encoded once
            push = m.EventPush(c.profile, eid, event, hops + 1, covered, pushed)
            for addr in targets:
                c.out.append(Send(addr, push))
        c.counters["events_pushed"] += len(targets)
        return len(targets)

    # ----------------------------------------------------------------- notices

    def _tell_parents(self, eid: int, event: Event, sender: Hashable) -> None:
        """have_notices: the event's first copy is here; tell every next
        hop whose row from us matches it (a tree parent that would send us
        a copy) but the sender, once."""
        c = self.content
        keys = dict(c.event_keys(event))
        values = event.keys()
        notice = None
        told: set[Hashable] = set()
        for (attr, hop), row in c.installation.sent.items():
            key = keys.get(attr)
            if hop == sender or hop in told or key is None:
                continue
            if any(f.matches(key, values) for f in row.filters):
                if notice is None:
                    notice = m.Have(c.profile, eid)
                c.out.append(Send(hop, notice))
                told.add(hop)
        c.counters["have_sent"] += len(told)

    def on_have(self, now: float, msg: m.Have) -> None:
        """A neighbour has this event: no copy of it to that neighbour.
        Only from a neighbour with a row here (the only ones we would send
        a tree copy to), and at most MAX_DECLINED remembered: a peer cannot
        make us keep more."""
        c = self.content
        c.counters["have_received"] += 1
        sender = msg.profile.address
        if len(self.declined) >= MAX_DECLINED or not any(
            sender in by_nb for by_nb in self.crt.rows.values()
        ):
            return
        self.declined.set(now, (msg.eid, sender))

    # ----------------------------------------------------------------- churn

    def catch_up(self, now: float, nb: Hashable, attr: str, row: Row, fresh: bool) -> None:
        """`nb`'s row changed: send it the recent events it now asks for and
        has not had from us (see ContentConfig.catch_up). Down copies: `nb`
        passes them on along its own rows the same way. A row that merely
        moved here (not `fresh`) had the events on its old route, except
        those we took for ours with no row wanting them: their route to
        the subscribers never existed (a newcomer owner, or its arc grown
        over a dead predecessor's)."""
        if not self.recent:
            return
        c = self.content
        for (eid, a), memo in list(self.recent.items.items()):
            if a != attr or nb in memo.had or not (fresh or memo.orphan):
                continue
            if row.matches(memo.key, memo.event.keys(), now):
                memo.had.add(nb)
                c.counters["events_caught_up"] += 1
                self._send_copy(now, nb, Copy(eid, memo.event, attr, memo.key, memo.hops, False))

    def hand_over(self, now: float, old_pred: int, new_pred: int, heir: Hashable) -> None:
        """Our predecessor moved from `old_pred` to `new_pred`, inside the arc
        we took for ours: the keys in (old_pred, new_pred] were never ours.
        The recent events we were the rendezvous of there go up to the new
        predecessor, `heir`, whose rows (and the subscribers behind them)
        never had them from us."""
        if not self.recent:
            return
        c = self.content
        for (eid, attr), memo in list(self.recent.items.items()):
            if memo.rendezvous and heir not in memo.had and in_arc(memo.key, old_pred, new_pred):
                memo.had.add(heir)
                c.counters["events_handed_over"] += 1
                self._send_copy(now, heir, Copy(eid, memo.event, attr, memo.key, memo.hops, True))

    # ----------------------------------------------------------------- delivery

    def restore_delivered(self, journal) -> None:
        """Deliveries of a previous incarnation (time, eid), oldest first."""
        for t, eid in journal:
            self.delivered.set(t, eid)

    def _deliver(self, now: float, eid: int, event: Event, attr: str | None, hops: int) -> None:
        c = self.content
        self.delivered.set(now, eid)
        c.counters["events_delivered"] += 1
        c.out.append(Deliver(event, eid, hops, attr))
        c.out.append(Log(record(now, c.name, "deliver", eid=eid, hops=hops)))
