"""The overlay layer of one node: Cyclon peer sampling, T-Man selection of
ring / friend / small-world links, and liveness from profiles-as-heartbeats.

Pure state: every method takes `now`, randomness comes from the injected rng,
and effects are appended to `out` (Send and Log actions) for the driver.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence

from vinifera.protocol import messages as m
from vinifera.protocol.actions import Log, Send
from vinifera.protocol.config import OverlayConfig
from vinifera.protocol.cyclon import Cyclon
from vinifera.protocol.profile import Entry, Profile, fresher, from_wire_entries, to_wire_entries
from vinifera.protocol.records import hex_id, node_name, record
from vinifera.protocol.tman import (
    Links,
    PrimaryAttribute,
    draw_small_world_offsets,
    overlap_counts,
    ring_neighbourhood,
    select_friends,
    select_small_world,
)
from vinifera.ring import RING_SIZE

# Candidates learned by direct contact between two reselections (bounds memory
# when many strangers write to us).
MAX_FRESH = 32


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
        self.cyclon = Cyclon(profile.address, config.view_size, config.shuffle_length, rng)
        self.links = Links()
        self.fresh: dict[Hashable, Entry] = {}
        self.departed: dict[Hashable, float] = {}
        self.primary = PrimaryAttribute(config.primary_margin, config.primary_patience)
        self.primary.reset(profile.subscription)
        n_offsets = config.small_world + (config.friends if config.lend_unused_friend_slots else 0)
        self.sw_offsets = draw_small_world_offsets(n_offsets, rng)
        self.bootstrap: list[Hashable] = []
        self.joined = False
        self.transit = config.transit_allowance
        self._pool: list[Entry] = []  # candidates seen at the last reselection
        self.ring_backups: list[Entry] = []  # next successors/predecessors
        self._exchanges = 0
        self.counters = {"suspected": 0, "joins_sent": 0}

    # ----------------------------------------------------------------- life cycle

    def start(self, now: float, bootstrap: Sequence[Hashable]) -> None:
        self.bootstrap = [a for a in bootstrap if a != self.profile.address]
        if not self.bootstrap:
            self.joined = True  # the first node of a new overlay
        else:
            self._send_joins()

    def leave(self, now: float) -> None:
        msg = m.Leave(self.profile)
        targets = {e.profile.address: None for e in self.links.entries()}
        targets.update(dict.fromkeys(self.cyclon.view))
        for addr in targets:
            self.out.append(Send(addr, msg))

    def set_profile(self, now: float, profile: Profile, subscription_changed: bool) -> None:
        self.profile = profile
        if subscription_changed:
            self.primary.reset(profile.subscription)
        self._reselect(now, ())

    # ----------------------------------------------------------------- periodic

    def tick(self, now: float) -> None:
        cfg = self.config
        for addr, t in list(self.departed.items()):
            if now - t > cfg.departed_memory:
                del self.departed[addr]
        if not self.cyclon.view and not self.links.entries() and self.bootstrap:
            self._send_joins()
        # Cyclon shuffle with the oldest neighbour.
        started = self.cyclon.start_shuffle()
        if started is not None:
            target, sent = started
            mine = Entry(self.profile, now)
            self.out.append(
                Send(target, m.Shuffle(self.profile, to_wire_entries([mine, *sent], now)))
            )
        # Liveness: silent links fall out in the reselection; log them.
        before = self.links.entries()
        self._update_primary(now)
        self._reselect(now, ())
        kept = {e.profile.address for e in self.links.entries()}
        for e in before:
            if e.profile.address not in kept and now - e.heard > cfg.stale_after:
                self.counters["suspected"] += 1
                self.out.append(
                    Log(record(now, self.name, "suspect", peer=node_name(e.profile.address)))
                )
        # T-Man exchange with a random link (or a random sample when we have none).
        links = self.links.entries()
        pool = links or self.cyclon.entries()
        if pool:
            target = self._exchange_partner(pool)
            self.out.append(
                Send(target.address, m.TmanRequest(self.profile, self._tman_buffer(now, target)))
            )
        # Probe links we have not heard from lately.
        ping = None
        for e in links:
            if now - e.heard >= cfg.probe_after:
                ping = ping or m.Ping(self.profile)
                self.out.append(Send(e.profile.address, ping))

    # ----------------------------------------------------------------- handlers

    def on_join(self, now: float, msg: m.Join) -> None:
        entry = self._heard_from(now, msg.profile)
        buf = self._tman_buffer(now, msg.profile)
        self.out.append(Send(msg.profile.address, m.JoinReply(self.profile, buf)))
        self.cyclon.insert(entry)

    def on_join_reply(self, now: float, msg: m.JoinReply) -> None:
        self._heard_from(now, msg.profile)
        received = self._accept(now, from_wire_entries(msg.entries, now, self.transit))
        self.cyclon.merge(received, [])
        self.cyclon.insert(Entry(msg.profile, now))
        self.joined = True
        self._reselect(now, received)

    def on_shuffle(self, now: float, msg: m.Shuffle) -> None:
        self._heard_from(now, msg.profile)
        received = self._accept(now, from_wire_entries(msg.entries, now, self.transit))
        reply = self.cyclon.answer_shuffle(msg.profile.address, received)
        self.out.append(
            Send(msg.profile.address, m.ShuffleReply(self.profile, to_wire_entries(reply, now)))
        )

    def on_shuffle_reply(self, now: float, msg: m.ShuffleReply) -> None:
        self._heard_from(now, msg.profile)
        received = self._accept(now, from_wire_entries(msg.entries, now, self.transit))
        self.cyclon.finish_shuffle(msg.profile.address, received)

    def on_tman(self, now: float, msg: m.TmanRequest) -> None:
        self._heard_from(now, msg.profile)
        reply = self._tman_buffer(now, msg.profile)
        self.out.append(Send(msg.profile.address, m.TmanReply(self.profile, reply)))
        self._reselect(now, self._accept(now, from_wire_entries(msg.entries, now, self.transit)))

    def on_tman_reply(self, now: float, msg: m.TmanReply) -> None:
        self._heard_from(now, msg.profile)
        self._reselect(now, self._accept(now, from_wire_entries(msg.entries, now, self.transit)))

    def on_ping(self, now: float, msg: m.Ping) -> None:
        self._heard_from(now, msg.profile)
        self.out.append(Send(msg.profile.address, m.Pong(self.profile)))

    def on_pong(self, now: float, msg: m.Pong) -> None:
        self._heard_from(now, msg.profile)

    def on_leave(self, now: float, msg: m.Leave) -> None:
        addr = msg.profile.address
        self.departed[addr] = now
        self.cyclon.forget(addr)
        self.fresh.pop(addr, None)
        self._reselect(now, ())

    # ----------------------------------------------------------------- internals

    def heard_from(self, now: float, profile: Profile) -> None:
        """Direct evidence from any layer's message (content messages too)."""
        self._heard_from(now, profile)

    def _heard_from(self, now: float, profile: Profile) -> Entry:
        entry = Entry(profile, now - self.transit)
        addr = profile.address
        self.departed.pop(addr, None)
        self.cyclon.touch(entry)
        links = self.links
        if links.succ is not None and links.succ.profile.address == addr:
            links.succ = entry
        if links.pred is not None and links.pred.profile.address == addr:
            links.pred = entry
        for group in (links.friends, links.small_world):
            for i, e in enumerate(group):
                if e.profile.address == addr:
                    group[i] = entry
        if addr in self.fresh or len(self.fresh) < MAX_FRESH:
            self.fresh[addr] = entry
        return entry

    def _exchange_partner(self, pool: list[Entry]) -> Profile:
        """Rotate successor, predecessor, random link. Regular contact with
        both ring neighbours is what lets a node's successor learn that it is
        the true predecessor (Chord's notify), and closes the ring fast."""
        self._exchanges += 1
        links = self.links
        turn = self._exchanges % 3
        if turn == 0 and links.succ is not None:
            return links.succ.profile
        if turn == 1 and links.pred is not None:
            return links.pred.profile
        return self.rng.choice(pool).profile

    def _accept(self, now: float, entries: list[Entry]) -> list[Entry]:
        """Gossip we are willing to believe: not about us, not too old, not
        about a node that left after the evidence was gathered."""
        timeout = self.config.stale_after
        me = self.profile.address
        departed = self.departed
        ok = []
        for e in entries:
            addr = e.profile.address
            if addr == me or now - e.heard > timeout:
                continue
            left = departed.get(addr)
            if left is not None and e.heard <= left:
                continue
            ok.append(e)
        return ok

    def _tman_buffer(self, now: float, target: Profile) -> tuple:
        """What we send in a T-Man exchange, ranked for the receiver (T-Man's
        key to fast convergence): the candidates closest to its identifier
        first, then our own links (its neighbour's friends are likely its
        friends too), then the rest of what we know; capped."""
        cap = self.config.tman_message_size
        limit = now - self.config.stale_after
        taddr = target.address
        pool = [e for e in self._pool if e.heard >= limit and e.profile.address != taddr]
        pool.append(Entry(self.profile, now))
        if len(pool) > cap:
            ident = target.ident
            size = RING_SIZE
            half = size >> 1

            def closeness(e: Entry) -> int:
                d = (e.profile.ident - ident) % size
                return d if d <= half else size - d

            ranked = sorted(pool, key=closeness)
            chosen = {e.profile.address: e for e in ranked[: cap // 2]}
            for e in self.links.entries():
                if e.profile.address != taddr:
                    chosen.setdefault(e.profile.address, e)
            for e in pool:
                if len(chosen) >= cap:
                    break
                chosen.setdefault(e.profile.address, e)
            pool = list(chosen.values())[:cap]
        return to_wire_entries(pool, now)

    def _candidates(self, now: float, received) -> list[Entry]:
        pool: dict[Hashable, Entry] = {}
        timeout = self.config.stale_after
        me = self.profile.address
        departed = self.departed
        sources = (
            self.links.entries(),
            received,
            self.ring_backups,
            self.cyclon.view.values(),
            self.fresh.values(),
        )
        for source in sources:
            for e in source:
                addr = e.profile.address
                if addr == me or now - e.heard > timeout:
                    continue
                left = departed.get(addr)
                if left is not None and e.heard <= left:
                    continue
                cur = pool.get(addr)
                if cur is None or fresher(e, cur):
                    pool[addr] = e
        return list(pool.values())

    def _update_primary(self, now: float) -> None:
        sub = self.profile.subscription
        if sub is None or len(sub.attributes) < 2:
            return
        before = self.primary.current
        if self.primary.update(overlap_counts(sub, self._candidates(now, ()))):
            self.out.append(
                Log(record(now, self.name, "primary", before=before, after=self.primary.current))
            )

    def _reselect(self, now: float, received) -> None:
        cfg = self.config
        cands = self._candidates(now, received)
        self._pool = cands
        self.fresh.clear()
        me = self.profile
        succs, preds = ring_neighbourhood(me.ident, cands, cfg.ring_backups + 1)
        succ = succs[0] if succs else None
        pred = preds[0] if preds else None
        self.ring_backups = succs[1:] + preds[1:]
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
        small_world = select_small_world(me.ident, self.sw_offsets[:n_sw], cands, taken)
        old_shape = self.links.shape()
        self.links = Links(succ, pred, friends, small_world)
        if cfg.log_links and self.links.shape() != old_shape:
            self.out.append(Log(self._links_record(now)))

    def _links_record(self, now: float) -> dict:
        links = self.links

        def name(e):
            return None if e is None else node_name(e.profile.address)

        return record(
            now,
            self.name,
            "links",
            id=hex_id(self.profile.ident),
            succ=name(links.succ),
            pred=name(links.pred),
            friends=[name(e) for e in links.friends],
            small_world=[name(e) for e in links.small_world],
            primary=self.primary.current,
        )

    def _send_joins(self) -> None:
        k = min(self.config.join_fanout, len(self.bootstrap))
        msg = m.Join(self.profile)
        for addr in self.rng.sample(self.bootstrap, k):
            self.counters["joins_sent"] += 1
            self.out.append(Send(addr, msg))

    def link_addresses(self) -> list[Hashable]:
        return [e.profile.address for e in self.links.entries()]
