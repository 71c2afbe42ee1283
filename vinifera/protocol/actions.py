"""What the protocol asks its driver to do. The driver executes these; the
protocol never performs I/O itself."""

from __future__ import annotations

from collections.abc import Hashable
from typing import NamedTuple

from vinifera.subscription import Event


class Send:
    __slots__ = ("dest", "message")

    def __init__(self, dest: Hashable, message) -> None:
        self.dest = dest
        self.message = message

    def __repr__(self) -> str:
        return f"Send({self.dest!r}, {self.message!r})"


class Deliver:
    """Hand an event to the local application: `eid` is its identifier,
    `hops` the copies it took from the publisher to here (0: published
    here), `attr` the attribute whose tree brought it (None: published here
    or pushed by a link that knows our subscription)."""

    __slots__ = ("event", "eid", "hops", "attr")

    def __init__(self, event: Event, eid: int, hops: int, attr: str | None) -> None:
        self.event = event
        self.eid = eid
        self.hops = hops
        self.attr = attr

    def __repr__(self) -> str:
        return f"Deliver(eid={self.eid}, hops={self.hops}, attr={self.attr!r})"


class Published(NamedTuple):
    """What `Node.publish` returns: the new event's identifier beside the
    actions every entry point returns (a tuple: `eid, actions = ...` works)."""

    eid: int
    actions: list


class Log:
    """One log record (docs/logs.md); the driver adds nothing but writes it."""

    __slots__ = ("record",)

    def __init__(self, record: dict) -> None:
        self.record = record

    def __repr__(self) -> str:
        return f"Log({self.record!r})"
