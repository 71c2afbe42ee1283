"""Node profiles and the descriptors that carry them in gossip.

A profile is what one node knows about another: its address (its stable
name), its ring identifier (which moves under load balancing), its
subscription, and a sequence number bumped on every change. Profiles ride on
every message, so any message doubles as a heartbeat.
"""

from __future__ import annotations

from collections.abc import Hashable

from vinifera.subscription import Subscription


class Profile:
    __slots__ = ("address", "ident", "subscription", "seq")

    def __init__(
        self, address: Hashable, ident: int, subscription: Subscription | None, seq: int = 0
    ) -> None:
        self.address = address
        self.ident = ident
        self.subscription = subscription
        self.seq = seq

    def changed(
        self,
        *,
        ident: int | None = None,
        subscription=...,
    ) -> Profile:
        """A copy with a new identifier and/or subscription and a bumped seq."""
        return Profile(
            self.address,
            self.ident if ident is None else ident,
            self.subscription if subscription is ... else subscription,
            self.seq + 1,
        )

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Profile)
            and self.address == other.address
            and self.ident == other.ident
            and self.seq == other.seq
            and self.subscription == other.subscription
        )

    def __hash__(self) -> int:
        return hash((self.address, self.ident, self.seq))

    def __repr__(self) -> str:
        return f"Profile({self.address!r}, {self.ident:#018x}, seq={self.seq})"


class Entry:
    """A profile plus `heard`: local time of the freshest evidence that its
    node was alive (direct contact, or gossip whose age says so)."""

    __slots__ = ("profile", "heard")

    def __init__(self, profile: Profile, heard: float) -> None:
        self.profile = profile
        self.heard = heard

    def __repr__(self) -> str:
        return f"Entry({self.profile!r}, heard={self.heard})"


def fresher(a: Entry, b: Entry) -> bool:
    """Whether a carries better knowledge than b about the same node."""
    if a.heard != b.heard:
        return a.heard > b.heard
    return a.profile.seq > b.profile.seq


def to_wire_entries(
    entries: list[Entry], now: float
) -> tuple[tuple[Profile, ...], tuple[float, ...]]:
    """Entries as their profiles and ages (a message's two tuples): ages,
    not times, cross the network because peers' clocks are not comparable."""
    return tuple([e.profile for e in entries]), tuple([now - e.heard for e in entries])


def from_wire_entries(
    profiles: tuple[Profile, ...], ages: tuple[float, ...], now: float, transit: float
) -> list[Entry]:
    """Back-date received evidence by the transit allowance: time in flight
    is not in the age, and must not make anyone look younger than they are."""
    base = now - transit
    return [Entry(profiles[i], base - ages[i]) for i in range(len(profiles))]
