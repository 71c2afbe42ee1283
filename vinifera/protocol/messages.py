"""Overlay messages. Plain immutable records; the wire codec (a separate
concern) turns them into bytes and back. Every message carries the sender's
current profile, so every message is also a heartbeat."""

from __future__ import annotations

from vinifera.protocol.profile import Profile

# entries: tuple of (Profile, age) pairs, age in protocol time units.


class Message:
    __slots__ = ("profile",)
    kind = "message"

    def __init__(self, profile: Profile) -> None:
        self.profile = profile

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.profile!r})"


class WithEntries(Message):
    __slots__ = ("entries",)

    def __init__(self, profile: Profile, entries: tuple) -> None:
        self.profile = profile
        self.entries = entries


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
    """T-Man: the sender's routing table (and some of its view) to merge."""

    __slots__ = ()
    kind = "tman"


class TmanReply(WithEntries):
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


OVERLAY_MESSAGES = (
    Join,
    JoinReply,
    Shuffle,
    ShuffleReply,
    TmanRequest,
    TmanReply,
    Ping,
    Pong,
    Leave,
)
