"""Overlay messages. Plain immutable records; the wire codec (a separate
concern) turns them into bytes and back. Every message carries the sender's
current profile, so every message is also a heartbeat."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import NamedTuple

from vinifera.protocol.profile import Profile

# Gossip carries descriptors as two tuples of one length: profiles and their
# ages (protocol time units); flat, so that a buffer is not a tuple per entry.


class Message:
    __slots__ = ("profile",)
    kind = "message"

    def __init__(self, profile: Profile) -> None:
        self.profile = profile

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.profile!r})"


class WithEntries(Message):
    __slots__ = ("profiles", "ages")

    def __init__(
        self, profile: Profile, profiles: tuple[Profile, ...], ages: tuple[float, ...]
    ) -> None:
        self.profile = profile
        self.profiles = profiles
        self.ages = ages


class Join(Message):
    """A newcomer asks a bootstrap node for a first sample of the overlay."""

    __slots__ = ()
    kind = "join"


class JoinReply(WithEntries):
    __slots__ = ()
    kind = "join_reply"


class Shuffle(WithEntries):
    """Cyclon: the initiator's fresh descriptor plus a random subset of its view."""

    __slots__ = ()
    kind = "shuffle"


class ShuffleReply(WithEntries):
    __slots__ = ()
    kind = "shuffle_reply"


class TmanRequest(WithEntries):
    """T-Man: the sender's routing table (and some of its view) to merge.
    `links`: the positions in `profiles` of the sender's own routing links,
    so that the receiver knows its neighbour's neighbours (look-ahead
    routing, ContentConfig.route_lookahead); empty when not shared."""

    __slots__ = ("links",)
    kind = "tman"

    def __init__(
        self,
        profile: Profile,
        profiles: tuple[Profile, ...],
        ages: tuple[float, ...],
        links: tuple[int, ...] = (),
    ) -> None:
        self.profile = profile
        self.profiles = profiles
        self.ages = ages
        self.links = links


class TmanReply(TmanRequest):
    __slots__ = ()
    kind = "tman_reply"


class Ping(Message):
    """Liveness probe of a link not heard from lately."""

    __slots__ = ()
    kind = "ping"


class Pong(Message):
    __slots__ = ()
    kind = "pong"


class Leave(Message):
    """Graceful departure: receivers drop the sender at once."""

    __slots__ = ()
    kind = "leave"


# ------------------------------------------------------------------ content layer


class Install(Message):
    """The sender's whole CRT row at the receiver for one attribute's tree:
    aggregated filters (content/filters.py), replacing what was there.
    Sent when the row changes or the receiver asks for it. Soft state.
    `fresh`: the change brings new demand (a new subscription) or repairs
    a failure, so the receiver catches the row up on recent events; a row
    that changed because a route merely moved is not fresh. `sent`: the
    sender's clock when it sent the row; a receiver keeps the latest and
    ignores an older row that arrives after it (datagrams reorder)."""

    __slots__ = ("attr", "filters", "fresh", "sent")
    kind = "install"

    def __init__(
        self, profile: Profile, attr: str, filters: tuple, fresh: bool = False, sent: float = 0.0
    ) -> None:
        self.profile = profile
        self.attr = attr
        self.filters = filters
        self.fresh = fresh
        self.sent = sent


class Refresh(Message):
    """Keep-alive of the sender's rows at the receiver, every period:
    (attribute, digest) pairs. A receiver whose row has another digest (or
    none) asks for it again with a RowRequest; rows not kept alive expire."""

    __slots__ = ("digests",)
    kind = "refresh"

    def __init__(self, profile: Profile, digests: tuple) -> None:
        self.profile = profile
        self.digests = digests


class RowRequest(Message):
    """The receiver's rows at the sender for these attributes are missing or
    differ from the digests it was sent: send them again (Install)."""

    __slots__ = ("attrs",)
    kind = "row_request"

    def __init__(self, profile: Profile, attrs: tuple) -> None:
        self.profile = profile
        self.attrs = attrs


class Withdraw(Message):
    """Nothing is asked of the sender in these attributes' trees any more:
    drop its rows at once (unless a row sent after this arrived first)."""

    __slots__ = ("attrs", "sent")
    kind = "withdraw"

    def __init__(self, profile: Profile, attrs: tuple, sent: float = 0.0) -> None:
        self.profile = profile
        self.attrs = attrs
        self.sent = sent


class EventMessage(Message):
    """One copy of an event in one attribute's tree. `up` copies are still
    on their way to the rendezvous of `key`; the others only go down.
    `covered`, `pushed`: tokens of the nodes its senders sent the event to
    in the tree (and of the senders) and pushed it to (content/cover.py)."""

    __slots__ = ("eid", "event", "attr", "key", "hops", "up", "covered", "pushed")
    kind = "event"

    def __init__(
        self, profile: Profile, eid: int, event, attr: str, key: int, hops: int, up: bool,
        covered: Sequence = (), pushed: Sequence = (),
    ) -> None:  # fmt: skip
        self.profile = profile
        self.eid = eid
        self.event = event
        self.attr = attr
        self.key = key
        self.hops = hops
        self.up = up
        self.covered = covered
        self.pushed = pushed


class EventPush(Message):
    """An event sent straight to a link whose subscription matches it
    (subscription awareness, ContentConfig.push). The receiver delivers it
    and pushes it on, once per event, to its own matching links; a push
    does no tree work (no CRT branch, no rendezvous); `covered` as in
    EventMessage."""

    __slots__ = ("eid", "event", "hops", "covered", "pushed")
    kind = "push"

    def __init__(
        self, profile: Profile, eid: int, event, hops: int, covered: Sequence = (),
        pushed: Sequence = (),
    ) -> None:  # fmt: skip
        self.profile = profile
        self.eid = eid
        self.event = event
        self.hops = hops
        self.covered = covered
        self.pushed = pushed


class Have(Message):
    """We have this event already: to a tree parent that would send it to
    us (ContentConfig.have_notices), which then skips us. GossipSub v1.2's
    IDONTWANT, sent only where a copy is due: to the next hops whose row
    from us matches the event."""

    __slots__ = ("eid",)
    kind = "have"

    def __init__(self, profile: Profile, eid: int) -> None:
        self.profile = profile
        self.eid = eid


class LoadReport(Message):
    """To the predecessor, every period: rendezvous load (events per
    period), the key that splits that load in half, and forwarding load
    (events forwarded to at least one node, per period)."""

    __slots__ = ("load", "split", "forwarding")
    kind = "load"

    def __init__(
        self, profile: Profile, load: float, split: int | None, forwarding: float = 0.0
    ) -> None:
        self.profile = profile
        self.load = load
        self.split = split
        self.forwarding = forwarding


class HandoverRequest(Message):
    """The predecessor will move its identifier to `new_ident`: hand over
    the routing state of the keys that move with it."""

    __slots__ = ("new_ident",)
    kind = "handover_request"

    def __init__(self, profile: Profile, new_ident: int) -> None:
        self.profile = profile
        self.new_ident = new_ident


class HandoverRow(NamedTuple):
    """One CRT row handed over: what `neighbour` asks in `attr`'s tree, for
    `ttl` more (time units), as aggregated filters."""

    attr: str
    neighbour: Hashable
    ttl: float
    filters: tuple


class Handover(Message):
    """CRT rows for the moving keys: (attribute, neighbour, ttl, filters)."""

    __slots__ = ("new_ident", "rows")
    kind = "handover"

    def __init__(self, profile: Profile, new_ident: int, rows: tuple) -> None:
        self.profile = profile
        self.new_ident = new_ident
        self.rows = rows
