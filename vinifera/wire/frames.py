"""The wire format's shared parts: its version, the caps on what one
datagram may carry, the message kinds, and the records the encoder and the
decoder exchange with the drivers (header, handshakes, framed messages)."""

from __future__ import annotations

from typing import NamedTuple

from vinifera.errors import ViniferaError
from vinifera.protocol import messages as m

# 2: aggregated CRT rows (Install, Refresh, RowRequest, Withdraw, Handover);
# 3: the per-datagram header and handshake kinds (address proof, replay
# window), and rows stamped with the sender's clock (Install, Withdraw)
# 4: event copies carry the covered lists (content/cover.py)
WIRE_VERSION = 4
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

KINDS: dict[type, int] = {
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
    m.Have: 19,
}
# Handshake kinds: no profile, no header; far from the protocol's numbers.
KIND_HELLO = 100
KIND_CHALLENGE = 101
# Kinds whose body is a gossip sample (truncated, not refused, when too long).
GOSSIP_KINDS = (m.JoinReply, m.Shuffle, m.ShuffleReply, m.TmanRequest, m.TmanReply)


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
