"""What the protocol asks its driver to do. The driver executes these; the
protocol never performs I/O itself."""

from __future__ import annotations

from collections.abc import Hashable


class Send:
    __slots__ = ("dest", "message")

    def __init__(self, dest: Hashable, message) -> None:
        self.dest = dest
        self.message = message

    def __repr__(self) -> str:
        return f"Send({self.dest!r}, {self.message!r})"


class Deliver:
    """Hand an event to the local application."""

    __slots__ = ("event", "info")

    def __init__(self, event, info: dict) -> None:
        self.event = event
        self.info = info


class Log:
    """One log record (docs/logs.md); the driver adds nothing but writes it."""

    __slots__ = ("record",)

    def __init__(self, record: dict) -> None:
        self.record = record

    def __repr__(self) -> str:
        return f"Log({self.record!r})"
