"""Hostile datagrams for the untrusted decoder: the fast fuzz test, the long
fuzz run (benchmarks/fuzz_decoder.py) and the live-daemon test draw from
these families, so all three attack the same surface.

Every generator takes a seeded `random.Random` and returns bytes; nothing
here is random without a seed. The families:

- ``bytes``: arbitrary bytes, short and long;
- ``garbage``: msgpack of random nested values behind a plausible header;
- ``mutate``: byte-level flips, cuts and insertions of a valid datagram;
- ``replace``: a valid message's decoded structure with one node replaced by
  a hostile value (a wrong type, a boundary number, NaN, a huge container,
  a long string, deep nesting);
- ``deep``: arrays nested 11 to 1,023 deep at a random position;
- ``huge``: containers and strings at or past msgpack's limits.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import msgpack

from vinifera.protocol import messages as m
from vinifera.protocol.config import MAX_COVERED
from vinifera.protocol.content.filters import Filter
from vinifera.protocol.profile import Profile
from vinifera.ranges import IntervalSet
from vinifera.ring import RING_MAX
from vinifera.schema import Schema
from vinifera.subscription import Event, Subscription
from vinifera.wire import (
    KIND_CHALLENGE,
    KIND_HELLO,
    MAX_CONTENT_ENTRIES,
    MAX_DATAGRAM,
    NO_HEADER,
    WIRE_VERSION,
    Challenge,
    Header,
    Hello,
    NetworkKey,
    encode,
    encode_handshake,
)

# msgpack's unpacker refuses nesting past this, so deeper input tests nothing new.
MSGPACK_MAX_DEPTH = 1_023


def sample_messages(schema: Schema, port: int = 7000) -> list[m.Message]:
    """One valid message of every kind, with fields drawn from `schema`'s
    first attribute (any numeric or string schema will do)."""
    attr = schema.attributes[0]
    lo = attr.min if attr.min is not None else "a"
    hi = attr.max if attr.max is not None else "z"
    sub = Subscription.build(schema, {attr.name: (lo, hi)})
    event = Event.build(schema, {attr.name: lo})
    p = Profile(f"127.0.0.1:{port}", 12345, sub, seq=3)
    peer = Profile("127.0.0.9:7001", RING_MAX, None, seq=0)
    gossip = ((peer, p), (0.5, 12.0))
    ivs = ((0, 10), (RING_MAX - 5, RING_MAX))
    owner = "127.0.0.9:7003"
    name = attr.name
    row_filter = Filter(IntervalSet.from_intervals(ivs), ((name, IntervalSet.of(5, 99)),), 2)
    return [
        m.Join(p),
        m.JoinReply(p, *gossip),
        m.Shuffle(p, *gossip),
        m.ShuffleReply(p, (), ()),
        m.TmanRequest(p, *gossip, (1, 0)),
        m.TmanReply(p, *gossip, ()),
        m.Ping(p),
        m.Pong(p),
        m.Leave(p),
        m.Install(p, name, (row_filter,), True),
        m.Refresh(p, ((name, 2**64 - 1),)),
        m.RowRequest(p, (name,)),
        m.Withdraw(p, (name,)),
        m.EventMessage(p, 2**63 - 1, event, name, 99, 4, True),
        m.EventMessage(p, 7, event, name, 99, 4, False, tuple(range(MAX_COVERED)), (2**32 - 1,)),
        m.EventPush(p, 12, event, 3),
        m.EventPush(p, 12, event, 3, (0, 5), tuple(range(MAX_COVERED))),
        m.Have(p, 12),
        m.LoadReport(p, 0.0, 77, 3.25),
        m.HandoverRequest(p, 5),
        m.Handover(p, 5, ((name, owner, 3.0, (row_filter,)),)),
    ]


def _pack(value) -> bytes:
    # surrogatepass: a lone surrogate packs as invalid UTF-8, for the decoder to refuse
    return msgpack.packb(value, use_bin_type=True, unicode_errors="surrogatepass")


def _nested(depth: int, leaf) -> bytes:
    """An array nested `depth` deep around `leaf`, packed without recursion."""
    return b"\x91" * depth + _pack(leaf)


def _plain_value(rng: random.Random, depth: int = 0):
    """A random msgpack-able value, mostly small."""
    roll = rng.random()
    if depth < 4 and roll < 0.25:
        return [_plain_value(rng, depth + 1) for _ in range(rng.randrange(7))]
    return rng.choice(_SCALARS)(rng)


_SCALARS: list[Callable[[random.Random], object]] = [
    lambda r: None,
    lambda r: r.random() < 0.5,
    lambda r: r.randrange(-(2**63), 2**64),
    lambda r: r.choice([0, 1, -1, 2**63 - 1, 2**63, 2**64 - 1, -(2**63), RING_MAX]),
    lambda r: r.choice([0.0, -0.0, math.nan, math.inf, -math.inf, 1e308, 5e-324]),
    lambda r: r.uniform(-1e3, 1e3),
    lambda r: "".join(r.choice("ab:.1[]7temp") for _ in range(r.randrange(12))),
    lambda r: r.choice(["temp", "city", "count", "127.0.0.1:7000", "[::1]:1", "\udcff"]),
    # rare: the decoder refuses binary and maps outright, before any field
    # check, except empty ones (b"" and {} decode, and {} is unhashable)
    lambda r: r.randbytes(r.randrange(5)) if r.random() < 0.1 else None,
    lambda r: r.choice([{"k": 1}, {}]) if r.random() < 0.1 else 0,
]


def _hostile(rng: random.Random):
    """A replacement value meant to break a validator: packed bytes."""
    roll = rng.randrange(6)
    if roll == 0:
        return _nested(rng.randrange(11, MSGPACK_MAX_DEPTH + 1), rng.choice([1, None, "x"]))
    if roll == 1:
        return _pack([rng.choice([0, "x", None, [1]])] * rng.choice([65, 1_000, 2_000, 2_001]))
    if roll == 2:
        return _pack("x" * rng.choice([1_024, 1_025, 10_000]))
    return _pack(_plain_value(rng))


def _paths(value, prefix=()):
    """Every position in a decoded structure, as index paths."""
    yield prefix
    if isinstance(value, list):
        for i, child in enumerate(value):
            yield from _paths(child, (*prefix, i))


def _pack_replacing(value, path: tuple, replacement: bytes) -> bytes:
    """`value` packed, with the node at `path` replaced by packed bytes."""
    if not path:
        return replacement
    head, rest = path[0], path[1:]
    parts = [
        _pack_replacing(child, rest, replacement) if i == head else _pack(child)
        for i, child in enumerate(value)
    ]
    return _array_header(len(parts)) + b"".join(parts)


def _array_header(n: int) -> bytes:
    if n < 16:
        return bytes([0x90 + n])
    if n < 1 << 16:
        return b"\xdc" + n.to_bytes(2, "big")
    return b"\xdd" + n.to_bytes(4, "big")


class Fuzzer:
    """Hostile datagrams for one schema; with `key`, each is MAC-tagged
    correctly so that it reaches the parser (a wrong tag stops earlier).
    The valid messages they start from speak from 127.0.0.1:`port`: send
    them from that port and the survivors reach the protocol's handlers."""

    FAMILIES = ("bytes", "garbage", "mutate", "replace", "deep", "huge")

    def __init__(
        self,
        schema: Schema,
        key: NetworkKey | None = None,
        port: int = 7000,
        header: Header = NO_HEADER,
    ) -> None:
        self.key = key
        # `header`: a live node's cookie, so that what survives reaches its handlers
        self.samples = [encode(msg, header=header) for msg in sample_messages(schema, port)]
        self.samples += [encode_handshake(Hello(2**64 - 1)), encode_handshake(Challenge(1))]
        self.plains = [msgpack.unpackb(s, raw=False) for s in self.samples]

    def datagram(self, rng: random.Random, family: str) -> bytes:
        payload = getattr(self, "_" + family)(rng)
        return payload if self.key is None else self.key.tag(payload) + payload

    def stream(self, rng: random.Random, families=FAMILIES):
        """Endless (family, datagram) pairs, families in turn."""
        while True:
            for family in families:
                yield family, self.datagram(rng, family)

    def _bytes(self, rng: random.Random) -> bytes:
        size = rng.randrange(300) if rng.random() < 0.9 else rng.randrange(MAX_DATAGRAM + 2)
        return rng.randbytes(size)

    def _garbage(self, rng: random.Random) -> bytes:
        kind = rng.randrange(20)
        kind = rng.choice([kind, KIND_HELLO, KIND_CHALLENGE]) if rng.random() < 0.2 else kind
        head = [WIRE_VERSION, kind, _plain_value(rng)]
        items = head + [_plain_value(rng) for _ in range(rng.randrange(8))]
        return _pack(items)

    def _mutate(self, rng: random.Random) -> bytes:
        raw = bytearray(rng.choice(self.samples))
        for _ in range(rng.randrange(1, 5)):
            op = rng.randrange(3)
            pos = rng.randrange(max(1, len(raw)))
            if op == 0 and raw:
                raw[pos] ^= rng.randrange(1, 256)
            elif op == 1:
                del raw[pos:]
            else:
                raw[pos:pos] = rng.randbytes(rng.randrange(1, 5))
        return bytes(raw)

    def _replace(self, rng: random.Random) -> bytes:
        plain = rng.choice(self.plains)
        path = rng.choice(list(_paths(plain))[1:])
        return _pack_replacing(plain, path, _hostile(rng))

    def _deep(self, rng: random.Random) -> bytes:
        plain = rng.choice(self.plains)
        path = rng.choice(list(_paths(plain)))
        depth = rng.choice([11, 100, 999, 1_000, 1_001, rng.randrange(11, MSGPACK_MAX_DEPTH + 1)])
        return _pack_replacing(plain, path, _nested(depth, rng.choice([1, None, "x", 1.5])))

    def _huge(self, rng: random.Random) -> bytes:
        plain = rng.choice(self.plains)
        path = rng.choice(list(_paths(plain)))
        n = rng.choice([MAX_CONTENT_ENTRIES, MAX_CONTENT_ENTRIES + 1, 5_000])
        item = rng.choice([[1, 2], "127.0.0.1:7000", [["x", 1, 2]], 0, None])
        data = _pack_replacing(plain, path, _pack([item] * n))
        return data[: MAX_DATAGRAM + 1] if rng.random() < 0.2 else data
