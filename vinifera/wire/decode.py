"""Datagrams from the network to messages: the one untrusted entry point
(`Decoder.decode_datagram_untrusted`) and the field validators behind it.
Anything malformed raises WireError, and nothing else does."""

from __future__ import annotations

import hmac
import math
import struct
from collections.abc import Callable

import msgpack

from vinifera.errors import SchemaError, brief
from vinifera.protocol import messages as m
from vinifera.protocol.config import MAX_COVERED
from vinifera.protocol.content.cover import TOKEN_BYTES
from vinifera.protocol.content.filters import Filter
from vinifera.protocol.profile import Profile
from vinifera.ranges import IntervalSet
from vinifera.ring import RING_MAX
from vinifera.schema import Schema
from vinifera.subscription import Event, Subscription
from vinifera.wire.addresses import format_address, parse_address
from vinifera.wire.encode import SEAL_SIZE, TOKEN_FORMAT, _pack
from vinifera.wire.fragments import (
    KIND_FRAGMENT,
    MAX_CHUNK,
    MAX_FRAGMENTS,
    MSG_ID_LIMIT,
    Fragment,
)
from vinifera.wire.frames import (
    DIGEST_MAX,
    EID_LIMIT,
    KIND_CHALLENGE,
    KIND_HELLO,
    KINDS,
    MAC_SIZE,
    MAX_AGE,
    MAX_CLOCK,
    MAX_CONTENT_ENTRIES,
    MAX_DATAGRAM,
    MAX_DEPTH,
    MAX_FILTERS,
    MAX_GOSSIP_ENTRIES,
    MAX_HANDOVER_ROWS,
    MAX_HOPS,
    MAX_INTERVALS,
    MAX_LOAD,
    MAX_STRING,
    SEQ_LIMIT,
    U64,
    WIRE_VERSION,
    Challenge,
    Framed,
    Header,
    Hello,
    WireError,
)
from vinifera.wire.netkey import NetworkKey

_UNPACK_LIMITS = {
    "use_list": False,
    "raw": False,
    "strict_map_key": True,
    "max_bin_len": MAX_CHUNK,  # a fragment's chunk or a signed event's seal
    "max_ext_len": 0,
    "max_map_len": 0,
    "max_str_len": MAX_STRING,
    "max_array_len": MAX_CONTENT_ENTRIES,
}


def _fail(detail: str) -> WireError:
    return WireError("field", detail)


def _int(x, lo: int, hi: int, what: str) -> int:
    if type(x) is not int or not lo <= x <= hi:
        raise _fail(f"{what} must be an integer in [{lo}, {hi}], got {brief(x)}")
    return x


def _float(x, lo: float, hi: float, what: str) -> float:
    if type(x) is int:
        x = float(x)
    elif type(x) is not float or x != x or x in (math.inf, -math.inf):
        raise _fail(f"{what} must be a finite number, got {brief(x)}")
    if not lo <= x <= hi:
        raise _fail(f"{what} out of range [{lo}, {hi}]: {x!r}")
    return x


def _array(x, max_len: int, what: str, exact: int | None = None) -> tuple:
    if type(x) is not tuple:
        raise _fail(f"{what} must be an array, got {type(x).__name__}")
    if len(x) > max_len or (exact is not None and len(x) != exact):
        raise _fail(f"{what} has {len(x)} items")
    return x


# Addresses already found valid: a peer's address arrives in every message.
_VALID_ADDRESSES: dict[str, None] = {}
_MAX_REMEMBERED_ADDRESSES = 4096


def _address(x) -> str:
    if type(x) is not str:  # first: x may be unhashable (an empty map)
        raise _fail(f"address must be a string, got {brief(x)}")
    if x in _VALID_ADDRESSES:
        return x
    try:
        host, port = parse_address(x)
    except ValueError as err:
        raise _fail(str(err)) from None
    if format_address(host, port) != x:
        raise _fail(f"address {x!r} is not in canonical form")
    if len(_VALID_ADDRESSES) >= _MAX_REMEMBERED_ADDRESSES:
        _VALID_ADDRESSES.clear()
    _VALID_ADDRESSES[x] = None
    return x


def _ring(x, what: str) -> int:
    return _int(x, 0, RING_MAX, what)


def _attr(x, schema: Schema) -> str:
    if type(x) is not str or x not in schema:
        raise _fail(f"unknown attribute {brief(x)}")
    return x


def _intervals(x) -> tuple:
    out = []
    for iv in _array(x, MAX_INTERVALS, "ranges"):
        lo, hi = _array(iv, 2, "interval", exact=2)
        lo, hi = _ring(lo, "interval bound"), _ring(hi, "interval bound")
        if lo > hi:
            raise _fail(f"inverted interval [{lo}, {hi}]")
        out.append((lo, hi))
    if not out:
        raise _fail("empty ranges")
    return tuple(out)


# Profiles already decoded: each of at most 512 bytes encoded (a few
# dozen to a few hundred with a subscription), at most 1,024 of them and
# 128 KiB of encodings in all, then forgotten at once. What a stranger can
# make us keep grows with the encodings' size: a few MiB at most.
_MAX_REMEMBERED_PROFILE_BYTES = 512
_MAX_REMEMBERED_PROFILES = 1024
_MAX_REMEMBERED_BYTES = 128 * 1024


class _Reader:
    """Field validators bound to one schema (subscriptions and events are
    checked against it)."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.n_attrs = len(schema)
        # A node hears the same few profiles again and again (every message
        # carries its sender's, gossip a dozen more) and validating one with
        # a subscription costs ten times re-encoding it. Keyed by the
        # encoding, not the value: Python's 1 == 1.0 == True would let an
        # invalid field match a valid one. Only valid profiles are kept.
        self._profiles: dict[bytes, Profile] = {}
        self._profile_bytes = 0  # their keys' length in all

    def sub(self, x) -> Subscription | None:
        if x is None:
            return None
        _array(x, self.n_attrs, "subscription")
        try:
            return Subscription.from_plain(self.schema, x)
        except SchemaError as err:
            raise _fail(f"subscription: {err}") from None

    def required_sub(self, x) -> Subscription:
        sub = self.sub(x)
        if sub is None:
            raise _fail("subscription missing")
        return sub

    def event(self, x) -> Event:
        _array(x, self.n_attrs, "event")
        try:
            return Event.from_plain(self.schema, x)
        except SchemaError as err:
            raise _fail(f"event: {err}") from None

    def profile(self, x) -> Profile:
        key = _pack(x)
        known = self._profiles.get(key)
        if known is None:
            known = self._new_profile(x)
            if len(key) <= _MAX_REMEMBERED_PROFILE_BYTES:
                self._profile_bytes += len(key)
                if (
                    len(self._profiles) >= _MAX_REMEMBERED_PROFILES
                    or self._profile_bytes > _MAX_REMEMBERED_BYTES
                ):
                    self._profiles.clear()
                    self._profile_bytes = len(key)
                self._profiles[key] = known
        return known

    def _new_profile(self, x) -> Profile:
        address, ident, seq, sub = _array(x, 4, "profile", exact=4)
        return Profile(
            _address(address),
            _ring(ident, "identifier"),
            self.sub(sub),
            _int(seq, 0, SEQ_LIMIT, "seq"),
        )

    def gossip(self, fields, cls):
        (raw,) = fields
        profiles, ages = self.entries(raw)
        return lambda prof: cls(prof, profiles, ages)

    def entries(self, raw) -> tuple[tuple, tuple]:
        """A gossip sample: (profiles, ages)."""
        profiles, ages = [], []
        for pair in _array(raw, MAX_GOSSIP_ENTRIES, "entries"):
            p, age = _array(pair, 2, "entry", exact=2)
            profiles.append(self.profile(p))
            ages.append(_float(age, 0.0, MAX_AGE, "age"))
        return tuple(profiles), tuple(ages)


def _header(x) -> Header:
    cookie, offer, sent, seq = _array(x, 4, "header", exact=4)
    return Header(
        _int(cookie, 0, U64, "cookie"),
        _int(offer, 0, U64, "offer"),
        _int(sent, 0, U64, "sent"),
        _int(seq, 0, U64, "seq"),
    )


def _arity(n: int):
    def check(fields: tuple) -> tuple:
        if len(fields) != n:
            raise _fail(f"expected {n} fields, got {len(fields)}")
        return fields

    return check


def _read_filter(r: _Reader, x) -> Filter:
    depth, keys, box = _array(x, 3, "filter", exact=3)
    depth = _int(depth, 0, MAX_HOPS, "filter depth")
    keys = IntervalSet.from_intervals(_intervals(keys))
    pairs = []
    for pair in _array(box, r.n_attrs, "filter box"):
        attr, ivs = _array(pair, 2, "box constraint", exact=2)
        pairs.append((_attr(attr, r.schema), IntervalSet.from_intervals(_intervals(ivs))))
    names = [a for a, _ in pairs]
    if names != sorted(set(names)):
        raise _fail("box attributes must be sorted and distinct")
    return Filter(keys, tuple(pairs), depth)


def _read_filters(r: _Reader, x) -> tuple:
    return tuple(_read_filter(r, f) for f in _array(x, MAX_FILTERS, "filters"))


def _read_attrs(r: _Reader, x) -> tuple:
    attrs = tuple(_attr(a, r.schema) for a in _array(x, r.n_attrs, "attributes"))
    if len(set(attrs)) != len(attrs):
        raise _fail("duplicate attribute")
    return attrs


def _read_install(r: _Reader, f: tuple):
    attr, raw, fresh, sent = _arity(4)(f)
    attr = _attr(attr, r.schema)
    filters = _read_filters(r, raw)
    if type(fresh) is not bool:
        raise _fail("fresh must be a boolean")
    sent = _float(sent, 0.0, MAX_CLOCK, "sent")
    return lambda p: m.Install(p, attr, filters, fresh, sent)


def _read_refresh(r: _Reader, f: tuple):
    (raw,) = _arity(1)(f)
    digests = []
    for pair in _array(raw, r.n_attrs, "digests"):
        attr, fp = _array(pair, 2, "digest", exact=2)
        digests.append((_attr(attr, r.schema), _int(fp, 0, DIGEST_MAX, "digest")))
    if len({a for a, _ in digests}) != len(digests):
        raise _fail("duplicate attribute")
    return lambda p: m.Refresh(p, tuple(digests))


def _read_row_request(r: _Reader, f: tuple):
    (raw,) = _arity(1)(f)
    attrs = _read_attrs(r, raw)
    return lambda p: m.RowRequest(p, attrs)


def _read_withdraw(r: _Reader, f: tuple):
    raw, sent = _arity(2)(f)
    attrs = _read_attrs(r, raw)
    sent = _float(sent, 0.0, MAX_CLOCK, "sent")
    return lambda p: m.Withdraw(p, attrs, sent)


def _read_extras(event, extras: tuple):
    """An event copy's optional seal (SEAL_SIZE bytes, or nil before a
    birth time; checked by the daemon's signing policy, not here) and
    birth time (encode._extras_out)."""
    seal = extras[0]
    if seal is not None and (type(seal) is not bytes or len(seal) != SEAL_SIZE):
        raise _fail(f"seal must be {SEAL_SIZE} bytes")
    born = None
    if len(extras) == 2:
        born = _float(extras[1], 0.0, MAX_CLOCK, "birth time")
    elif seal is None:
        raise _fail("a nil seal without a birth time")
    return event.carrying(seal, born)


def _tokens(x, what: str) -> tuple:
    """A covered list: at most MAX_COVERED tokens (encode._tokens_out)."""
    if type(x) is not bytes or len(x) % TOKEN_BYTES or len(x) > TOKEN_BYTES * MAX_COVERED:
        raise _fail(
            f"{what} must be at most {MAX_COVERED} {TOKEN_BYTES}-byte tokens, got {brief(x)}"
        )
    return struct.unpack(f">{len(x) // TOKEN_BYTES}{TOKEN_FORMAT}", x)


def _read_event(r: _Reader, f: tuple):
    extras = f[8:]
    if len(extras) > 2:
        raise _fail(f"{len(f)} fields for an event copy")
    eid, values, attr, key, hops, up, covered, pushed = _arity(8)(f[:8])
    eid = _int(eid, 0, EID_LIMIT - 1, "event id")
    event = r.event(values)
    if extras:
        event = _read_extras(event, extras)
    attr = _attr(attr, r.schema)
    if attr not in event.values:
        raise _fail(f"event copy for {attr!r} but the event has no value for it")
    key = _ring(key, "key")
    hops = _int(hops, 0, MAX_HOPS, "hops")
    if type(up) is not bool:
        raise _fail("up must be a boolean")
    covered, pushed = _tokens(covered, "covered"), _tokens(pushed, "pushed")
    return lambda p: m.EventMessage(p, eid, event, attr, key, hops, up, covered, pushed)


def _read_push(r: _Reader, f: tuple):
    extras = f[5:]
    if len(extras) > 2:
        raise _fail(f"{len(f)} fields for a push")
    eid, values, hops, covered, pushed = _arity(5)(f[:5])
    eid = _int(eid, 0, EID_LIMIT - 1, "event id")
    event = r.event(values)
    if extras:
        event = _read_extras(event, extras)
    hops = _int(hops, 0, MAX_HOPS, "hops")
    covered, pushed = _tokens(covered, "covered"), _tokens(pushed, "pushed")
    return lambda p: m.EventPush(p, eid, event, hops, covered, pushed)


def _read_have(r: _Reader, f: tuple):
    (eid,) = _arity(1)(f)
    eid = _int(eid, 0, EID_LIMIT - 1, "event id")
    return lambda p: m.Have(p, eid)


def _read_load(r: _Reader, f: tuple):
    load, split, forwarding = _arity(3)(f)
    load = _float(load, 0.0, MAX_LOAD, "load")
    split = None if split is None else _ring(split, "split")
    forwarding = _float(forwarding, 0.0, MAX_LOAD, "forwarding")
    return lambda p: m.LoadReport(p, load, split, forwarding)


def _read_handover_request(r: _Reader, f: tuple):
    (new,) = _arity(1)(f)
    new = _ring(new, "new identifier")
    return lambda p: m.HandoverRequest(p, new)


def _read_handover(r: _Reader, f: tuple):
    new, raw = _arity(2)(f)
    new = _ring(new, "new identifier")
    rows = []
    for e in _array(raw, MAX_HANDOVER_ROWS, "rows"):
        attr, nb, ttl, filters = _array(e, 4, "handover row", exact=4)
        attr, nb = _attr(attr, r.schema), _address(nb)
        ttl = _float(ttl, 0.0, MAX_AGE, "ttl")
        rows.append(m.HandoverRow(attr, nb, ttl, _read_filters(r, filters)))
    return lambda p: m.Handover(p, new, tuple(rows))


def _read_bare(cls):
    def read(r: _Reader, f: tuple):
        _arity(0)(f)
        return cls

    return read


def _read_gossip(cls):
    def read(r: _Reader, f: tuple):
        return r.gossip(_arity(1)(f), cls)

    return read


def _read_tman(cls):
    """A T-Man message: its sample, then the positions of the sender's own
    links in it (no more of them than the sample has entries, each inside
    it; a repeated one only repeats: the receiver keeps a set)."""

    def read(r: _Reader, f: tuple):
        raw, marks = _arity(2)(f)
        profiles, ages = r.entries(raw)
        n = len(profiles)
        links = tuple(_int(i, 0, n - 1, "link position") for i in _array(marks, n, "links"))
        return lambda prof: cls(prof, profiles, ages, links)

    return read


_READERS: dict[int, Callable] = {
    KINDS[m.Join]: _read_bare(m.Join),
    KINDS[m.Ping]: _read_bare(m.Ping),
    KINDS[m.Pong]: _read_bare(m.Pong),
    KINDS[m.Leave]: _read_bare(m.Leave),
    **{KINDS[c]: _read_gossip(c) for c in (m.JoinReply, m.Shuffle, m.ShuffleReply)},
    **{KINDS[c]: _read_tman(c) for c in (m.TmanRequest, m.TmanReply)},
    KINDS[m.Install]: _read_install,
    KINDS[m.Refresh]: _read_refresh,
    KINDS[m.Withdraw]: _read_withdraw,
    KINDS[m.RowRequest]: _read_row_request,
    KINDS[m.EventMessage]: _read_event,
    KINDS[m.EventPush]: _read_push,
    KINDS[m.Have]: _read_have,
    KINDS[m.LoadReport]: _read_load,
    KINDS[m.HandoverRequest]: _read_handover_request,
    KINDS[m.Handover]: _read_handover,
}


# The bytes that can open a msgpack array (fixarray, array 16, array 32).
_ARRAY_OPENERS = bytes([*range(0x90, 0xA0), 0xDC, 0xDD])


def _too_deep(top: tuple, data: bytes, limit: int) -> bool:
    """Whether arrays nest more than `limit` levels below and including
    `top`, decoded from `data`. Iterative: the input may nest 1,023 deep."""
    # Every array was opened by one of these bytes (others may be payload):
    # with no more of them than `limit`, no walk is needed (most copies).
    if len(data) - len(data.translate(None, _ARRAY_OPENERS)) <= limit:
        return False
    level = [top]
    for _ in range(limit):
        level = [y for x in level for y in x if type(y) is tuple]
        if not level:
            return False
    return True


def _fragment(f: tuple) -> Fragment:
    kind, items, msg_id, index, count, chunk = _arity(6)(f)
    if type(kind) is not int or kind not in _READERS:
        raise _fail(f"fragment of unknown kind {brief(kind, 20)}")
    items = _int(items, 1, 12, "fragment items")
    msg_id = _int(msg_id, 0, MSG_ID_LIMIT - 1, "message id")
    count = _int(count, 2, MAX_FRAGMENTS, "fragment count")
    index = _int(index, 0, count - 1, "fragment index")
    if type(chunk) is not bytes or not 1 <= len(chunk) <= MAX_CHUNK:
        raise _fail("fragment chunk must be 1 to MAX_CHUNK bytes")
    return Fragment(kind, items, msg_id, index, count, chunk)


class Decoder:
    """Decodes datagrams for one swarm (its schema and optional key)."""

    def __init__(self, schema: Schema, key: NetworkKey | None = None, local: str = "") -> None:
        self.key = key
        # Our own address: keyed datagrams are tagged for their receiver.
        self.local = local
        self._reader = _Reader(schema)

    def decode_untrusted(self, data: bytes) -> m.Message | Hello | Challenge:
        """Bytes from the network to a message (or a handshake), or WireError."""
        d = self.decode_datagram_untrusted(data)
        return d.message if type(d) is Framed else d

    def decode_datagram_untrusted(self, data: bytes) -> Framed | Hello | Challenge:
        """Bytes from the network to a framed message or a handshake, or
        WireError. Never anything else."""
        if type(data) is not bytes:
            raise WireError("size", f"expected bytes, got {type(data).__name__}")
        if not 1 <= len(data) <= MAX_DATAGRAM:
            raise WireError("size", f"{len(data)} bytes")
        if self.key is not None:
            if len(data) <= MAC_SIZE:
                raise WireError("mac", "too short for a tag")
            tag, data = data[:MAC_SIZE], data[MAC_SIZE:]
            if not hmac.compare_digest(tag, self.key.tag(data, self.local)):
                raise WireError("mac", "tag does not verify")
        try:
            top = msgpack.unpackb(data, **_UNPACK_LIMITS)
        except ValueError as err:  # msgpack's errors are all ValueErrors
            raise WireError("msgpack", str(err)[:80]) from None
        if type(top) is not tuple or len(top) < 3:
            raise WireError("msgpack", "not a message array")
        if _too_deep(top, data, MAX_DEPTH):
            raise WireError("depth", f"arrays nested more than {MAX_DEPTH} deep")
        version, kind = top[0], top[1]
        if version != WIRE_VERSION or type(version) is not int:
            raise WireError("version", f"unsupported wire version {brief(version, 20)}")
        if kind in (KIND_HELLO, KIND_CHALLENGE) and type(kind) is int:
            if len(top) != 3:
                raise WireError("field", f"handshake with {len(top)} items")
            value = _int(top[2], 1, U64, "cookie")
            return Hello(value) if kind == KIND_HELLO else Challenge(value)
        if kind == KIND_FRAGMENT and type(kind) is int:
            return Framed(_header(top[2]), _fragment(top[3:]))
        reader = _READERS.get(kind) if type(kind) is int else None
        if reader is None:
            raise WireError("kind", f"unknown message kind {brief(kind, 20)}")
        if len(top) < 4:
            raise WireError("field", "no profile")
        header = _header(top[2])
        profile = self._reader.profile(top[3])
        build = reader(self._reader, top[4:])
        return Framed(header, build(profile))

    def decode_body_untrusted(self, kind: int, items: int, data: bytes) -> m.Message:
        """A message from a body put together from fragments (their header
        and tag were checked one by one), or WireError."""
        if not 1 <= items <= 12 or len(data) > MAX_DATAGRAM:
            raise WireError("field", "reassembled body out of bounds")
        try:
            top = msgpack.unpackb(bytes((0x90 + items,)) + data, **_UNPACK_LIMITS)
        except ValueError as err:
            raise WireError("msgpack", str(err)[:80]) from None
        if _too_deep(top, data, MAX_DEPTH - 1):
            raise WireError("depth", f"arrays nested more than {MAX_DEPTH} deep")
        reader = _READERS.get(kind)
        if reader is None:
            raise WireError("kind", f"unknown message kind {brief(kind, 20)}")
        profile = self._reader.profile(top[0])
        return reader(self._reader, top[1:])(profile)
