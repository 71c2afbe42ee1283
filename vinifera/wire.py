"""The wire format: protocol messages as msgpack datagrams, and back.

Layout of one datagram (see docs/protocol.md, "Transport and wire format"):

    [MAC (16 bytes, only with a network key)] msgpack([version, kind, header, profile, *fields])
    header = [cookie, offer, sent, seq]: address proof (keyless swarms) and
             replay protection (keyed swarms), see Header
    handshake: msgpack([version, HELLO or CHALLENGE, cookie]), no profile

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
import threading
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import msgpack

from vinifera.errors import SchemaError, ViniferaError, brief
from vinifera.protocol import messages as m
from vinifera.protocol.content.filters import Filter
from vinifera.protocol.profile import Profile
from vinifera.ranges import IntervalSet
from vinifera.ring import RING_MAX
from vinifera.schema import Schema
from vinifera.subscription import Event, Subscription

# 2: aggregated CRT rows (Install, Refresh, RowRequest, Withdraw, Handover);
# 3: the per-datagram header and handshake kinds (address proof, replay
# window), and rows stamped with the sender's clock (Install, Withdraw)
WIRE_VERSION = 3
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
U64 = (1 << 64) - 1
# Room the header (and tag) take besides a message body: 1 + 4 x 9 bytes packed.
HEADER_ROOM = 64
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


class Header(NamedTuple):
    """Per-datagram framing, outside the protocol message (the daemon's
    concern; the simulator never encodes). 0 means absent."""

    # Keyless swarms: the receiver's cookie for us (proof that we receive at
    # our address, docs/protocol.md "Address proof") ...
    cookie: int = 0
    # ... and ours for the receiver, until it shows it holds it.
    offer: int = 0
    # Keyed swarms (inside the MAC): the sender's clock in milliseconds and
    # its datagram counter (replay window).
    sent: int = 0
    seq: int = 0


NO_HEADER = Header()


class Hello(NamedTuple):
    """First contact: here is my cookie for you; answer with yours."""

    offer: int


class Challenge(NamedTuple):
    """Prove that you receive at your address: put `cookie` in what you send me."""

    cookie: int


class Framed(NamedTuple):
    """A decoded protocol datagram."""

    header: Header
    message: m.Message


class Body(NamedTuple):
    """A message encoded up to (not including) its per-datagram header:
    event copies to many neighbours share one body."""

    kind: int
    items: int  # array items after the header: the profile and the fields
    data: bytes


# ---------------------------------------------------------------- network key


MIN_SECRET = 16


def secret_bytes(data: bytes, what: str) -> bytes:
    """A shared secret as given (a file's bytes): surrounding whitespace
    ignored, 16 bytes or more."""
    secret = data.strip()
    if len(secret) < MIN_SECRET:
        raise ViniferaError(f"{what} too short: {len(secret)} bytes (need at least {MIN_SECRET})")
    return secret


def read_secret(path: str | Path, what: str) -> bytes:
    """A secret file's checked bytes (secret_bytes), or a ViniferaError naming the file."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise ViniferaError(f"cannot read {what} file {path}: {err.strerror}") from None
    try:
        return secret_bytes(data, what)
    except ViniferaError as err:
        raise ViniferaError(f"{path}: {err}") from None


class NetworkKey:
    """A shared secret: every datagram carries a keyed BLAKE2b tag of its
    payload. The file may hold any bytes (16 or more, surrounding whitespace
    ignored); they are hashed into a 32-byte BLAKE2b key."""

    __slots__ = ("_key",)

    def __init__(self, secret: bytes) -> None:
        secret = secret_bytes(secret, "network key")
        self._key = hashlib.blake2b(secret, digest_size=32, person=b"vinifera-netkey").digest()

    @classmethod
    def load(cls, path: str | Path) -> NetworkKey:
        return cls(read_secret(path, "network key"))

    def tag(self, payload: bytes, dest: str = "") -> bytes:
        """The MAC of a datagram to `dest` (its receiver's address, not sent:
        the receiver knows its own), so a datagram captured on its way to
        one node is worthless at any other."""
        h = hashlib.blake2b(key=self._key, digest_size=MAC_SIZE)
        d = dest.encode()
        h.update(bytes((len(d),)) + d)
        h.update(payload)
        return h.digest()

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
# Handshake kinds: no profile, no header; far from the protocol's numbers.
KIND_HELLO = 100
KIND_CHALLENGE = 101


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


_packers = threading.local()


def _pack(value) -> bytes:
    """msgpack.packb with one Packer per thread: packb makes a Packer, with
    a 256 KiB buffer, per call; two of those per datagram sent fragmented
    the C heap of a busy daemon (its RSS crept up while its Python heap
    stayed flat)."""
    packer = getattr(_packers, "packer", None)
    if packer is None:
        packer = _packers.packer = msgpack.Packer(use_bin_type=True, buf_size=1 << 16)
    return packer.pack(value)


def body(msg: m.Message) -> Body:
    """The message's kind, profile and fields, packed once."""
    items = [_profile(msg.profile), *_WRITERS[type(msg)](msg)]
    packed = _pack(items)
    # Fewer than 16 items: a one-byte array header, dropped for framing.
    return Body(_KINDS[type(msg)], len(items), packed[1:])


def frame(
    b: Body, header: Header = NO_HEADER, key: NetworkKey | None = None, dest: str = ""
) -> bytes:
    """One datagram: version, kind and header in front of a body (items fit
    a one-byte array header: 3 + at most 7), tagged with the key if any (for
    the receiver at `dest`)."""
    head = _pack(list(header))
    payload = bytes((0x90 + 3 + b.items, WIRE_VERSION, b.kind)) + head + b.data
    return payload if key is None else key.tag(payload, dest) + payload


def encode(
    msg: m.Message, key: NetworkKey | None = None, header: Header = NO_HEADER, dest: str = ""
) -> bytes:
    """One message as one datagram (may exceed MAX_DATAGRAM: see encode_datagrams)."""
    return frame(body(msg), header, key, dest)


def encode_handshake(hs: Hello | Challenge, key: NetworkKey | None = None, dest: str = "") -> bytes:
    kind = KIND_HELLO if type(hs) is Hello else KIND_CHALLENGE
    payload = _pack([WIRE_VERSION, kind, hs[0]])
    return payload if key is None else key.tag(payload, dest) + payload


def encode_bodies(msg: m.Message) -> list[Body]:
    """The message as bodies that each fit one datagram with its header and
    tag: gossip samples are truncated; anything else that does not fit
    raises OversizeError (content rows are capped far below a datagram:
    ContentConfig.max_filters_per_row and max_intervals)."""
    t = type(msg)
    if t in _GOSSIP and len(msg.entries) > MAX_GOSSIP_ENTRIES:
        msg = t(msg.profile, msg.entries[:MAX_GOSSIP_ENTRIES])
    b = body(msg)
    if len(b.data) + HEADER_ROOM <= MAX_DATAGRAM:
        return [b]
    entries = getattr(msg, "entries", ())
    if t in _GOSSIP and len(entries) > 1:
        return encode_bodies(type(msg)(msg.profile, entries[: len(entries) // 2]))
    raise OversizeError(f"{t.__name__} does not fit in one datagram")


def encode_datagrams(
    msg: m.Message, key: NetworkKey | None = None, header: Header = NO_HEADER
) -> list[bytes]:
    """The message as datagrams of at most MAX_DATAGRAM bytes (encode_bodies)."""
    return [frame(b, header, key) for b in encode_bodies(msg)]


def encode_sends(sends) -> list[tuple]:
    """(destination, bodies) for a batch of Send actions; bodies is None
    for a message that cannot be sent (OversizeError). The copies of one
    event that a node forwards are one message object sent to several
    destinations, so each message is encoded once; the driver frames each
    datagram (frame)."""
    out = []
    memo: dict[int, list[Body] | None] = {}  # id(message) -> bodies, for this batch
    last = bodies = None
    for send in sends:
        msg = send.message
        if msg is not last:  # copies of one message come one after another
            bodies = memo.get(id(msg), memo)
            if bodies is memo:
                try:
                    bodies = encode_bodies(msg)
                except OversizeError:
                    bodies = None
                memo[id(msg)] = bodies
            last = msg
        out.append((send.dest, bodies))
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
        if _too_deep(top, MAX_DEPTH):
            raise WireError("depth", f"arrays nested more than {MAX_DEPTH} deep")
        version, kind = top[0], top[1]
        if version != WIRE_VERSION or type(version) is not int:
            raise WireError("version", f"unsupported wire version {brief(version, 20)}")
        if kind in (KIND_HELLO, KIND_CHALLENGE) and type(kind) is int:
            if len(top) != 3:
                raise WireError("field", f"handshake with {len(top)} items")
            value = _int(top[2], 1, U64, "cookie")
            return Hello(value) if kind == KIND_HELLO else Challenge(value)
        reader = _READERS.get(kind) if type(kind) is int else None
        if reader is None:
            raise WireError("kind", f"unknown message kind {brief(kind, 20)}")
        if len(top) < 4:
            raise WireError("field", "no profile")
        header = _header(top[2])
        profile = self._reader.profile(top[3])
        build = reader(self._reader, top[4:])
        return Framed(header, build(profile))
