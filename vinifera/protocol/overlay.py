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
from collections.abc import Callable, Hashable, Iterable, Sequence

from vinifera.draws import choice
from vinifera.protocol import messages as m
from vinifera.protocol.actions import Log, Send
from vinifera.protocol.candidates import MAX_INBOX, Candidates
from vinifera.protocol.config import OverlayConfig
from vinifera.protocol.cyclon import Cyclon
from vinifera.protocol.joining import Joining
from vinifera.protocol.profile import Entry, Profile, from_wire_entries, to_wire_entries
from vinifera.protocol.records import node_name, record
from vinifera.protocol.selection import (
    IdentifierSample,
    links_record,
    local_gap,
    select_links,
    selection_stands,
    tman_buffer,
)
from vinifera.protocol.tman import (
    FriendScores,
    Links,
    PrimaryAttribute,
    RingIndex,
    SmallWorldAims,
    draw_small_world_fractions,
    overlap_counts,
)
from vinifera.protocol.vetting import SourceCaps, Vetting
from vinifera.ring import RING_SIZE

# Candidates remembered as checked against links that stand (selection_stands)
MAX_CHECKED = 4 * MAX_INBOX


class Overlay:
    def __init__(
        self,
        profile: Profile,
        config: OverlayConfig,
        rng: random.Random,
        out: list,
        share_links: bool = False,
    ) -> None:
        """`share_links`: our T-Man messages name our own routing links, and
        we keep our links' links (`next_hops`): what look-ahead routing
        needs (ContentConfig.route_lookahead; Manku, Naor, Wieder, "Know
        thy neighbor's neighbor")."""
        self.profile = profile
        self.share_links = share_links
        self.config = config
        self.rng = rng
        self.out = out
        self.name = node_name(profile.address)
        self.durations = d = config.durations()
        self.transit = d.transit
        self.vetting = Vetting(d.verify_memory, d.answer_within, d.silent_memory)
        self.cyclon = Cyclon(
            profile.address,
            config.view_size,
            config.shuffle_length,
            rng,
            SourceCaps(config.gossip_per_source),
        )
        self.candidates = Candidates(d, config.tman_message_size, self.vetting)
        self.links = Links()
        self.ring_backups: list[Entry] = []  # next successors/predecessors
        self.primary = PrimaryAttribute(config.primary_margin, config.primary_patience)
        self.primary.reset(profile.subscription)
        self.friend_scores = FriendScores()
        self.sw_aims = SmallWorldAims(config.small_world_aim_octaves)
        n_offsets = config.small_world + (config.friends if config.lend_unused_friend_slots else 0)
        self.sw_fractions = draw_small_world_fractions(n_offsets, rng)
        # Bumped when a link's identifier changes in place (it moved): what
        # was computed from the links' identifiers must be redone.
        self.link_moves = 0
        self._pool: list[Entry] = []  # candidates of the last reselection
        self._ring = RingIndex(())  # ... sorted by identifier
        # The candidates (by address) checked against the links as they
        # stand: the pool they were selected from, for our profile and
        # primary attribute then (_chosen_for), and those found since to
        # rank below them; None when the links are not simply select_links'
        # choice (vetting changed it).
        self._chosen_from: dict[Hashable, Entry] | None = None
        self._chosen_for: tuple[Profile, str | None] | None = None
        self.id_sample = IdentifierSample()
        self._exchanges = 0
        # Link vetting: until when this node is young (see young_for), and
        # the small-world stand-ins its last reselection took then
        self._young_until = 0.0
        self._standins: set[Hashable] = set()
        # T-Man backoff (config.tman_backoff_max): periods until the next
        # active exchange, and the wait after it
        self._tman_wait = 0
        self._tman_interval = 1
        # Links per host (use_link_hosts): None, no cap (the simulator: every
        # node its own host)
        self._link_host_of: Callable[[Hashable], Hashable] | None = None
        self._links_per_host = 0
        self.counters = {"suspected": 0, "joins_sent": 0, "ring_link_moved": 0}
        self.joining = Joining(config, rng, out, self.counters)
        # Our links' own link identifiers, sorted, from their T-Man messages
        # (share_links): kept for current links only (_forget_hops)
        self.next_hops: dict[Hashable, tuple[int, ...]] = {}
        self.next_hops_version = 0  # bumped when next_hops changes
        # When each current link became one (pushes to new links)
        self.link_since: dict[Hashable, float] = {}
        # Called with (now, address) when a neighbour leaves or is suspected,
        # so that upper layers forget what they hold for it.
        self.peer_gone: Callable[[float, Hashable], None] | None = None

    def use_hosts(self, host_of) -> None:
        """Count gossip caps per host(address) instead of per address (the
        daemon: an IP or an IPv6 prefix, one machine with many ports)."""
        if self.cyclon.caps is not None:
            self.cyclon.caps.host_of = host_of
        self.candidates.caps.host_of = host_of

    def use_link_hosts(self, host_of: Callable[[Hashable], Hashable], per_host: int) -> None:
        """At most `per_host` routing links to one host(address), and never
        both ring links (GossipSub's IP colocation factor): Sybils on one
        machine cannot take a node's links however many ports they open."""
        if per_host < 1:
            raise ValueError("per_host must be at least 1")
        self._link_host_of = host_of
        self._links_per_host = per_host

    # ----------------------------------------------------------------- life cycle

    def start(self, now: float, bootstrap: Sequence[Hashable]) -> None:
        self._young_until = now + self.durations.young_for
        self.joining.start(self.profile, bootstrap)

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
        self._reselect(now, self._candidates(now))

    # ----------------------------------------------------------------- periodic

    def tick(self, now: float) -> None:
        for addr in self.vetting.tick(now):  # asked, never answered: forget them
            self.cyclon.forget(addr)
            self.candidates.forget(addr)
        self.candidates.expire(now)
        self.joining.tick(self.profile, not self.cyclon.view and not self.links.by_address)
        # Cyclon: shuffle with the oldest neighbour.
        started = self.cyclon.start_shuffle()
        if started is not None:
            target, sent = started
            mine = Entry(self.profile, now)
            profiles, ages = to_wire_entries([mine, *sent], now)
            self.vetting.ask(target, now)
            self.out.append(Send(target, m.Shuffle(self.profile, profiles, ages)))
        # T-Man: reselect from everything we know; silent links fall out.
        before = self.links.by_address
        known = self._candidates(now)
        self._update_primary(now, known.values())
        if self.config.small_world_below_sample:
            self.sw_aims.observe(self.profile.ident, self.id_sample.sorted, self._ring_gap())
        self._reselect(now, known)
        kept = self.links.by_address
        if self.next_hops:
            self._forget_hops()
        stale = now - self.durations.stale_after
        for addr, e in before.items():
            if addr not in kept and e.heard < stale:
                self.counters["suspected"] += 1
                self.out.append(Log(record(now, self.name, "suspect", peer=node_name(addr))))
                if self.peer_gone is not None:
                    self.peer_gone(now, addr)
        links = self.links.entries()
        if self._tman_due():
            pool = links or self.cyclon.entries()
            if pool:
                target = self._exchange_partner(pool)
                profiles, ages = self._tman_buffer(now, target)
                self.vetting.ask(target.address, now)
                request = m.TmanRequest(self.profile, profiles, ages, self._link_marks(profiles))
                self.out.append(Send(target.address, request))
        # Probe links we have not heard from lately.
        ping = None
        probe = now - self.durations.probe_after
        for e in links:
            if e.heard <= probe:
                ping = ping or m.Ping(self.profile)
                self.out.append(Send(e.profile.address, ping))

    def _tman_due(self) -> bool:
        """Whether this period's active T-Man exchange is due: every period
        after ring or friend links changed (_reselect restarts the count),
        then at doubling intervals up to tman_backoff_max while they hold."""
        self._tman_wait -= 1
        if self._tman_wait > 0:
            return False
        self._tman_wait = self._tman_interval
        self._tman_interval = min(2 * self._tman_interval, self.config.tman_backoff_max)
        return True

    # ----------------------------------------------------------------- handlers

    def on_join(self, now: float, msg: m.Join) -> None:
        entry = self._heard_from(now, msg.profile)
        profiles, ages = self._tman_buffer(now, msg.profile)
        self.out.append(Send(msg.profile.address, m.JoinReply(self.profile, profiles, ages)))
        self.cyclon.insert(entry)

    def on_join_reply(self, now: float, msg: m.JoinReply) -> None:
        entry = self._heard_from(now, msg.profile)
        received = self._believable(now, self._decode(now, msg))
        self.cyclon.merge(received, [])  # our bootstrap's answer: no cap
        self.cyclon.insert(entry)
        self.candidates.stash(received, msg.profile.address)
        self._reselect(now, self._candidates(now))

    def on_shuffle(self, now: float, msg: m.Shuffle) -> None:
        self._heard_from(now, msg.profile)
        received = self._believable(now, self._decode(now, msg))
        reply = self.cyclon.answer_shuffle(msg.profile.address, received)
        profiles, ages = to_wire_entries(reply, now)
        self.out.append(Send(msg.profile.address, m.ShuffleReply(self.profile, profiles, ages)))

    def on_shuffle_reply(self, now: float, msg: m.ShuffleReply) -> None:
        self._heard_from(now, msg.profile)
        received = self._believable(now, self._decode(now, msg))
        for e in received:
            self.id_sample.add(e.profile.ident)
        self.cyclon.finish_shuffle(msg.profile.address, received)

    def on_tman(self, now: float, msg: m.TmanRequest) -> None:
        """Passive side: answer now, merge at the next reselection (at most
        one period later), which halves the selection work."""
        self._heard_from(now, msg.profile)
        profiles, ages = self._tman_buffer(now, msg.profile)
        reply = m.TmanReply(self.profile, profiles, ages, self._link_marks(profiles))
        self.out.append(Send(msg.profile.address, reply))
        self.candidates.stash_wire(now, msg.profiles, msg.ages, msg.profile.address)
        self._note_next_hops(msg)

    def on_tman_reply(self, now: float, msg: m.TmanReply) -> None:
        """Merged at the next reselection, like a request: one selection
        per period."""
        self._heard_from(now, msg.profile)
        self.candidates.stash_wire(now, msg.profiles, msg.ages, msg.profile.address)
        self._note_next_hops(msg)

    def _link_marks(self, profiles: tuple[Profile, ...]) -> tuple[int, ...]:
        """The positions of our own routing links among `profiles`."""
        if not self.share_links:
            return ()
        links = self.links.by_address
        return tuple(i for i, p in enumerate(profiles) if p.address in links)

    def _note_next_hops(self, msg: m.TmanRequest) -> None:
        """A link's T-Man message names its links: keep their identifiers."""
        addr = msg.profile.address
        if not msg.links or not self.share_links or addr not in self.links.by_address:
            return
        profiles = msg.profiles
        hops = tuple(sorted({profiles[i].ident for i in msg.links if 0 <= i < len(profiles)}))
        if self.next_hops.get(addr) != hops:
            self.next_hops[addr] = hops
            self.next_hops_version += 1

    def _forget_hops(self) -> None:
        """Keep the next hops of current links only (a bounded table)."""
        links = self.links.by_address
        gone = [a for a in self.next_hops if a not in links]
        for addr in gone:
            del self.next_hops[addr]
        if gone:
            self.next_hops_version += 1

    def on_ping(self, now: float, msg: m.Ping) -> None:
        self._heard_from(now, msg.profile)
        self.out.append(Send(msg.profile.address, m.Pong(self.profile)))

    def on_pong(self, now: float, msg: m.Pong) -> None:
        # (An answered trial is linked at the next reselection; reselecting
        # at once cost the baseline 0.012 of overhead over 12 seeds.)
        self._heard_from(now, msg.profile)

    def on_leave(self, now: float, msg: m.Leave) -> None:
        addr = msg.profile.address
        self.candidates.left(now, addr)
        self.cyclon.forget(addr)
        self._reselect(now, self._candidates(now))
        if self.peer_gone is not None:
            self.peer_gone(now, addr)

    # ----------------------------------------------------------------- evidence

    def refresh_link(self, now: float, profile: Profile) -> None:
        """Cheap evidence from a content message: refresh the link if it is
        one (no candidate bookkeeping: events arrive by the thousand)."""
        self.vetting.heard(profile.address, now)
        if profile.address in self.links.by_address:
            self._update_link(now, Entry(profile, now - self.transit))

    def _update_link(self, now: float, entry: Entry) -> None:
        """Fresher evidence of a link; a link that moved makes routing views
        built from the links' identifiers stale (link_moves). A ring link
        that moved is chosen again at once: a neighbour that left and came
        back under a new identifier may now lie on our other side, and
        until the next period we would take the whole ring for our arc."""
        links = self.links
        addr = entry.profile.address
        moved = links.by_address[addr].profile.ident != entry.profile.ident
        links.by_address[addr] = entry
        if not moved:
            return
        self.link_moves += 1
        if addr == links.pred or addr == links.succ:
            self.counters["ring_link_moved"] += 1
            self._reselect(now, self._candidates(now))

    def move(self, now: float, ident: int) -> None:
        """Take a new identifier (load balancing); the ring follows."""
        self.profile = self.profile.changed(ident=ident)
        self._reselect(now, self._candidates(now))

    def _heard_from(self, now: float, profile: Profile) -> Entry:
        entry = Entry(profile, now - self.transit)
        addr = profile.address
        self.vetting.heard(addr, now)
        self.joining.heard(addr)
        self.cyclon.touch(entry)
        if addr in self.links.by_address:
            self._update_link(now, entry)
        self.candidates.contact(entry)
        return entry

    def _decode(self, now: float, msg: m.WithEntries) -> list[Entry]:
        return from_wire_entries(msg.profiles, msg.ages, now, self.transit)

    def _believable(self, now: float, entries: Iterable[Entry]) -> list[Entry]:
        return self.candidates.believable(now, self.profile.address, entries)

    def _candidates(self, now: float) -> dict[Hashable, Entry]:
        """Everything believable we know, one freshest entry per node."""
        return self.candidates.pool(
            now,
            self.profile.address,
            self.links.by_address.values(),
            self.ring_backups,
            self.cyclon.view.values(),
        )

    # ----------------------------------------------------------------- selection

    def _update_primary(self, now: float, cands: Iterable[Entry]) -> None:
        sub = self.profile.subscription
        if sub is None or len(sub.attributes) < 2:
            return
        before = self.primary.current
        if self.primary.update(overlap_counts(sub, cands)):
            rec = record(now, self.name, "primary", before=before, after=self.primary.current)
            self.out.append(Log(rec))

    def _ring_gap(self) -> int:
        """The typical identifier distance between nodes here, from our ring
        links and backups (0 without a ring)."""
        me = self.profile.ident
        by_address = self.links.by_address
        ring = [by_address[a] for a in (self.links.succ, self.links.pred) if a in by_address]
        ahead, behind = [], []  # (distance, entry) on either side
        for e in (*ring, *self.ring_backups):
            d = (e.profile.ident - me) % RING_SIZE
            if 0 < d <= RING_SIZE // 2:
                ahead.append((d, e))
            elif d:
                behind.append((RING_SIZE - d, e))
        if not ahead or not behind:
            return 0
        ahead.sort(key=lambda x: x[0])
        behind.sort(key=lambda x: x[0])
        return local_gap([e for _, e in ahead], [e for _, e in behind])

    def _reselect(self, now: float, pool: dict[Hashable, Entry]) -> None:
        self._pool = cands = list(pool.values())
        self._ring = ring = RingIndex(cands)
        self.candidates.clear_inbox()
        chosen_from, self._chosen_from = self._chosen_from, None
        if chosen_from is not None and self._links_stand(pool, chosen_from):
            return
        links, backups = self._select(cands, ring)
        if self.config.vet_links:
            vetted = self._vetted(now, cands, links)
            if vetted is links:
                self._chosen_from = pool
            links = vetted
        else:
            self._chosen_from = pool
        self._chosen_for = (self.profile, self.primary.current)
        self.ring_backups = backups
        old_shape = self.links.shape()
        since = self.link_since
        for addr in links.by_address:
            if addr not in since:
                since[addr] = now
        if len(since) > len(links.by_address):
            for addr in [a for a in since if a not in links.by_address]:
                del since[addr]
        self.links = links
        shape = links.shape()
        changed = shape != old_shape
        # T-Man converges the ring and friends; small-world links are random
        # draws whose change asks for no faster exchange
        if changed and (shape.succ, shape.pred, shape.friends) != (
            old_shape.succ,
            old_shape.pred,
            old_shape.friends,
        ):
            self._tman_interval, self._tman_wait = 1, 0
        if self.config.log_links and changed:
            rec = links_record(now, self.name, self.profile.ident, links, self.primary.current)
            self.out.append(Log(rec))

    def _links_stand(self, pool: dict[Hashable, Entry], chosen_from: dict) -> bool:
        """Whether select_links would choose the links again from `pool`
        (exactly: selection_stands); if so they take its fresher entries."""
        if self._standins or self._chosen_for != (self.profile, self.primary.current):
            return False
        links = self.links
        backups = selection_stands(
            self.profile,
            pool,
            self._ring,
            self.config,
            self.primary.current,
            self.id_sample.sorted,
            self.sw_fractions,
            links,
            chosen_from,
            self.sw_aims,
        )
        if backups is None:
            return False
        by_address = links.by_address
        for addr in by_address:
            by_address[addr] = pool[addr]
        self.ring_backups = backups
        # What was checked against the links stays checked while they stand:
        # the next check scores only what neither pool held (bounded memory)
        if len(chosen_from) < MAX_CHECKED:
            chosen_from.update(pool)
            self._chosen_from = chosen_from
        return True

    def _vetted(self, now: float, cands: list[Entry], links: Links) -> Links:
        """Links only to nodes that answered us: a new one that has not gets
        a trial ping, and the choice is made again without it. A link once
        taken stays vetted (its liveness is judged as before). While the
        node is young, small-world stand-ins are not held (young_for)."""
        vetting = self.vetting
        untried = [a for a in links.by_address if not self._is_vetted(a, now)]
        if not untried:
            if self._standins:
                self._standins = set()
            return links
        ping = m.Ping(self.profile)
        for addr in untried:
            if vetting.ask(addr, now):
                self.out.append(Send(addr, ping))
        kept = [e for e in cands if self._is_vetted(e.profile.address, now)]
        chosen = self._select(kept, RingIndex(kept))[0]
        if now < self._young_until:
            # few vetted candidates yet: the next reselection need not hold
            # what stood in for an untried small-world choice
            self._standins = set(chosen.small_world).difference(links.small_world)
        elif self._standins:
            self._standins = set()
        return chosen

    def _is_vetted(self, addr: Hashable, now: float) -> bool:
        """A link may go to `addr`: it is one now, or it answered us lately.
        (A method, not a nested function: compiled, that is a generic call.)"""
        return addr in self.links.by_address or self.vetting.verified(addr, now)

    def _select(self, cands: list[Entry], ring: RingIndex) -> tuple[Links, list[Entry]]:
        chosen = self._select_from(cands, ring)
        if self._link_host_of is None:
            return chosen
        # Over a host's share: choose again without that host's other
        # candidates (each round settles at least one host; a few suffice)
        for _ in range(4):
            barred = self._over_host_share(chosen[0], cands)
            if not barred:
                break
            cands = [e for e in cands if e.profile.address not in barred]
            chosen = self._select_from(cands, RingIndex(cands))
        return chosen

    def _over_host_share(self, links: Links, cands: list[Entry]) -> set[Hashable]:
        """The candidates to leave out so no host has more than its share of
        `links` (kept in the order succ, pred, friends, small world), nor
        both ring links; empty when `links` keeps to the shares."""
        host_of, share = self._link_host_of, self._links_per_host
        if host_of is None:
            return set()
        counts: dict[Hashable, int] = {}
        kept: set[Hashable] = set()
        over: set[Hashable] = set()
        ring_host = None if links.succ is None else host_of(links.succ)
        for i, addr in enumerate((links.succ, links.pred, *links.friends, *links.small_world)):
            if addr is None:
                continue
            h = host_of(addr)
            n = counts.get(h, 0)
            if n >= share or (i == 1 and h == ring_host):
                over.add(h)
                continue
            counts[h] = n + 1
            kept.add(addr)
        if not over:
            return set()
        return {
            e.profile.address
            for e in cands
            if e.profile.address not in kept and host_of(e.profile.address) in over
        }

    def _select_from(self, cands: list[Entry], ring: RingIndex) -> tuple[Links, list[Entry]]:
        held: Sequence[Hashable] = self.links.small_world
        if self._standins:
            standins = self._standins
            held = tuple(None if a in standins else a for a in held)
        return select_links(
            self.profile,
            cands,
            ring,
            self.config,
            self.primary.current,
            self.id_sample.sorted,
            self.sw_fractions,
            held,
            self.friend_scores,
            self.sw_aims,
        )

    def _tman_buffer(
        self, now: float, target: Profile
    ) -> tuple[tuple[Profile, ...], tuple[float, ...]]:
        return tman_buffer(
            self.profile,
            now,
            target,
            self._pool,
            self._ring,
            self.links.by_address,
            self.config.tman_message_size,
            self.durations.stale_after,
        )

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
        return choice(self.rng, pool).profile

    # ----------------------------------------------------------------- misc

    @staticmethod
    def shortcuts(known: list[Entry]) -> tuple[list[int], list[Hashable]]:
        """Nodes we know but do not link to (`known_fresh`) as (identifiers,
        addresses) sorted by identifier: where an up copy may jump
        (ContentConfig.route_shortcuts)."""
        pairs = sorted(((e.profile.ident, e.profile.address) for e in known), key=lambda p: p[0])
        return [i for i, _ in pairs], [a for _, a in pairs]

    def known_fresh(self, now: float, unverified: bool = False) -> list[Entry]:
        """The candidates of the last reselection that are not links, fresh,
        and answered us lately (or any, `unverified`). Bounded by the
        candidate pool."""
        links = self.links.by_address
        stale = now - self.durations.stale_after
        verified = self.vetting.verified
        return [
            e for e in self._pool
            if (a := e.profile.address) not in links and e.heard >= stale
            and (unverified or verified(a, now))
        ]  # fmt: skip

    def link_addresses(self) -> list[Hashable]:
        return list(self.links.by_address)
