"""Subscriptions (conjunctions of closed ranges) and events (attribute values).

Both are validated once against a schema when built and are immutable after,
so the hot paths (matching, key lookups) do no checking at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vinifera.errors import SchemaError, brief
from vinifera.matching import satisfies
from vinifera.schema import Schema

__all__ = ["Event", "Subscription"]


def _frozen(self: object, name: str, value: object) -> None:
    raise AttributeError(f"{type(self).__name__} is immutable")


class Subscription:
    """An immutable conjunction of closed ranges over some attributes.

    Build with ``Subscription.build``; an equality constraint is lo == hi.
    ``constraints`` is a tuple of (name, lo, hi) in schema order and
    ``key_ranges`` maps each constrained name to its identifier interval
    (key(lo), key(hi)); both are shared, treat them as read-only.
    """

    __slots__ = ("constraints", "attributes", "key_ranges", "_ranges", "_hash")

    constraints: tuple[tuple[str, Any, Any], ...]
    attributes: tuple[str, ...]
    key_ranges: dict[str, tuple[int, int]]

    __setattr__ = _frozen
    __delattr__ = _frozen

    def __init__(self) -> None:
        raise TypeError("use Subscription.build(schema, constraints)")

    @classmethod
    def build(cls, schema: Schema, constraints: Mapping[str, tuple[Any, Any]]) -> Subscription:
        """Validate ``{name: (lo, hi)}`` against ``schema``.

        Raises SchemaError for unknown attributes, values the attribute
        refuses, inverted ranges and empty subscriptions.
        """
        if not isinstance(constraints, Mapping):
            raise SchemaError(
                f"constraints must be a mapping name -> (lo, hi), got {type(constraints).__name__}"
            )
        if not constraints:
            raise SchemaError("a subscription needs at least one constraint")
        index = schema.index
        items = []
        for name, pair in constraints.items():
            attr = schema.attribute(name)
            if not isinstance(pair, tuple | list) or len(pair) != 2:
                raise SchemaError(f"range for {name} must be a pair (lo, hi), got {brief(pair)}")
            lo = attr.check(pair[0], what="lower bound")
            hi = attr.check(pair[1], what="upper bound")
            if lo > hi:
                raise SchemaError(f"inverted range for {name}: [{lo!r}, {hi!r}]")
            items.append((index[name], name, lo, hi, attr.key(lo), attr.key(hi)))
        items.sort(key=lambda t: t[0])
        return cls._make(
            tuple((n, lo, hi) for _, n, lo, hi, _, _ in items),
            {n: (klo, khi) for _, n, _, _, klo, khi in items},
        )

    @classmethod
    def _make(
        cls,
        constraints: tuple[tuple[str, Any, Any], ...],
        key_ranges: dict[str, tuple[int, int]],
    ) -> Subscription:
        s = object.__new__(cls)
        init = object.__setattr__
        init(s, "constraints", constraints)
        init(s, "attributes", tuple(c[0] for c in constraints))
        init(s, "key_ranges", key_ranges)
        init(s, "_ranges", {n: (lo, hi) for n, lo, hi in constraints})
        init(s, "_hash", hash(constraints))
        return s

    def range_of(self, name: str) -> tuple[Any, Any] | None:
        """(lo, hi) in value space, or None when ``name`` is unconstrained."""
        return self._ranges.get(name)

    def key_range(self, name: str) -> tuple[int, int] | None:
        """(key(lo), key(hi)) on the ring, or None when unconstrained."""
        return self.key_ranges.get(name)

    def matches(self, values: Mapping[str, Any]) -> bool:
        """Whether schema-checked ``values`` satisfy every constraint.

        An attribute the subscription constrains but ``values`` lacks fails.
        """
        return satisfies(self.constraints, values if type(values) is dict else dict(values))

    def to_plain(self) -> list[list[Any]]:
        """[[name, lo, hi], ...]: msgpack/JSON friendly."""
        return [[n, lo, hi] for n, lo, hi in self.constraints]

    @classmethod
    def from_plain(cls, schema: Schema, data: Any) -> Subscription:
        """Inverse of to_plain; validates everything (data may be untrusted)."""
        if not isinstance(data, list | tuple):
            raise SchemaError(f"subscription must be a list of [name, lo, hi], got {brief(data)}")
        constraints: dict[str, tuple[Any, Any]] = {}
        for item in data:
            if not isinstance(item, list | tuple) or len(item) != 3:
                raise SchemaError(f"constraint must be [name, lo, hi], got {brief(item)}")
            name, lo, hi = item
            if not isinstance(name, str):
                raise SchemaError(f"attribute name must be a string, got {brief(name)}")
            if name in constraints:
                raise SchemaError(f"duplicate constraint on {name!r}")
            constraints[name] = (lo, hi)
        return cls.build(schema, constraints)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Subscription):
            return NotImplemented
        return self.constraints == other.constraints

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        from vinifera.expr import format_subscription  # expr imports this module

        return format_subscription(self)

    def __repr__(self) -> str:
        return f"Subscription({str(self)!r})"

    def __reduce__(self):
        return (Subscription._make, (self.constraints, self.key_ranges))


class Event:
    """Immutable values for a non-empty subset of the schema's attributes.

    ``values`` is a dict name -> value and ``items`` a tuple of (name, value),
    both in schema order; treat them as read-only.
    """

    __slots__ = ("values", "items", "seal", "born", "_keys", "_hash")

    values: dict[str, Any]
    items: tuple[tuple[str, Any], ...]
    # The publisher's signature, opaque here (daemon/signing.py: its public
    # key and an Ed25519 signature of the values), or None. Not part of the
    # event's identity: equality and hash are the values'.
    seal: bytes | None
    # When the publisher published it (its wall clock, seconds), or None:
    # what a subscriber measures delivery latency from (the daemon's metrics).
    born: float | None

    __setattr__ = _frozen
    __delattr__ = _frozen

    def __init__(self) -> None:
        raise TypeError("use Event.build(schema, values)")

    @classmethod
    def build(cls, schema: Schema, values: Mapping[str, Any]) -> Event:
        """Validate ``{name: value}`` against ``schema``."""
        if type(values) is not dict and not isinstance(values, Mapping):
            raise SchemaError(
                f"event values must be a mapping name -> value, got {type(values).__name__}"
            )
        if not values:
            raise SchemaError("an event needs at least one attribute value")
        return cls._checked(schema, values)

    @classmethod
    def _checked(cls, schema: Schema, values: Mapping[str, Any]) -> Event:
        """The event of a non-empty mapping, every value validated (every
        event a node receives comes through here: kept lean)."""
        index = schema.index
        rows = []
        for name, value in values.items():
            attr = schema.attribute(name)
            v = attr.check(value)
            rows.append((index[name], name, v, attr.key(v)))
        rows.sort()  # schema order: the indices differ, so only they are compared
        return cls._make(tuple([(n, v) for _, n, v, _ in rows]), {n: k for _, n, _, k in rows})

    @classmethod
    def _make(cls, items: tuple[tuple[str, Any], ...], keys: dict[str, int]) -> Event:
        e = object.__new__(cls)
        init = object.__setattr__
        init(e, "items", items)
        init(e, "values", dict(items))
        init(e, "_keys", keys)
        init(e, "_hash", hash(items))
        init(e, "seal", None)
        init(e, "born", None)
        return e

    def carrying(self, seal: bytes | None, born: float | None) -> Event:
        """The same values, carrying `seal` and `born`."""
        e = Event._make(self.items, self._keys)
        object.__setattr__(e, "seal", seal)
        object.__setattr__(e, "born", born)
        return e

    def sealed(self, seal: bytes | None) -> Event:
        """The same values (and birth time), carrying `seal`."""
        return self.carrying(seal, self.born)

    def keys(self) -> dict[str, int]:
        """name -> ring key of the value (precomputed; read-only)."""
        return self._keys

    def to_plain(self) -> list[list[Any]]:
        """[[name, value], ...]: msgpack/JSON friendly."""
        return [[n, v] for n, v in self.items]

    @classmethod
    def from_plain(cls, schema: Schema, data: Any) -> Event:
        """Inverse of to_plain; validates everything (data may be untrusted)."""
        if not isinstance(data, (list, tuple)):
            raise SchemaError(f"event must be a list of [name, value], got {brief(data)}")
        values: dict[str, Any] = {}
        for item in data:
            if not isinstance(item, (list, tuple)) or len(item) != 2:
                raise SchemaError(f"event value must be [name, value], got {brief(item)}")
            name, value = item
            if not isinstance(name, str):
                raise SchemaError(f"attribute name must be a string, got {brief(name)}")
            if name in values:
                raise SchemaError(f"duplicate value for {name!r}")
            values[name] = value
        if not values:
            raise SchemaError("an event needs at least one attribute value")
        return cls._checked(schema, values)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Event):
            return NotImplemented
        return self.items == other.items

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={v!r}" for n, v in self.items)
        return f"Event({inner})"

    def __reduce__(self):
        if self.seal is not None or self.born is not None:
            return (_carrying_event, (self.items, self._keys, self.seal, self.born))
        return (Event._make, (self.items, self._keys))


def _carrying_event(items, keys, seal, born) -> Event:
    return Event._make(items, keys).carrying(seal, born)
