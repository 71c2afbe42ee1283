"""The overlay layer of one node: Cyclon peer sampling, T-Man selection of
ring / friend / small-world links, and liveness from profiles-as-heartbeats.

Pure state: every method takes `now`, randomness comes from the injected rng,
and effects are appended to `out` (Send and Log actions) for the driver.

Liveness: every Entry carries `heard`, the local time of the freshest
evidence that its node was alive. Evidence is back-dated by the transit
allowance, so `heard` never exceeds the moment the node was last really
alive; entries silent for longer than `stale_after` are neither selected nor
believed. Hence a dead neighbour is gone within `failure_timeout`.

Gossip is vetted (vetting.py): links only to nodes that answered us, a
trial ping to a better candidate that has not, silence for those that never
answer, and a cap on what one source host's gossip may hold.
"""

from __future__ import annotations

import random
from bisect import bisect_left, insort
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Sequence

from vinifera.protocol import messages as m
from vinifera.protocol.actions import Log, Send
from vinifera.protocol.config import OverlayConfig
from vinifera.protocol.cyclon import Cyclon
from vinifera.protocol.profile import Entry, Profile, from_wire_entries, to_wire_entries
from vinifera.protocol.records import hex_id, node_name, record
from vinifera.protocol.tman import (
    Links,
    PrimaryAttribute,
    RingIndex,
    draw_small_world_fractions,
    overlap_counts,
    rank_targets_sorted,
    ring_neighbourhood,
    select_friends,
    select_small_world,
    small_world_targets,
)
from vinifera.protocol.vetting import SourceCaps, Vetting
from vinifera.ring import RING_SIZE

# Gossiped candidates held between two reselections; direct contacts may use
# twice as much. Bounds memory when many peers write to us at once.
MAX_INBOX = 64


class Overlay:
    def __init__(
        self,
        profile: Profile,
        config: OverlayConfig,
        rng: random.Random,
        out: list,
    ) -> None:
        self.profile = profile
        self.config = config
        self.rng = rng
        self.out = out
        self.name = node_name(profile.address)
        self.transit = config.transit_allowance
        self.vetting = Vetting(config.verify_memory, config.answer_within, config.silent_memory)
        self.cyclon = Cyclon(
            profile.address,
            config.view_size,
            config.shuffle_length,
            rng,
            SourceCaps(config.gossip_per_source),
        )
        # Candidates one source host's gossip may add per reselection.
        self._inbox_caps = SourceCaps(config.tman_message_size)
        self.links = Links()
        # Candidates learned since the last reselection (gossip and contacts).
        self.inbox: dict[Hashable, Entry] = {}
        self.ring_backups: list[Entry] = []  # next successors/predecessors
        self.departed: dict[Hashable, float] = {}
        self.primary = PrimaryAttribute(config.primary_margin, config.primary_patience)
        self.primary.reset(profile.subscription)
        n_offsets = config.small_world + (config.friends if config.lend_unused_friend_slots else 0)
        self.sw_fractions = draw_small_world_fractions(n_offsets, rng)
        self.bootstrap: list[Hashable] = []
        # Bootstrap nodes not heard from yet, and join retries left for them.
        self.unanswered: set[Hashable] = set()
        self.join_retries = config.join_retries
        # Bumped when a link's identifier changes in place (it moved): what
        # was computed from the links' identifiers must be redone.
        self.link_moves = 0
        self._pool: list[Entry] = []  # candidates of the last reselection
        self._ring = RingIndex(())  # ... sorted by identifier
        # Identifiers seen in Cyclon shuffles: a uniform sample of the ring's
        # population, for rank-based small-world targets.
        self.id_sample: deque[int] = deque(maxlen=128)
        self._sorted_sample: list[int] = []  # the same, sorted (for rank targets)
        self._exchanges = 0
        self.counters = {"suspected": 0, "joins_sent": 0}
        # Called with (now, address) when a neighbour leaves or is suspected,
        # so that upper layers forget what they hold for it.
        self.peer_gone: Callable[[float, Hashable], None] | None = None

    def use_hosts(self, host_of) -> None:
        """Count gossip caps per host(address) instead of per address (the
        daemon: an IP or an IPv6 prefix, one machine with many ports)."""
        if self.cyclon.caps is not None:
            self.cyclon.caps.host_of = host_of
        self._inbox_caps.host_of = host_of

    # ----------------------------------------------------------------- life cycle

    def start(self, now: float, bootstrap: Sequence[Hashable]) -> None:
        self.bootstrap = [a for a in bootstrap if a != self.profile.address]
        if self.bootstrap:  # else: the first node of a new overlay
            self._send_joins()

    def leave(self, now: float) -> None:
        msg = m.Leave(self.profile)
        targets = dict.fromkeys(self.links.by_address)
        targets.update(dict.fromkeys(self.cyclon.view))
        for addr in targets:
            self.out.append(Send(addr, msg))

    def set_profile(self, now: float, profile: Profile, subscription_changed: bool) -> None:
        self.profile = profile
        if subscription_changed:
            self.primary.reset(profile.subscription)
        self._reselect(now, self._candidates(now, True))

    # ----------------------------------------------------------------- periodic

    def tick(self, now: float) -> None:
        cfg = self.config
        for addr in self.vetting.tick(now):  # asked, never answered: forget them
            self.cyclon.forget(addr)
            self.inbox.pop(addr, None)
        if self.departed:
            for addr, t in list(self.departed.items()):
                if now - t > cfg.departed_memory:
                    del self.departed[addr]
        if not self.cyclon.view and not self.links.by_address and self.bootstrap:
            self._send_joins()
        elif self.unanswered and self.join_retries > 0:
            self.join_retries -= 1
            msg = m.Join(self.profile)
            for addr in sorted(self.unanswered, key=str):
                self.counters["joins_sent"] += 1
                self.out.append(Send(addr, msg))
        # Cyclon: shuffle with the oldest neighbour.
        started = self.cyclon.start_shuffle()
        if started is not None:
            target, sent = started
            mine = Entry(self.profile, now)
            wire = to_wire_entries([mine, *sent], now)
            self.vetting.ask(target, now)
            self.out.append(Send(target, m.Shuffle(self.profile, wire)))
        # T-Man: reselect from everything we know; silent links fall out.
        before = self.links.by_address
        cands = self._candidates(now, True)
        self._update_primary(now, cands)
        self._reselect(now, cands)
        kept = self.links.by_address
        stale = now - cfg.stale_after
        for addr, e in before.items():
            if addr not in kept and e.heard < stale:
                self.counters["suspected"] += 1
                self.out.append(Log(record(now, self.name, "suspect", peer=node_name(addr))))
                if self.peer_gone is not None:
                    self.peer_gone(now, addr)
        links = self.links.entries()
        pool = links or self.cyclon.entries()
        if pool:
            target = self._exchange_partner(pool)
            buf = self._tman_buffer(now, target)
            self.vetting.ask(target.address, now)
            self.out.append(Send(target.address, m.TmanRequest(self.profile, buf)))
        # Probe links we have not heard from lately.
        ping = None
        probe = now - cfg.probe_after
        for e in links:
            if e.heard <= probe:
                ping = ping or m.Ping(self.profile)
                self.out.append(Send(e.profile.address, ping))

    # ----------------------------------------------------------------- handlers

    def on_join(self, now: float, msg: m.Join) -> None:
        entry = self._heard_from(now, msg.profile)
        buf = self._tman_buffer(now, msg.profile)
        self.out.append(Send(msg.profile.address, m.JoinReply(self.profile, buf)))
        self.cyclon.insert(entry)

    def on_join_reply(self, now: float, msg: m.JoinReply) -> None:
        entry = self._heard_from(now, msg.profile)
        received = self._believable(now, self._decode(now, msg.entries))
        self.cyclon.merge(received, [])  # our bootstrap's answer: no cap
        self.cyclon.insert(entry)
        self._stash(received, msg.profile.address)
        self._reselect(now, self._candidates(now, True))

    def on_shuffle(self, now: float, msg: m.Shuffle) -> None:
        self._heard_from(now, msg.profile)
        received = self._believable(now, self._decode(now, msg.entries))
        reply = self.cyclon.answer_shuffle(msg.profile.address, received)
        wire = to_wire_entries(reply, now)
        self.out.append(Send(msg.profile.address, m.ShuffleReply(self.profile, wire)))

    def on_shuffle_reply(self, now: float, msg: m.ShuffleReply) -> None:
        self._heard_from(now, msg.profile)
        received = self._believable(now, self._decode(now, msg.entries))
        sample, ordered = self.id_sample, self._sorted_sample
        for e in received:
            if len(sample) == sample.maxlen:
                del ordered[bisect_left(ordered, sample[0])]  # the oldest goes
            sample.append(e.profile.ident)
            insort(ordered, e.profile.ident)
        self.cyclon.finish_shuffle(msg.profile.address, received)

    def on_tman(self, now: float, msg: m.TmanRequest) -> None:
        """Passive side: answer now, merge at the next reselection (at most
        one period later), which halves the selection work."""
        self._heard_from(now, msg.profile)
        reply = self._tman_buffer(now, msg.profile)
        self.out.append(Send(msg.profile.address, m.TmanReply(self.profile, reply)))
        self._stash_wire(now, msg.entries, msg.profile.address)

    def on_tman_reply(self, now: float, msg: m.TmanReply) -> None:
        """Merged at the next reselection, like a request: one selection
        per period."""
        self._heard_from(now, msg.profile)
        self._stash_wire(now, msg.entries, msg.profile.address)

    def on_ping(self, now: float, msg: m.Ping) -> None:
        self._heard_from(now, msg.profile)
        self.out.append(Send(msg.profile.address, m.Pong(self.profile)))

    def on_pong(self, now: float, msg: m.Pong) -> None:
        # (An answered trial is linked at the next reselection; reselecting
        # at once cost the baseline 0.012 of overhead over 12 seeds.)
        self._heard_from(now, msg.profile)

    def on_leave(self, now: float, msg: m.Leave) -> None:
        addr = msg.profile.address
        self.departed[addr] = now
        self.cyclon.forget(addr)
        self.inbox.pop(addr, None)
        self._reselect(now, self._candidates(now, True))
        if self.peer_gone is not None:
            self.peer_gone(now, addr)

    # ----------------------------------------------------------------- evidence

    def refresh_link(self, now: float, profile: Profile) -> None:
        """Cheap evidence from a content message: refresh the link if it is
        one (no candidate bookkeeping: events arrive by the thousand)."""
        self.vetting.heard(profile.address, now)
        if profile.address in self.links.by_address:
            self._update_link(Entry(profile, now - self.transit))

    def _update_link(self, entry: Entry) -> None:
        """Fresher evidence of a link; a link that moved makes routing views
        built from the links' identifiers stale (link_moves)."""
        links = self.links.by_address
        addr = entry.profile.address
        if links[addr].profile.ident != entry.profile.ident:
            self.link_moves += 1
        links[addr] = entry

    def move(self, now: float, ident: int) -> None:
        """Take a new identifier (load balancing); the ring follows."""
        self.profile = self.profile.changed(ident=ident)
        self._reselect(now, self._candidates(now, True))

    def _heard_from(self, now: float, profile: Profile) -> Entry:
        entry = Entry(profile, now - self.transit)
        addr = profile.address
        self.vetting.heard(addr, now)
        if self.departed:
            self.departed.pop(addr, None)
        if self.unanswered:
            self.unanswered.discard(addr)
        self.cyclon.touch(entry)
        if addr in self.links.by_address:
            self._update_link(entry)
        inbox = self.inbox
        if addr in inbox or len(inbox) < 2 * MAX_INBOX:
            inbox[addr] = entry
        return entry

    def _decode(self, now: float, pairs: Iterable[tuple[Profile, float]]) -> list[Entry]:
        return from_wire_entries(pairs, now, self.transit)

    def _believable(self, now: float, entries: Iterable[Entry]) -> list[Entry]:
        """Gossip we believe: not about us, not stale, not about a node that
        left after the evidence was gathered, not about one that would not
        answer us."""
        limit = now - self.config.stale_after
        me = self.profile.address
        departed = self.departed
        silent = self.vetting.silent
        ok = []
        for e in entries:
            addr = e.profile.address
            if addr == me or e.heard < limit or addr in silent:
                continue
            if departed:
                left = departed.get(addr)
                if left is not None and e.heard <= left:
                    continue
            ok.append(e)
        return ok

    def _stash(self, entries: Iterable[Entry], source: Hashable) -> None:
        """Candidates from `source`'s gossip, at most tman_message_size of
        them per source host until the next reselection."""
        inbox = self.inbox
        silent = self.vetting.silent
        caps = self._inbox_caps
        for e in entries:
            addr = e.profile.address
            if addr in silent:
                continue
            cur = inbox.get(addr)
            if cur is None:
                if len(inbox) < MAX_INBOX and caps.admit(addr, source):
                    inbox[addr] = e
            elif e.heard > cur.heard:
                inbox[addr] = e

    def _stash_wire(
        self, now: float, pairs: Iterable[tuple[Profile, float]], source: Hashable
    ) -> None:
        """_stash of gossip as received, (profile, age) pairs: an Entry is
        made only for what is kept (most of a T-Man buffer is not)."""
        inbox = self.inbox
        silent = self.vetting.silent
        caps = self._inbox_caps
        base = now - self.transit  # as from_wire_entries back-dates
        for p, age in pairs:
            addr = p.address
            if silent and addr in silent:
                continue
            heard = base - age
            cur = inbox.get(addr)
            if cur is None:
                if len(inbox) < MAX_INBOX and caps.admit(addr, source):
                    inbox[addr] = Entry(p, heard)
            elif heard > cur.heard:
                inbox[addr] = Entry(p, heard)

    def _candidates(self, now: float, with_view: bool) -> list[Entry]:
        """Everything believable we know, one freshest entry per node."""
        limit = now - self.config.stale_after
        pool: dict[Hashable, Entry] = {}
        get = pool.get
        sources: tuple[Iterable[Entry], ...] = (
            self.links.by_address.values(),
            self.inbox.values(),
            self.ring_backups,
        )
        if with_view:
            sources += (self.cyclon.view.values(),)
        for source in sources:
            for e in source:
                if e.heard < limit:
                    continue
                addr = e.profile.address
                cur = get(addr)
                if (
                    cur is None
                    or e.heard > cur.heard
                    or (e.heard == cur.heard and e.profile.seq > cur.profile.seq)
                ):
                    pool[addr] = e
        pool.pop(self.profile.address, None)
        if self.vetting.silent:
            for addr in self.vetting.silent:
                pool.pop(addr, None)
        if self.departed:
            for addr, left in self.departed.items():
                held = pool.get(addr)
                if held is not None and held.heard <= left:
                    del pool[addr]
        return list(pool.values())

    # ----------------------------------------------------------------- selection

    def _update_primary(self, now: float, cands: list[Entry]) -> None:
        sub = self.profile.subscription
        if sub is None or len(sub.attributes) < 2:
            return
        before = self.primary.current
        if self.primary.update(overlap_counts(sub, cands)):
            rec = record(now, self.name, "primary", before=before, after=self.primary.current)
            self.out.append(Log(rec))

    def _reselect(self, now: float, cands: list[Entry]) -> None:
        self._pool = cands
        self._ring = ring = RingIndex(cands)
        self.inbox.clear()
        self._inbox_caps.clear()
        links, backups = self._select(cands, ring)
        if self.config.vet_links:
            links = self._vetted(now, cands, links)
        self.ring_backups = backups
        old_shape = self.links.shape()
        self.links = links
        if self.config.log_links and links.shape() != old_shape:
            self.out.append(Log(self._links_record(now)))

    def _vetted(self, now: float, cands: list[Entry], links: Links) -> Links:
        """Links only to nodes that answered us: a new one that has not gets
        a trial ping, and the choice is made again without it. A link once
        taken stays vetted (its liveness is judged as before)."""
        vetting = self.vetting
        current = self.links.by_address

        def vetted(addr: Hashable) -> bool:
            return addr in current or vetting.verified(addr, now)

        untried = [a for a in links.by_address if not vetted(a)]
        if not untried:
            return links
        ping = m.Ping(self.profile)
        for addr in untried:
            if vetting.ask(addr, now):
                self.out.append(Send(addr, ping))
        kept = [e for e in cands if vetted(e.profile.address)]
        return self._select(kept, RingIndex(kept))[0]

    def _select(self, cands: list[Entry], ring: RingIndex) -> tuple[Links, list[Entry]]:
        """The routing links chosen from `cands` (`ring`: the same, by
        identifier), and the ring backups."""
        cfg = self.config
        me = self.profile
        succs, preds = ring_neighbourhood(me.ident, cands, cfg.ring_backups + 1, ring)
        succ = succs[0] if succs else None
        pred = preds[0] if preds else None
        taken = set()
        if succ is not None:
            taken.add(succ.profile.address)
        if pred is not None:
            taken.add(pred.profile.address)
        friends = select_friends(
            me.ident, me.subscription, self.primary.current, cands, cfg.friends, taken
        )
        for e in friends:
            taken.add(e.profile.address)
        n_sw = cfg.small_world
        if cfg.lend_unused_friend_slots:
            n_sw += cfg.friends - len(friends)
        small_world = []
        if n_sw > 0 and succs:
            # typical distance between nodes here: the span of our ring
            # neighbourhood over the number of gaps in it
            span = (succs[-1].profile.ident - preds[-1].profile.ident) % RING_SIZE
            gap = span // (len(succs) + len(preds))
            # friends already reach our neighbourhood of interest: long links
            # start beyond the farthest of them
            for e in friends:
                d = (e.profile.ident - me.ident) % RING_SIZE
                gap = max(gap, min(d, RING_SIZE - d))
            if len(self.id_sample) >= 32:
                fractions = self.sw_fractions[:n_sw]
                targets = rank_targets_sorted(me.ident, self._sorted_sample, fractions)
            else:  # too few samples yet: identifier distance
                targets = small_world_targets(me.ident, gap, self.sw_fractions[:n_sw])
            small_world = select_small_world(
                targets, cands, taken, self.links.small_world, me.ident, ring
            )
        return Links(succ, pred, friends, small_world), succs[1:] + preds[1:]

    def _exchange_partner(self, pool: list[Entry]) -> Profile:
        """Rotate successor, predecessor, random link. Regular contact with
        both ring neighbours is what lets a node's successor learn that it is
        the true predecessor (Chord's notify), and closes the ring fast."""
        self._exchanges += 1
        links = self.links
        turn = self._exchanges % 3
        if turn == 0 and links.succ is not None:
            return links.by_address[links.succ].profile
        if turn == 1 and links.pred is not None:
            return links.by_address[links.pred].profile
        return self.rng.choice(pool).profile

    def _tman_buffer(self, now: float, target: Profile) -> tuple:
        """What we send in a T-Man exchange, ranked for the receiver (T-Man's
        key to fast convergence): the candidates closest to its identifier
        first, then our own links (its neighbour's friends are likely its
        friends too), then the rest of what we know; capped."""
        cap = self.config.tman_message_size
        limit = now - self.config.stale_after
        taddr = target.address
        pool = self._pool
        fresh = [e.heard >= limit and e.profile.address != taddr for e in pool]
        mine = Entry(self.profile, now)
        if sum(fresh) + 1 <= cap:
            return to_wire_entries([e for e, ok in zip(pool, fresh, strict=True) if ok] + [mine],
                                   now)  # fmt: skip
        # the closest to the receiver first (ties: our pool's order, ourselves last)
        t = target.ident
        near = self._ring.nearest(t, cap // 2, fresh.__getitem__)
        d = (mine.profile.ident - t) % RING_SIZE
        near.append((min(d, RING_SIZE - d), len(pool)))
        near.sort()
        chosen: dict = {}
        for _, i in near[: cap // 2]:
            e = pool[i] if i < len(pool) else mine
            chosen[e.profile.address] = e
        for addr, e in self.links.by_address.items():
            if addr != taddr:
                chosen.setdefault(addr, e)
        for e, ok in zip(pool, fresh, strict=True):
            if len(chosen) >= cap:
                break
            if ok:
                chosen.setdefault(e.profile.address, e)
        if len(chosen) < cap:
            chosen.setdefault(mine.profile.address, mine)
        pool = list(chosen.values())[:cap]
        return to_wire_entries(pool, now)

    # ----------------------------------------------------------------- misc

    def _links_record(self, now: float) -> dict:
        links = self.links

        def name(addr):
            return None if addr is None else node_name(addr)

        return record(
            now,
            self.name,
            "links",
            id=hex_id(self.profile.ident),
            succ=name(links.succ),
            pred=name(links.pred),
            friends=[name(a) for a in links.friends],
            small_world=[name(a) for a in links.small_world],
            primary=self.primary.current,
        )

    def _send_joins(self) -> None:
        k = min(self.config.join_fanout, len(self.bootstrap))
        msg = m.Join(self.profile)
        for addr in self.rng.sample(self.bootstrap, k):
            self.counters["joins_sent"] += 1
            self.unanswered.add(addr)
            self.out.append(Send(addr, msg))

    def link_addresses(self) -> list[Hashable]:
        return list(self.links.by_address)
