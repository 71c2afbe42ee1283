"""Messages to datagrams: each kind's fields, packed once per message and
framed once per destination."""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable

import msgpack

from vinifera.protocol import messages as m
from vinifera.protocol.content.cover import TOKEN_BYTES
from vinifera.protocol.content.filters import Filter
from vinifera.protocol.profile import Profile
from vinifera.ranges import IntervalSet
from vinifera.subscription import Subscription
from vinifera.wire.frames import (
    GOSSIP_KINDS,
    HEADER_ROOM,
    KIND_CHALLENGE,
    KIND_HELLO,
    KINDS,
    MAX_DATAGRAM,
    MAX_GOSSIP_ENTRIES,
    NO_HEADER,
    WIRE_VERSION,
    Body,
    Challenge,
    Header,
    Hello,
    OversizeError,
)
from vinifera.wire.netkey import NetworkKey


def _plain_sub(sub: Subscription | None):
    return None if sub is None else sub.to_plain()


def _profile(p: Profile) -> list:
    return [p.address, p.ident, p.seq, _plain_sub(p.subscription)]


def _intervals_out(s: IntervalSet) -> list:
    return [list(iv) for iv in s.intervals]


def _filter_out(f: Filter) -> list:
    return [f.depth, _intervals_out(f.keys), [[a, _intervals_out(s)] for a, s in f.box]]


def _gossip_out(msg) -> list:
    return [[[_profile(p), float(age)] for p, age in zip(msg.profiles, msg.ages, strict=True)]]


def _tman_out(msg: m.TmanRequest) -> list:
    return [*_gossip_out(msg), list(msg.links)]


def _truncated(msg, n: int):
    """A gossip message with its first n entries (a T-Man message keeps the
    marks of the links among them)."""
    t = type(msg)
    if isinstance(msg, m.TmanRequest):
        links = tuple(i for i in msg.links if i < n)
        return t(msg.profile, msg.profiles[:n], msg.ages[:n], links)
    return t(msg.profile, msg.profiles[:n], msg.ages[:n])


# Each kind's fields after [version, kind, profile], beside _READERS below.
# A signed event's seal: the publisher's Ed25519 public key (32 bytes) and
# its signature of the event (64); daemon/signing.py makes and checks it.
SEAL_SIZE = 96


def _extras_out(event) -> tuple:
    """What follows an event copy's fields: its seal, then its birth time
    (nil for no seal), each only when present."""
    seal, born = event.seal, event.born
    if born is not None:
        return (seal, float(born))
    return () if seal is None else (seal,)


# A covered list's token (content/cover.py) as a big-endian struct item.
TOKEN_FORMAT = {4: "I", 8: "Q"}[TOKEN_BYTES]


def _tokens_out(tokens) -> bytes:
    """A covered list as packed big-endian tokens."""
    return struct.pack(f">{len(tokens)}{TOKEN_FORMAT}", *tokens)


_WRITERS: dict[type, Callable[[m.Message], list]] = {
    **{cls: (lambda msg: []) for cls in (m.Join, m.Ping, m.Pong, m.Leave)},
    **{cls: _gossip_out for cls in (m.JoinReply, m.Shuffle, m.ShuffleReply)},
    **{cls: _tman_out for cls in (m.TmanRequest, m.TmanReply)},
    m.Install: lambda msg: [msg.attr, [_filter_out(f) for f in msg.filters], msg.fresh,
                            float(msg.sent)],
    m.Refresh: lambda msg: [[[a, d] for a, d in msg.digests]],
    m.RowRequest: lambda msg: [list(msg.attrs)],
    m.Withdraw: lambda msg: [list(msg.attrs), float(msg.sent)],
    # the covered lists, then a signed event's seal and the birth time
    # (_extras_out)
    m.EventMessage: lambda msg: [msg.eid, msg.event.to_plain(), msg.attr, msg.key, msg.hops,
                                 msg.up, _tokens_out(msg.covered), _tokens_out(msg.pushed),
                                 *_extras_out(msg.event)],
    m.EventPush: lambda msg: [msg.eid, msg.event.to_plain(), msg.hops, _tokens_out(msg.covered),
                              _tokens_out(msg.pushed), *_extras_out(msg.event)],
    m.Have: lambda msg: [msg.eid],
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
    return Body(KINDS[type(msg)], len(items), packed[1:])


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
    if t in GOSSIP_KINDS and len(msg.profiles) > MAX_GOSSIP_ENTRIES:
        msg = _truncated(msg, MAX_GOSSIP_ENTRIES)
    b = body(msg)
    if len(b.data) + HEADER_ROOM <= MAX_DATAGRAM:
        return [b]
    if t in GOSSIP_KINDS and len(msg.profiles) > 1:
        return encode_bodies(_truncated(msg, len(msg.profiles) // 2))
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
