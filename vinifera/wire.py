"""The wire format: protocol messages as msgpack datagrams, and back.

Layout of one datagram (see docs/protocol.md, "Wire format"):

    [MAC (16 bytes, only with a network key)] msgpack([version, kind, profile, *fields])

`decode_untrusted` is the only function that turns bytes from the network
into a message. It checks the size first, then the MAC, then parses with
msgpack's own limits (no maps, no binary, no extension types, bounded
strings and arrays), then validates every field: types exact (a bool is not
an int), integers in range, floats finite, lengths capped, attributes and
values against the schema. Anything wrong raises `WireError` and nothing
else; its `reason` names the check that failed, for the drop counters.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
from collections.abc import Callable
from pathlib import Path

import msgpack

from vinifera.errors import SchemaError, ViniferaError, brief
from vinifera.protocol import messages as m
from vinifera.protocol.content.filters import Filter
from vinifera.protocol.profile import Profile
from vinifera.ranges import IntervalSet
from vinifera.ring import RING_MAX
from vinifera.schema import Schema
from vinifera.subscription import Event, Subscription

WIRE_VERSION = 2  # 2: aggregated CRT rows (Install, Refresh, RowRequest, Withdraw, Handover)
# UDP on IPv4 carries at most 65,507 payload bytes; stay clear of it.
MAX_DATAGRAM = 60_000
MAC_SIZE = 16
# Caps on what one datagram may carry. They bound the work one datagram can
# cause, and sit well above what an honest node sends (view 20, T-Man 24).
MAX_GOSSIP_ENTRIES = 64
MAX_CONTENT_ENTRIES = 2_000  # msgpack's array limit: bounds any container
MAX_FILTERS = 64  # per row (a node keeps at most ContentConfig.max_filters_per_row)
MAX_HANDOVER_ROWS = 512
MAX_INTERVALS = 64
DIGEST_MAX = (1 << 64) - 1
MAX_ADDRESS_LEN = 64
MAX_STRING = 1_024
MAX_AGE = 1e7  # seconds; ages beyond this are nonsense, not old news
MAX_CLOCK = 1e13  # a sender's clock (Unix seconds for daemons), for ordering only
MAX_HOPS = 1_024
MAX_LOAD = 1e9
EID_LIMIT = 1 << 63
SEQ_LIMIT = 1 << 63
# The deepest honest datagram nests arrays 9 deep (a Handover's row's
# filter's box constraint's interval). msgpack accepts 1,023 levels, deep enough to
# exhaust Python's recursion in anything that walks the result (repr, hash,
# comparison), so deeper input is refused before any field is looked at.
MAX_DEPTH = 10

_UNPACK_LIMITS = {
    "use_list": False,
    "raw": False,
    "strict_map_key": True,
    "max_bin_len": 0,
    "max_ext_len": 0,
    "max_map_len": 0,
    "max_str_len": MAX_STRING,
    "max_array_len": MAX_CONTENT_ENTRIES,
}


class WireError(ViniferaError):
    """Bytes from the network that are not a valid message. `reason` is a
    short category (size, mac, msgpack, version, kind, field) for counters."""

    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        super().__init__(f"{reason}: {detail}")

    def __reduce__(self):
        return (type(self), (self.reason, str(self).partition(": ")[2]))


class OversizeError(ViniferaError):
    """A message that cannot be sent in one datagram and cannot be split."""


# ---------------------------------------------------------------- network key


class NetworkKey:
    """A shared secret: every datagram carries a keyed BLAKE2b tag of its
    payload. The file may hold any bytes (16 or more, surrounding whitespace
    ignored); they are hashed into a 32-byte BLAKE2b key."""

    __slots__ = ("_key",)

    MIN_SECRET = 16

    def __init__(self, secret: bytes) -> None:
        secret = secret.strip()
        if len(secret) < self.MIN_SECRET:
            raise ViniferaError(
                f"network key too short: {len(secret)} bytes (need at least {self.MIN_SECRET})"
            )
        self._key = hashlib.blake2b(secret, digest_size=32, person=b"vinifera-netkey").digest()

    @classmethod
    def load(cls, path: str | Path) -> NetworkKey:
        try:
            data = Path(path).read_bytes()
        except OSError as err:
            raise ViniferaError(f"cannot read network key file {path}: {err.strerror}") from None
        try:
            return cls(data)
        except ViniferaError as err:
            raise ViniferaError(f"{path}: {err}") from None

    def tag(self, payload: bytes) -> bytes:
        return hashlib.blake2b(payload, key=self._key, digest_size=MAC_SIZE).digest()

    def __repr__(self) -> str:
        return "NetworkKey(<secret>)"


# ---------------------------------------------------------------- addresses


def parse_address(text: str, allow_any_port: bool = False) -> tuple[str, int]:
    """'host:port' (IPv4) or '[v6]:port' to a (host, port) socket address.
    Only IP literals: a node must never resolve names that peers send it.
    Port 0 ("any free port") only where a socket is bound, with allow_any_port."""
    if not isinstance(text, str) or not 3 <= len(text) <= MAX_ADDRESS_LEN:
        raise ValueError(f"bad address {brief(text, 80)}: expected HOST:PORT")
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit() or len(port_text) > 5:
        raise ValueError(f"bad address {text!r}: expected HOST:PORT")
    port = int(port_text)
    if not (0 if allow_any_port else 1) <= port <= 65535:
        raise ValueError(f"bad address {text!r}: port must be 1-65535")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"bad address {text!r}: host must be an IP address") from None
    return str(ip), port


def format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# ---------------------------------------------------------------- encoding

_KINDS: dict[type, int] = {
    m.Join: 1,
    m.JoinReply: 2,
    m.Shuffle: 3,
    m.ShuffleReply: 4,
    m.TmanRequest: 5,
    m.TmanReply: 6,
    m.Ping: 7,
    m.Pong: 8,
    m.Leave: 9,
    m.Install: 10,
    m.Refresh: 11,
    m.Withdraw: 12,
    m.EventMessage: 13,
    m.LoadReport: 14,
    m.HandoverRequest: 15,
    m.Handover: 16,
    m.EventPush: 17,
    m.RowRequest: 18,
}


def _plain_sub(sub: Subscription | None):
    return None if sub is None else sub.to_plain()


def _profile(p: Profile) -> list:
    return [p.address, p.ident, p.seq, _plain_sub(p.subscription)]


def _intervals_out(s: IntervalSet) -> list:
    return [list(iv) for iv in s.intervals]


def _filter_out(f: Filter) -> list:
    return [f.depth, _intervals_out(f.keys), [[a, _intervals_out(s)] for a, s in f.box]]


def _gossip_out(msg) -> list:
    return [[[_profile(p), float(age)] for p, age in msg.entries]]


# Each kind's fields after [version, kind, profile], beside _READERS below.
_WRITERS: dict[type, Callable[[m.Message], list]] = {
    **{cls: (lambda msg: []) for cls in (m.Join, m.Ping, m.Pong, m.Leave)},
    **{cls: _gossip_out for cls in (m.JoinReply, m.Shuffle, m.ShuffleReply, m.TmanRequest,
                                    m.TmanReply)},
    m.Install: lambda msg: [msg.attr, [_filter_out(f) for f in msg.filters], msg.fresh,
                            float(msg.sent)],
    m.Refresh: lambda msg: [[[a, d] for a, d in msg.digests]],
    m.RowRequest: lambda msg: [list(msg.attrs)],
    m.Withdraw: lambda msg: [list(msg.attrs), float(msg.sent)],
    m.EventMessage: lambda msg: [msg.eid, msg.event.to_plain(), msg.attr, msg.key, msg.hops,
                                 msg.up],
    m.EventPush: lambda msg: [msg.eid, msg.event.to_plain(), msg.hops],
    m.LoadReport: lambda msg: [float(msg.load), msg.split, float(msg.forwarding)],
    m.HandoverRequest: lambda msg: [msg.new_ident],
    m.Handover: lambda msg: [
        msg.new_ident,
        [[a, nb, float(ttl), [_filter_out(f) for f in fs]] for a, nb, ttl, fs in msg.rows],
    ],
}  # fmt: skip


def encode(msg: m.Message, key: NetworkKey | None = None) -> bytes:
    """One message as one datagram (may exceed MAX_DATAGRAM: see encode_datagrams)."""
    payload = msgpack.packb(
        [WIRE_VERSION, _KINDS[type(msg)], _profile(msg.profile), *_WRITERS[type(msg)](msg)],
        use_bin_type=True,
    )
    return payload if key is None else key.tag(payload) + payload


def encode_datagrams(msg: m.Message, key: NetworkKey | None = None) -> list[bytes]:
    """The message as datagrams of at most MAX_DATAGRAM bytes: gossip
    samples are truncated; anything else that does not fit raises
    OversizeError (content rows are capped far below a datagram:
    ContentConfig.max_filters_per_row and max_intervals)."""
    t = type(msg)
    if t in _GOSSIP and len(msg.entries) > MAX_GOSSIP_ENTRIES:
        msg = t(msg.profile, msg.entries[:MAX_GOSSIP_ENTRIES])
    data = encode(msg, key)
    if len(data) <= MAX_DATAGRAM:
        return [data]
    entries = getattr(msg, "entries", ())
    if t in _GOSSIP and len(entries) > 1:
        return encode_datagrams(type(msg)(msg.profile, entries[: len(entries) // 2]), key)
    raise OversizeError(f"{t.__name__} does not fit in one datagram")


def encode_sends(sends, key: NetworkKey | None = None) -> list[tuple]:
    """(destination, datagrams) for a batch of Send actions; datagrams is
    None for a message that cannot be sent (OversizeError). The copies of
    one event that a node forwards are one message object sent to several
    destinations, so each message is encoded once."""
    out = []
    memo: dict[int, list[bytes] | None] = {}  # id(message) -> datagrams, for this batch
    last = datagrams = None
    for send in sends:
        msg = send.message
        if msg is not last:  # copies of one message come one after another
            datagrams = memo.get(id(msg), memo)
            if datagrams is memo:
                try:
                    datagrams = encode_datagrams(msg, key)
                except OversizeError:
                    datagrams = None
                memo[id(msg)] = datagrams
            last = msg
        out.append((send.dest, datagrams))
    return out


# ---------------------------------------------------------------- decoding


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
    if x in _VALID_ADDRESSES:  # only ever holds str
        return x
    if type(x) is not str:
        raise _fail(f"address must be a string, got {brief(x)}")
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


class _Reader:
    """Field validators bound to one schema (subscriptions and events are
    checked against it)."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.n_attrs = len(schema)

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
        address, ident, seq, sub = _array(x, 4, "profile", exact=4)
        return Profile(
            _address(address),
            _ring(ident, "identifier"),
            self.sub(sub),
            _int(seq, 0, SEQ_LIMIT, "seq"),
        )

    def gossip(self, fields, cls):
        (raw,) = fields
        entries = []
        for pair in _array(raw, MAX_GOSSIP_ENTRIES, "entries"):
            p, age = _array(pair, 2, "entry", exact=2)
            entries.append((self.profile(p), _float(age, 0.0, MAX_AGE, "age")))
        return lambda prof: cls(prof, tuple(entries))


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


def _read_event(r: _Reader, f: tuple):
    eid, values, attr, key, hops, up = _arity(6)(f)
    eid = _int(eid, 0, EID_LIMIT - 1, "event id")
    event = r.event(values)
    attr = _attr(attr, r.schema)
    if attr not in event.values:
        raise _fail(f"event copy for {attr!r} but the event has no value for it")
    key = _ring(key, "key")
    hops = _int(hops, 0, MAX_HOPS, "hops")
    if type(up) is not bool:
        raise _fail("up must be a boolean")
    return lambda p: m.EventMessage(p, eid, event, attr, key, hops, up)


def _read_push(r: _Reader, f: tuple):
    eid, values, hops = _arity(3)(f)
    eid = _int(eid, 0, EID_LIMIT - 1, "event id")
    event = r.event(values)
    hops = _int(hops, 0, MAX_HOPS, "hops")
    return lambda p: m.EventPush(p, eid, event, hops)


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
        rows.append((_attr(attr, r.schema), _address(nb), _float(ttl, 0.0, MAX_AGE, "ttl"),
                     _read_filters(r, filters)))  # fmt: skip
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


_GOSSIP = (m.JoinReply, m.Shuffle, m.ShuffleReply, m.TmanRequest, m.TmanReply)

_READERS: dict[int, Callable] = {
    _KINDS[m.Join]: _read_bare(m.Join),
    _KINDS[m.Ping]: _read_bare(m.Ping),
    _KINDS[m.Pong]: _read_bare(m.Pong),
    _KINDS[m.Leave]: _read_bare(m.Leave),
    **{_KINDS[c]: _read_gossip(c) for c in _GOSSIP},
    _KINDS[m.Install]: _read_install,
    _KINDS[m.Refresh]: _read_refresh,
    _KINDS[m.Withdraw]: _read_withdraw,
    _KINDS[m.RowRequest]: _read_row_request,
    _KINDS[m.EventMessage]: _read_event,
    _KINDS[m.EventPush]: _read_push,
    _KINDS[m.LoadReport]: _read_load,
    _KINDS[m.HandoverRequest]: _read_handover_request,
    _KINDS[m.Handover]: _read_handover,
}


def _too_deep(top: tuple, limit: int) -> bool:
    """Whether arrays nest more than `limit` levels below and including
    `top`. Iterative: the input may nest 1,023 deep."""
    level = [top]
    for _ in range(limit):
        level = [y for x in level for y in x if type(y) is tuple]
        if not level:
            return False
    return True


class Decoder:
    """Decodes datagrams for one swarm (its schema and optional key)."""

    def __init__(self, schema: Schema, key: NetworkKey | None = None) -> None:
        self.key = key
        self._reader = _Reader(schema)

    def decode_untrusted(self, data: bytes) -> m.Message:
        """Bytes from the network to a message, or WireError. Never anything else."""
        if type(data) is not bytes:
            raise WireError("size", f"expected bytes, got {type(data).__name__}")
        if not 1 <= len(data) <= MAX_DATAGRAM:
            raise WireError("size", f"{len(data)} bytes")
        if self.key is not None:
            if len(data) <= MAC_SIZE:
                raise WireError("mac", "too short for a tag")
            tag, data = data[:MAC_SIZE], data[MAC_SIZE:]
            if not hmac.compare_digest(tag, self.key.tag(data)):
                raise WireError("mac", "tag does not verify")
        try:
            top = msgpack.unpackb(data, **_UNPACK_LIMITS)
        except ValueError as err:  # msgpack's errors are all ValueErrors
            raise WireError("msgpack", str(err)[:80]) from None
        if type(top) is not tuple or len(top) < 3:
            raise WireError("msgpack", "not a message array")
        if _too_deep(top, MAX_DEPTH):
            raise WireError("depth", f"arrays nested more than {MAX_DEPTH} deep")
        version, kind = top[0], top[1]
        if version != WIRE_VERSION or type(version) is not int:
            raise WireError("version", f"unsupported wire version {brief(version, 20)}")
        reader = _READERS.get(kind) if type(kind) is int else None
        if reader is None:
            raise WireError("kind", f"unknown message kind {brief(kind, 20)}")
        profile = self._reader.profile(top[2])
        build = reader(self._reader, top[3:])
        return build(profile)
