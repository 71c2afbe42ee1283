"""Fragments: a message body too big for one datagram of the path (the
daemon's --max-datagram, 1,200 bytes by default: QUIC's size, which crosses
any path without IP fragmentation, which many NATs and firewalls drop) goes
as several fragment datagrams, each framed, tagged and admitted like any
other, and is put together again by the receiver (daemon/reassembly.py)
before it is decoded. The simulator never encodes: none of this is seen by
the protocol.

A fragment body is [kind, items, message id, index, count, chunk]: the
original body's kind and item count, an id the sender draws per message,
this part's place, the number of parts, and a slice of the original
body's bytes.
"""

from __future__ import annotations

from typing import NamedTuple

from vinifera.wire.encode import _pack
from vinifera.wire.frames import HEADER_ROOM, MAX_DATAGRAM, Body

KIND_FRAGMENT = 102
# Parts of one message: enough for the largest body (MAX_DATAGRAM) at the
# smallest --max-datagram, so every body that encode_bodies lets through splits.
MAX_FRAGMENTS = 128
MAX_CHUNK = 1_400  # bytes of one part (what the decoder accepts)
MIN_DATAGRAM = 576  # the smallest --max-datagram (IPv4's minimum reassembly size)
# A fragment's own fields besides its chunk: kind, items, id, index, count
# and the chunk's bin header, packed (at most 1 + 1 + 9 + 1 + 1 + 3).
FRAGMENT_ROOM = 16
MSG_ID_LIMIT = 1 << 32
assert MAX_DATAGRAM <= MAX_FRAGMENTS * (MIN_DATAGRAM - HEADER_ROOM - FRAGMENT_ROOM)


class Fragment(NamedTuple):
    kind: int
    items: int
    msg_id: int
    index: int
    count: int
    chunk: bytes


def chunk_size(max_datagram: int) -> int:
    return min(MAX_CHUNK, max_datagram - HEADER_ROOM - FRAGMENT_ROOM)


def split_body(b: Body, msg_id: int, max_datagram: int) -> list[Body]:
    """`b` as fragment bodies that each fit `max_datagram` with their header
    and tag; `b` itself when it fits already."""
    if len(b.data) + HEADER_ROOM <= max_datagram:
        return [b]
    size = chunk_size(max_datagram)
    chunks = [b.data[i : i + size] for i in range(0, len(b.data), size)]
    out = []
    for i, chunk in enumerate(chunks):
        packed = _pack([b.kind, b.items, msg_id, i, len(chunks), chunk])
        out.append(Body(KIND_FRAGMENT, 6, packed[1:]))
    return out
