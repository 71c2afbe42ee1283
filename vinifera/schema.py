"""Typed attributes, their order-preserving hash onto the ring, and schemas.

A schema names the attributes that subscriptions constrain and events carry.
Every attribute's domain is mapped onto the identifier ring by a monotone
hash (``Attribute.key``) so that a range of values is an arc of the ring and
the rendezvous node of a value is the successor of its key.
"""

from __future__ import annotations

import enum
import math
import operator
import re
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vinifera.errors import SchemaError, brief
from vinifera.ring import RING_MAX

__all__ = ["MAX_STRING", "AttrType", "Attribute", "Schema"]

# The greatest string the string hash distinguishes: U+10FFFF is the largest
# code point and 8 of them fill the 8 bytes the hash reads. Strings above it
# are outside the string domain so that ("", MAX_STRING) really is all of it.
MAX_STRING = "\U0010ffff" * 8

# Integer domains are bounded to signed 64 bits so every value fits the wire
# codec (msgpack) and TOML.
INT_MIN = -(1 << 63)
INT_MAX = (1 << 63) - 1

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RESERVED = frozenset({"and", "in"})

# PMAX: big-endian value of the first 8 UTF-8 bytes of MAX_STRING.
_PMAX = int.from_bytes(MAX_STRING.encode("utf-8")[:8], "big")

_K_INT, _K_FLOAT, _K_STRING = 0, 1, 2


class AttrType(enum.Enum):
    INT = "int"
    FLOAT = "float"
    STRING = "string"


def _fmt_bound(v: Any) -> str:
    return repr(v) if isinstance(v, str) else str(v)


@dataclass(frozen=True, slots=True)
class Attribute:
    """One typed attribute with its domain.

    Numeric attributes have a closed domain [min, max]; string attributes
    have none (min and max are None) and range over ["", MAX_STRING].

    ``key`` is the order-preserving hash onto [0, RING_MAX]:

    - INT: ``(v - min) * RING_MAX // (max - min)`` in exact integer
      arithmetic, so min -> 0, max -> RING_MAX and it is monotone.
    - FLOAT: ``int((v - min) / (max - min) * RING_MAX)`` clamped to
      [0, RING_MAX]. Every IEEE-754 operation here (subtracting a constant,
      dividing and multiplying by a positive constant, truncating) is
      monotone non-decreasing, hence so is their composition; min -> 0 and
      max -> RING_MAX because x / x == 1 exactly. When max - min overflows
      to infinity both operands are halved first (still monotone).
    - STRING: the first 8 bytes of the UTF-8 encoding, right-padded with
      zero bytes and read big-endian as p; ``min(p, PMAX) * RING_MAX //
      PMAX`` where PMAX is p of MAX_STRING. Python orders str by code point,
      which is the byte order of UTF-8, and truncating/padding to 8 bytes
      keeps that order (non-strictly), so "" -> 0, MAX_STRING -> RING_MAX
      and it is monotone.

    A domain of one value (min == max) is refused.
    """

    name: str
    type: AttrType
    min: Any = None
    max: Any = None
    # Precomputed for key(): kind, lower bound, span (and halving flag).
    _kind: int = field(default=0, init=False, repr=False, compare=False)
    _span: Any = field(default=0, init=False, repr=False, compare=False)
    _halved: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        name = self.name
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise SchemaError(
                f"invalid attribute name {name!r}: use letters, digits and _ "
                "and do not start with a digit"
            )
        if name.lower() in _RESERVED:
            raise SchemaError(f"invalid attribute name {name!r}: it is a keyword")
        if not isinstance(self.type, AttrType):
            raise SchemaError(f"attribute {name!r}: type must be an AttrType, not {self.type!r}")
        lo, hi = self.min, self.max
        setattr_ = object.__setattr__
        if self.type is AttrType.STRING:
            if lo is not None or hi is not None:
                raise SchemaError(f"attribute {name!r}: string attributes take no min/max")
            setattr_(self, "_kind", _K_STRING)
            return
        if lo is None or hi is None:
            raise SchemaError(f"attribute {name!r}: numeric attributes need both min and max")
        if self.type is AttrType.INT:
            for b in (lo, hi):
                if type(b) is not int:
                    raise SchemaError(
                        f"attribute {name!r}: bounds of an int attribute must be integers, "
                        f"got {b!r}"
                    )
                if not INT_MIN <= b <= INT_MAX:
                    raise SchemaError(
                        f"attribute {name!r}: bound {b} does not fit in a signed 64-bit integer"
                    )
            setattr_(self, "_kind", _K_INT)
        else:
            conv = []
            for b in (lo, hi):
                if isinstance(b, bool) or not isinstance(b, int | float):
                    raise SchemaError(
                        f"attribute {name!r}: bounds of a float attribute must be numbers, "
                        f"got {b!r}"
                    )
                try:
                    f = float(b)
                except OverflowError:
                    f = math.inf
                if not math.isfinite(f):
                    raise SchemaError(f"attribute {name!r}: bounds must be finite, got {b!r}")
                conv.append(f)
            lo, hi = conv
            setattr_(self, "min", lo)
            setattr_(self, "max", hi)
            setattr_(self, "_kind", _K_FLOAT)
        if lo > hi:
            raise SchemaError(f"attribute {name!r}: inverted bounds min={lo} > max={hi}")
        if lo == hi:
            # One value: every event and subscription would hash to one key,
            # so one node would be the rendezvous of the whole attribute.
            raise SchemaError(
                f"attribute {name!r}: empty domain min = max = {lo}; widen it or drop the attribute"
            )
        span = hi - lo
        if self._kind == _K_FLOAT and math.isinf(span):
            setattr_(self, "_halved", True)
            span = hi / 2 - lo / 2
        setattr_(self, "_span", span)

    def check(self, value: Any, *, what: str = "value") -> Any:
        """Return ``value`` normalized for this attribute or raise SchemaError.

        INT takes ints (and integral floats) and returns int; FLOAT takes
        ints and floats and returns float; STRING takes str. Booleans,
        NaN, infinities and values outside the domain are refused.
        """
        kind = self._kind
        if kind == _K_FLOAT:
            tv = type(value)
            if tv is float:
                v = value
            elif tv is bool or not (isinstance(value, int | float) or hasattr(tv, "__index__")):
                raise SchemaError(f"{what} for {self.name} must be a number, got {brief(value)}")
            else:
                try:
                    v = float(value if isinstance(value, int | float) else operator.index(value))
                except OverflowError:
                    raise SchemaError(
                        f"{what} for {self.name} is outside the domain "
                        f"[{self.min}, {self.max}]: {value}"
                    ) from None
            if v != v:
                raise SchemaError(f"{what} for {self.name}: NaN is not allowed")
            if v in (math.inf, -math.inf):
                raise SchemaError(f"{what} for {self.name}: infinities are not allowed")
            if not self.min <= v <= self.max:
                raise SchemaError(
                    f"{what} {v!r} for {self.name} is outside the domain [{self.min}, {self.max}]"
                )
            return v
        if kind == _K_INT:
            if type(value) is int:
                v = value
            elif isinstance(value, float):
                if value != value:
                    raise SchemaError(f"{what} for {self.name}: NaN is not allowed")
                if value in (math.inf, -math.inf):
                    raise SchemaError(f"{what} for {self.name}: infinities are not allowed")
                if not value.is_integer():
                    raise SchemaError(
                        f"{what} for {self.name} must be an integer, got {brief(value)}"
                    )
                v = int(value)
            elif isinstance(value, bool) or not hasattr(type(value), "__index__"):
                raise SchemaError(f"{what} for {self.name} must be an integer, got {brief(value)}")
            else:
                v = operator.index(value)
            if not self.min <= v <= self.max:
                raise SchemaError(
                    f"{what} {v} for {self.name} is outside the domain [{self.min}, {self.max}]"
                )
            return v
        if type(value) is not str:
            if not isinstance(value, str):
                raise SchemaError(f"{what} for {self.name} must be a string, got {brief(value)}")
            value = "" + value  # a plain str, whatever the subclass does
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise SchemaError(
                f"{what} for {self.name} is not valid Unicode (lone surrogate)"
            ) from None
        if value > MAX_STRING:
            raise SchemaError(f"{what} for {self.name} is above the greatest string MAX_STRING")
        return value

    def key(self, value: Any) -> int:
        """The ring key of a checked value (see the class docstring)."""
        kind = self._kind
        if kind == _K_FLOAT:
            span = self._span
            if self._halved:
                r = int((value / 2 - self.min / 2) / span * 18446744073709551616.0)
            else:
                r = int((value - self.min) / span * 18446744073709551616.0)
            # RING_MAX is not representable as a float; 2**64 rounds to it, so
            # the clamp below is exactly "multiply by RING_MAX and clamp".
            if r > RING_MAX:
                return RING_MAX
            return r if r > 0 else 0
        if kind == _K_INT:
            span = self._span
            return (value - self.min) * RING_MAX // span
        p = int.from_bytes(value[:8].encode("utf-8")[:8].ljust(8, b"\0"), "big")
        if p >= _PMAX:
            return RING_MAX
        return p * RING_MAX // _PMAX

    def full_range(self) -> tuple[Any, Any]:
        """The whole domain as (lo, hi) in value space."""
        if self._kind == _K_STRING:
            return ("", MAX_STRING)
        return (self.min, self.max)

    @property
    def is_numeric(self) -> bool:
        return self._kind != _K_STRING

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form: {"type": ..., "min": ..., "max": ...}."""
        d: dict[str, Any] = {"type": self.type.value}
        if self._kind != _K_STRING:
            d["min"] = self.min
            d["max"] = self.max
        return d


_ATTR_KEYS = frozenset({"type", "min", "max"})


class Schema:
    """An ordered, immutable collection of attributes (file order is kept)."""

    __slots__ = ("_attrs", "_by_name", "_index", "_names")

    def __init__(self, attributes: Iterable[Attribute]) -> None:
        attrs = tuple(attributes)
        by_name: dict[str, Attribute] = {}
        for a in attrs:
            if not isinstance(a, Attribute):
                raise SchemaError(f"expected an Attribute, got {a!r}")
            if a.name in by_name:
                raise SchemaError(f"duplicate attribute {a.name!r}")
            by_name[a.name] = a
        if not attrs:
            raise SchemaError("a schema needs at least one attribute")
        self._attrs = attrs
        self._by_name = by_name
        self._names = tuple(by_name)
        self._index = {n: i for i, n in enumerate(self._names)}

    @property
    def attributes(self) -> tuple[Attribute, ...]:
        return self._attrs

    @property
    def names(self) -> tuple[str, ...]:
        return self._names

    @property
    def index(self) -> Mapping[str, int]:
        """Attribute name -> position in schema order (read-only)."""
        return self._index

    def attribute(self, name: str) -> Attribute:
        """The attribute called ``name``; SchemaError listing the known ones if none."""
        try:
            return self._by_name[name]
        except (KeyError, TypeError):
            known = ", ".join(sorted(self._names))
            raise SchemaError(f"unknown attribute {brief(name)} (known: {known})") from None

    def __contains__(self, name: object) -> bool:
        try:
            return name in self._by_name
        except TypeError:
            return False

    def __len__(self) -> int:
        return len(self._attrs)

    def __iter__(self) -> Iterator[Attribute]:
        return iter(self._attrs)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schema):
            return NotImplemented
        return self._attrs == other._attrs

    def __hash__(self) -> int:
        return hash(self._attrs)

    def __repr__(self) -> str:
        return f"Schema({list(self._attrs)!r})"

    # -- construction from data -------------------------------------------

    @classmethod
    def numeric(cls, d: int, lo: float = 0.0, hi: float = 1000.0) -> Schema:
        """The experiment schema: FLOAT attributes a0..a{d-1} over [lo, hi]."""
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            raise SchemaError(f"need at least one attribute, got d={d!r}")
        return cls(Attribute(f"a{i}", AttrType.FLOAT, lo, hi) for i in range(d))

    @classmethod
    def from_dict(cls, data: Any, source: str = "<schema>") -> Schema:
        """Build from ``{"attributes": {name: {"type": ..., "min": ..., "max": ...}}}``.

        The same shape as the TOML file; mapping order is attribute order.
        """
        if not isinstance(data, Mapping):
            raise SchemaError(f"{source}: a schema must be a table, got {type(data).__name__}")
        extra = sorted(str(k) for k in data if k != "attributes")
        if extra:
            raise SchemaError(f"{source}: unknown top-level keys: {', '.join(extra)}")
        table = data.get("attributes")
        if table is None:
            raise SchemaError(f"{source}: missing [attributes] table")
        if not isinstance(table, Mapping):
            raise SchemaError(f"{source}: [attributes] must be a table of attribute tables")
        if not table:
            raise SchemaError(f"{source}: [attributes] is empty: define at least one attribute")
        attrs = []
        for name, spec in table.items():
            where = f"{source}: attribute {name!r}"
            if not isinstance(spec, Mapping):
                raise SchemaError(f"{where}: expected a table like [attributes.{name}]")
            unknown = sorted(str(k) for k in spec if k not in _ATTR_KEYS)
            if unknown:
                raise SchemaError(
                    f"{where}: unknown keys {', '.join(unknown)} (allowed: type, min, max)"
                )
            tname = spec.get("type")
            if tname is None:
                raise SchemaError(f"{where}: missing type (int, float or string)")
            try:
                atype = AttrType(tname)
            except ValueError:
                raise SchemaError(
                    f"{where}: unknown type {tname!r} (use int, float or string)"
                ) from None
            if atype is not AttrType.STRING:
                missing = [k for k in ("min", "max") if k not in spec]
                if missing:
                    raise SchemaError(f"{where}: missing {' and '.join(missing)}")
            try:
                attrs.append(Attribute(name, atype, spec.get("min"), spec.get("max")))
            except SchemaError as e:
                raise SchemaError(f"{source}: {e}") from None
        try:
            return cls(attrs)
        except SchemaError as e:
            raise SchemaError(f"{source}: {e}") from None

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form accepted by from_dict (JSON/msgpack friendly)."""
        return {"attributes": {a.name: a.to_dict() for a in self._attrs}}

    @classmethod
    def from_toml(cls, text: str, source: str = "<schema>") -> Schema:
        """Parse a TOML schema; errors name ``source`` and the attribute."""
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise SchemaError(f"{source}: invalid TOML: {e}") from None
        return cls.from_dict(data, source)

    @classmethod
    def load(cls, path: str | Path) -> Schema:
        """Read a TOML schema file."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise SchemaError(f"{p}: not UTF-8 text: {e}") from None
        return cls.from_toml(text, str(p))

    def to_toml(self) -> str:
        """TOML text that from_toml reads back into an equal schema."""
        out = []
        for a in self._attrs:
            out.append(f"[attributes.{a.name}]")
            out.append(f'type = "{a.type.value}"')
            if a.is_numeric:
                out.append(f"min = {a.min!r}")
                out.append(f"max = {a.max!r}")
            out.append("")
        return "\n".join(out)
