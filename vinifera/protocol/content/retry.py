"""Up copies acknowledged and retried (ContentConfig.event_retry): a copy on
its way to the rendezvous that its hop does not acknowledge (by a pong)
within a round trip goes again, around every hop tried so far, up to
`event_retries` times. A silent ring neighbour's keys go to its heir
(docs/protocol.md, "Churn")."""

from __future__ import annotations

from collections.abc import Collection, Hashable
from typing import TYPE_CHECKING, NamedTuple

from vinifera.protocol import messages as m
from vinifera.protocol.actions import Send
from vinifera.protocol.routing import MINE, RouteView
from vinifera.ring import cw_distance, in_arc

if TYPE_CHECKING:  # (a cycle: the layer holds its parts)
    from vinifera.protocol.content.forest import Copy
    from vinifera.protocol.content.layer import Content


class Unacked(NamedTuple):
    """An up copy sent and not yet acknowledged."""

    sent: float
    hop: Hashable
    copy: Copy
    tried: tuple  # the hops this copy went to, `hop` last


class Retries:
    def __init__(self, content: Content) -> None:
        self.content = content
        self.unacked: list[Unacked] = []
        self.acks: dict[Hashable, float] = {}  # hop -> last pong

    def sent(self, now: float, hop: Hashable, copy: Copy) -> None:
        self.unacked.append(Unacked(now, hop, copy, (hop,)))

    def on_ack(self, now: float, address: Hashable) -> None:
        """A pong: whatever we sent that node before now has arrived."""
        if self.unacked:
            self.acks[address] = now

    def retry(self, now: float) -> None:
        """Up copies sent at least an ack round trip ago and still
        unacknowledged go again, around every hop they went to; a retry is
        itself retried while `event_retries` allows."""
        c = self.content
        wait = 2 * c.overlay.transit  # the assumed round-trip bound
        retries = c.config.event_retries
        keep = []
        acks = self.acks
        me = c.profile
        for item in self.unacked:
            if item.sent > now - wait:
                keep.append(item)  # its ack may still be on the way
                continue
            if acks.get(item.hop, -1.0) >= item.sent:
                continue
            if len(item.tried) > retries:
                continue
            c.counters["events_retried"] += 1
            copy = item.copy
            alt = self.next_hop_without(copy.key, item.tried)
            if alt is not MINE and alt not in item.tried:
                # no covered lists: they name the silent hop, which may not have it
                msg = m.EventMessage(me, copy.eid, copy.event, copy.attr, copy.key,
                                     copy.hops + 1, True)  # fmt: skip
                c.out.append(Send(alt, msg))
                if len(item.tried) < retries:
                    keep.append(Unacked(now, alt, copy, (*item.tried, alt)))
        self.unacked = keep
        # Only acks newer than the oldest copy still waiting can matter.
        oldest = min((item.sent for item in keep), default=now)
        self.acks = {a: t for a, t in acks.items() if t >= oldest}

    def next_hop_without(self, key: int, avoid: Collection[Hashable]) -> Hashable:
        """Where a key would go if the nodes in `avoid` were not links. A
        silent ring neighbour's keys pass to its heir, the next node on that
        side: for a silent successor the next successor we know of, and for
        a silent predecessor ourselves (MINE). The heir keeps the event
        (catch_up) and, once ring repair makes it the rendezvous and the
        subscribers' rows arrive, sends it down to them."""
        c = self.content
        view = c.view()
        me = view.me
        backups = [e.profile for e in c.overlay.ring_backups if e.profile.address not in avoid]
        if view.succ_address in avoid:
            heir = min(backups, key=lambda p: cw_distance(me, p.ident), default=None)
            return MINE if heir is None else heir.address
        if c.overlay.links.pred in avoid and view.pred is not None:
            # its keys, (its own predecessor, it], are ours once it is gone
            before = [p.ident for p in backups if p.ident != view.pred]
            start = min(before, key=lambda i: cw_distance(i, me), default=None)
            if start is not None and in_arc(key, start, view.pred):
                return MINE
        known = [(i, a) for i, a in zip(view.idents, view.addresses, strict=True) if a not in avoid]
        succ = (view.succ, view.succ_address) if view.succ is not None else None
        return RouteView(view.me, view.pred, succ, known).next_hop(key)
