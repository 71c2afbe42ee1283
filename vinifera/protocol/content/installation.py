"""Subscription installation: routing what this node and its neighbours ask
for toward the rendezvous nodes of the keys, as aggregated soft state.

A node's demand in one attribute's tree is its own filter (once its
subscription is installed there) plus every row its neighbours sent it.
Each filter's routing keys are split by Algorithm 2 (routing.py) into parts
per next hop; the parts for one hop are aggregated into one row
(filters.py) and sent whole when they change (`Install`). Every period each
next hop gets one `Refresh` carrying a digest per row; a receiver holding
another row asks for it again (`RowRequest`), so a lost update is repaired
within a period, and a row no longer kept alive expires. Work and traffic
per node therefore depend on its degree and the rows' capped size, never on
how many subscribers sit behind a link (docs/protocol.md, "Soft state").
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING

from vinifera.protocol import messages as m
from vinifera.protocol.actions import Send
from vinifera.protocol.content.crt import Crt, Row
from vinifera.protocol.content.filters import Filter, aggregate, digest, own_filter
from vinifera.protocol.routing import MINE, RouteView
from vinifera.ranges import IntervalSet

if TYPE_CHECKING:  # (a cycle: the layer holds its parts)
    from vinifera.protocol.content.layer import Content


class SentRow:
    """A row this node maintains at a next hop."""

    __slots__ = ("filters", "_digest")

    def __init__(self, filters: tuple[Filter, ...]) -> None:
        self.filters = filters
        self._digest: int | None = None

    @property
    def digest(self) -> int:
        """Computed at the first keep-alive that sends it (most rows change
        again before one)."""
        d = self._digest
        if d is None:
            d = self._digest = digest(self.filters)
        return d


class Installation:
    def __init__(self, content: Content) -> None:
        self.content = content  # the node's content layer (view, config, out)
        cfg = content.config
        self.crt = Crt(cfg.max_filters_per_row, cfg.max_intervals, cfg.max_rows_per_attribute)
        self.own: Filter | None = None  # own demand, in the tree of own_attr
        self.own_attr: str | None = None
        # (attribute, next hop) -> the row we keep alive there
        self.sent: dict[tuple[str, Hashable], SentRow] = {}
        self.dirty: set[str] = set()  # attributes whose demand changed
        # ... of which those whose change brings new demand or repairs a
        # failure: their rows go out `fresh`, and only fresh rows get
        # catch-up (a route that merely moved already had the events)
        self.fresh: set[str] = set()
        self._routed_version = -1  # routing view the rows were computed with
        # Arriving rows change a row of ours once per next hop and instant
        # (`_held_back`): the instant, the rows changed in it, and the
        # attributes (and of those, the fresh ones) waiting for a later one
        self._instant = -1.0
        self._changed: set[tuple[str, Hashable]] = set()
        self.held: set[str] = set()
        self.held_fresh: set[str] = set()
        # arrivals before this instant leave their changes dirty for the
        # next re-route (ContentConfig.arrival_route_gap)
        self._arrivals_wait_until = -1.0
        # per routing view: filter -> [(next hop, its part there)], and
        # the parts sent to one hop -> their aggregated row
        self._splits: dict[Filter, list] = {}
        self._aggregates: dict[tuple, tuple] = {}
        # (now, neighbour, attr, row, fresh): catch-up hook
        self.on_row_changed: Callable[[float, Hashable, str, Row, bool], None] | None = None
        # desynchronized: each node keeps its rows alive at its own phase,
        # drawn at its first tick (-1: not yet). A node's first tick comes a
        # period after it starts, so a phase drawn at the start fell on that
        # tick for half the nodes of a simultaneous start, which then kept
        # one phase for good (docs/decisions/rows-and-routing.md, "Keep-alive
        # phases drawn at the first tick")
        self.next_keep_alive = -1.0

    # ----------------------------------------------------------------- demand

    def refresh_own(self, attr: str | None, keys: IntervalSet | None, value_routing: bool) -> None:
        """Set what we ask for ourselves: `keys` in `attr`'s tree, or nothing."""
        sub = self.content.profile.subscription
        new = None
        if sub is not None and attr is not None and keys is not None:
            new = own_filter(sub, attr, keys, value_routing)
        if new != self.own or attr != self.own_attr:
            for a in (self.own_attr, attr):
                if a is not None:
                    self.dirty.add(a)
            if new is not None:
                self.fresh.add(attr)  # type: ignore[arg-type]  # new implies attr
            self.own, self.own_attr = new, (attr if new is not None else None)

    def demand(self, attr: str) -> list[tuple[Hashable, Filter]]:
        """(source, filter) of everything asked of us in `attr`'s tree."""
        out = []
        if self.own is not None and self.own_attr == attr:
            out.append((self.content.address, self.own))
        out.extend(self.crt.demand(attr))
        return out

    # ----------------------------------------------------------------- periodic

    def tick(self, now: float) -> None:
        cfg, period = self.content.config, self.content.period
        self.dirty.update(self.crt.expire(now, cfg.crt_expiry * period))
        self.route(now)
        if self.next_keep_alive < 0:
            self.next_keep_alive = now + self.content.rng.random() * cfg.keep_alive_every * period
        if now >= self.next_keep_alive:
            self.next_keep_alive = now + cfg.keep_alive_every * period
            self._keep_alive()

    def _keep_alive(self) -> None:
        by_hop: dict[Hashable, list] = {}
        for (attr, hop), row in self.sent.items():
            by_hop.setdefault(hop, []).append((attr, row.digest))
        me = self.content.profile
        out = self.content.out
        for hop, digests in by_hop.items():
            out.append(Send(hop, m.Refresh(me, tuple(digests))))

    # ----------------------------------------------------------------- routing

    def route(self, now: float, arrival: bool = False) -> None:
        """Recompute the rows of every attribute whose demand or routing
        view changed, and send what changed. `arrival`: for a row that just
        arrived, whose changes pass on at most once per instant
        (`_held_back`), and not at all within `arrival_route_gap` of the
        last such route (they wait for the next one)."""
        content = self.content
        if arrival:
            if now < self._arrivals_wait_until:
                return
            self._arrivals_wait_until = now + content.config.arrival_route_gap * content.period
        view = content.view()
        if self.held and now != self._instant:
            self.dirty |= self.held
            self.fresh |= self.held_fresh
            self.held.clear()
            self.held_fresh.clear()
        if content.view_version != self._routed_version:
            self._routed_version = content.view_version
            self._splits = {}
            self._aggregates = {}
            self.dirty.update(self.crt.attributes())
            self.dirty.update(attr for attr, _ in self.sent)
            if self.own_attr is not None:
                self.dirty.add(self.own_attr)
        if not self.dirty:
            return
        for attr in sorted(self.dirty):
            self._route_attribute(view, attr, now, arrival)
        self.dirty.clear()
        self.fresh.clear()

    def _route_attribute(self, view: RouteView, attr: str, now: float, arrival: bool) -> None:
        cfg = self.content.config
        sources = self.demand(attr)
        per_hop: dict[Hashable, list[Filter]] = {}
        splits = self._splits
        for source, f in sources:
            if f.depth >= cfg.max_install_hops:
                continue  # a loop's leftovers: see docs/protocol.md, "Soft state"
            # what this filter becomes at each next hop, computed once per
            # routing view (most recomputations change one source of many)
            parts = splits.get(f)
            if parts is None:
                parts = splits[f] = [
                    (hop, Filter(part, f.box, f.depth + 1))
                    for hop, part in view.split(f.keys).items()
                    if hop is not MINE
                ]
            for hop, part in parts:
                if hop != source:  # never back where it came from
                    per_hop.setdefault(hop, []).append(part)
                elif view.has_two_hop_points:
                    # a two-hop point sent it back: route it on our links alone
                    for hop2, keys in view.split_direct(part.keys).items():
                        if hop2 is not MINE and hop2 != source:
                            per_hop.setdefault(hop2, []).append(Filter(keys, part.box, part.depth))
        me = self.content.profile
        out = self.content.out
        sent = self.sent
        fresh = attr in self.fresh
        aggregates = self._aggregates
        if len(aggregates) > 4096:
            aggregates.clear()
        for hop, filters in per_hop.items():
            # an unchanged list of parts aggregates as before: look it up
            ident = tuple(filters)
            row = aggregates.get(ident)
            if row is None:
                row = aggregates[ident] = aggregate(
                    filters, cfg.max_filters_per_row, cfg.max_intervals
                )
            cur = sent.get((attr, hop))
            if (cur is None or cur.filters != row) and not self._held_back(attr, hop, now, arrival):
                sent[(attr, hop)] = SentRow(row)
                out.append(Send(hop, m.Install(me, attr, row, fresh, now)))
        for key in [k for k in sent if k[0] == attr and k[1] not in per_hop]:
            if self._held_back(attr, key[1], now, arrival):
                continue
            # Nothing of ours goes there any more. If nothing is asked of us
            # at all, say so at once (fast de-aggregation); if the demand
            # merely moved, an empty row: what it held stays matchable for
            # dropped_expiry while the new route is built (make-before-break).
            del sent[key]
            if sources:
                out.append(Send(key[1], m.Install(me, attr, (), False, now)))
            else:
                out.append(Send(key[1], m.Withdraw(me, (attr,), now)))

    def _held_back(self, attr: str, hop: Hashable, now: float, arrival: bool) -> bool:
        """Whether a change that an arriving row makes to the row for `hop`
        must wait for the next route at a later instant, because that row
        already changed in this one. Without it, two versions of the rows on
        a cycle of disagreeing ring views can chase each other round it for
        ever where messages take no time (each arrival changes the
        receiver's row, which goes on at once). With latency no two arrivals
        share an instant, so nothing changes there; a node's own changes
        (its tick, a neighbour gone) are never held."""
        if now != self._instant:
            self._instant = now
            self._changed.clear()
        key = (attr, hop)
        if arrival and key in self._changed:
            self.held.add(attr)
            if attr in self.fresh:
                self.held_fresh.add(attr)
            return True
        self._changed.add(key)
        return False

    # ----------------------------------------------------------------- handlers

    def on_install(self, now: float, msg: m.Install) -> None:
        content = self.content
        cfg = content.config
        expiry = now + cfg.crt_expiry * content.period
        keep_dropped = now + cfg.dropped_expiry * content.period
        row = self.crt.install(
            msg.attr, msg.profile.address, msg.filters, expiry, keep_dropped, msg.sent
        )
        if row is not None:
            self.dirty.add(msg.attr)
            if msg.fresh:
                self.fresh.add(msg.attr)
            if self.on_row_changed is not None:
                self.on_row_changed(now, msg.profile.address, msg.attr, row, msg.fresh)
            self.route(now, arrival=True)

    def on_refresh(self, now: float, msg: m.Refresh) -> None:
        content = self.content
        expiry = now + content.config.crt_expiry * content.period
        sender = msg.profile.address
        unknown = tuple(
            attr for attr, fp in msg.digests if not self.crt.keep_alive(attr, sender, fp, expiry)
        )
        if unknown:
            content.out.append(Send(sender, m.RowRequest(content.profile, unknown)))

    def on_row_request(self, now: float, msg: m.RowRequest) -> None:
        """A next hop lost (or never got) a row we keep alive there: resend
        it. Rows we do not keep there are left to expire."""
        content = self.content
        sender = msg.profile.address
        for attr in msg.attrs:
            row = self.sent.get((attr, sender))
            if row is not None:
                # a repair: what the next hop held was wrong, so it may have
                # missed events the row wants; fresh, so they are caught up
                content.out.append(
                    Send(sender, m.Install(content.profile, attr, row.filters, True, now))
                )

    def on_withdraw(self, now: float, msg: m.Withdraw) -> None:
        sender = msg.profile.address
        gone = [attr for attr in msg.attrs if self.crt.withdraw(attr, sender, msg.sent, now)]
        if gone:
            self.dirty.update(gone)
            self.route(now, arrival=True)

    def peer_gone(self, now: float, address: Hashable) -> None:
        """A neighbour left or was suspected: forget what it asked for and
        stop keeping rows alive there. What went through it goes elsewhere
        as fresh rows: events it swallowed are caught up on the new routes."""
        self.dirty.update(self.crt.drop_neighbour(address))
        for key in [k for k in self.sent if k[1] == address]:
            del self.sent[key]
            self.dirty.add(key[0])
            self.fresh.add(key[0])
        if self.dirty:
            self.route(now)

    # ----------------------------------------------------------------- handover

    def rows_for(self, keys: IntervalSet, ttl: float, now: float) -> list[m.HandoverRow]:
        """Our rows' parts in `keys`, and our own demand's: what a moving
        predecessor takes over."""
        out: list[m.HandoverRow] = []
        for attr in self.crt.attributes():
            for nb, filters, expiry in self.crt.clipped(attr, keys):
                out.append(m.HandoverRow(attr, nb, max(0.0, expiry - now), filters))
        own, own_attr = self.own, self.own_attr  # set together
        if own is not None and own_attr is not None and own.keys.intersects(keys):
            out.append(m.HandoverRow(own_attr, self.content.address, ttl,
                                     (Filter(own.keys & keys, own.box, 0),)))  # fmt: skip
        return out

    def adopt(self, now: float, rows: Iterable[m.HandoverRow]) -> None:
        """Rows handed over by our successor before we move: installed as if
        their neighbours had sent them, until those re-route to us."""
        me = self.content.address
        for attr, nb, ttl, filters in rows:
            if nb == me:
                continue
            keep_dropped = now + self.content.config.dropped_expiry * self.content.period
            if self.crt.adopt(attr, nb, filters, now + ttl, keep_dropped) is not None:
                self.dirty.add(attr)

    def row(self, attr: str, nb: Hashable) -> Row | None:
        return self.crt.row(attr, nb)
