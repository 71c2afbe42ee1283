"""Karger-Ruhl identifier balancing, and push shedding.

Each node measures its rendezvous load (events it was the rendezvous of)
and its forwarding load (events it sent on to at least one node), reports
both to its predecessor every period with the key that halves its
rendezvous load, and a node whose successor's rendezvous load exceeds its
own by more than beta moves its identifier to that key, after the successor
has handed over the CRT rows of the keys that move. A node far busier
forwarding than its successor sheds the pushes that would be its only
forwarding of an event (docs/protocol.md, "Load balancing").
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, NamedTuple

from vinifera.protocol import messages as m
from vinifera.protocol.actions import Log, Send
from vinifera.protocol.content.memory import ExpiringMap, Window
from vinifera.protocol.records import hex_id, record
from vinifera.protocol.routing import arc_set
from vinifera.ring import in_arc

if TYPE_CHECKING:  # (a cycle: the layer holds its parts)
    from vinifera.protocol.content.layer import Content


class SuccessorReport(NamedTuple):
    """The last LoadReport of our successor."""

    address: Hashable
    load: float  # rendezvous events per period
    split: int | None  # the key that halves that load
    forwarding: float  # events forwarded per period
    at: float


class PendingMove(NamedTuple):
    new_ident: int
    asked_at: float


class Balancer:
    def __init__(self, content: Content) -> None:
        self.content = content
        self.rv_keys = Window()  # keys of the events we were the rendezvous of
        self.forwarded = ExpiringMap()  # eids we forwarded to at least one node
        self.succ_report: SuccessorReport | None = None
        self.pending_move: PendingMove | None = None
        self.cooldown_until = 0.0

    # ----------------------------------------------------------------- measures

    def forget_before(self, horizon: float) -> None:
        self.rv_keys.forget_before(horizon)
        self.forwarded.forget_before(horizon)

    def note_rendezvous(self, now: float, key: int, interested: bool) -> None:
        """Count an event toward the balancing load (see balance_load)."""
        if not interested or self.content.config.balance_load == "all":
            self.rv_keys.note(now, key)

    def note_forwarded(self, now: float, eid: int) -> None:
        self.forwarded.set(now, eid)

    def load(self) -> float:
        return len(self.rv_keys) / self.content.config.balance_window

    def forwarding(self) -> float:
        """Events forwarded to at least one node, per period, lately."""
        return len(self.forwarded) / self.content.config.balance_window

    def shedding(self, now: float) -> bool:
        """Whether we skip pushes that would be our only forwarding of an
        event (ContentConfig.shed_pushes): while our forwarding load is well
        above our successor's. Pushes are optional, the tree delivers
        without them, so a busy relay sheds this work first."""
        cfg = self.content.config
        report = self._succ_report(now) if cfg.balancing and cfg.shed_pushes else None
        if report is None:
            return False
        mine, theirs = self.forwarding(), report.forwarding
        return mine - theirs > cfg.balance_beta and mine > cfg.shed_ratio * theirs

    # ----------------------------------------------------------------- periodic

    def tick(self, now: float) -> None:
        c = self.content
        links = c.overlay.links
        if links.pred is not None:
            keys = sorted(self.rv_keys)
            split = keys[len(keys) // 2] if keys else None
            load_report = m.LoadReport(c.profile, self.load(), split, self.forwarding())
            c.out.append(Send(links.pred, load_report))
        if self.pending_move is not None and now - self.pending_move.asked_at > 2 * c.period:
            self.pending_move = None  # the successor never answered
        cfg = c.config
        if not cfg.balancing or self.pending_move is not None or now < self.cooldown_until:
            return
        report = self._succ_report(now)
        if report is None:
            return
        mine = self.load()
        split = report.split
        if split is None or report.load - mine <= cfg.balance_beta or report.load <= 2 * mine:
            return
        me = c.profile.ident
        succ_ident = links.by_address[links.succ].profile.ident
        if not in_arc(split, me, succ_ident) or split == succ_ident:
            return
        self.pending_move = PendingMove(split, now)
        c.out.append(Send(links.succ, m.HandoverRequest(c.profile, split)))

    def _succ_report(self, now: float) -> SuccessorReport | None:
        """The last LoadReport, if it is from our current successor and no
        more than two periods old."""
        report = self.succ_report
        c = self.content
        if report is None or report.address != c.overlay.links.succ:
            return None
        return report if now - report.at <= 2 * c.period else None

    # ----------------------------------------------------------------- handlers

    def on_load(self, now: float, msg: m.LoadReport) -> None:
        self.content.overlay.refresh_link(now, msg.profile)
        self.succ_report = SuccessorReport(
            msg.profile.address, msg.load, msg.split, msg.forwarding, now
        )

    def on_handover_request(self, now: float, msg: m.HandoverRequest) -> None:
        """Our predecessor moves to new_ident: the keys (its old identifier,
        new_ident] become its own. Hand it our CRT rows for them."""
        c = self.content
        c.overlay.refresh_link(now, msg.profile)
        links = c.overlay.links
        me = c.profile.ident
        old, new = msg.profile.ident, msg.new_ident
        if links.pred != msg.profile.address or not in_arc(new, old, me) or new == me:
            return
        moving = arc_set(old, new)
        ttl = c.config.crt_expiry * c.period
        rows = c.installation.rows_for(moving, ttl, now)
        self.rv_keys.keep(lambda k: not moving.contains(k))
        c.out.append(Send(msg.profile.address, m.Handover(c.profile, new, tuple(rows))))

    def on_handover(self, now: float, msg: m.Handover) -> None:
        c = self.content
        c.overlay.refresh_link(now, msg.profile)
        pending = self.pending_move
        if pending is None or pending.new_ident != msg.new_ident:
            return
        self.pending_move = None
        c.installation.adopt(now, msg.rows)
        old = c.profile.ident
        c.overlay.move(now, msg.new_ident)
        c.counters["moves"] += 1
        self.cooldown_until = now + c.config.balance_cooldown * c.period
        c.out.append(Log(record(now, c.name, "move", old=hex_id(old), new=hex_id(msg.new_ident))))
        c.installation.route(now)
