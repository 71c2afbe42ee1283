"""The wire format: protocol messages as msgpack datagrams, and back.

One module per concern: frames.py (the version, caps, message kinds and
framing records), encode.py and decode.py (the two directions), netkey.py
(the optional network key), addresses.py (peer addresses). This package
re-exports what the drivers and tools use.

Layout of one datagram (see docs/protocol.md, "Transport and wire format"):

    [MAC (16 bytes, only with a network key)] msgpack([version, kind, header, profile, *fields])
    header = [cookie, offer, sent, seq]: address proof (keyless swarms) and
             replay protection (keyed swarms), see Header
    handshake: msgpack([version, HELLO or CHALLENGE, cookie]), no profile

`Decoder.decode_untrusted` (decode.py) is the only function that turns bytes from the network
into a message. It checks the size first, then the MAC, then parses with
msgpack's own limits (no maps, no binary, no extension types, bounded
strings and arrays), then validates every field: types exact (a bool is not
an int), integers in range, floats finite, lengths capped, attributes and
values against the schema. Anything wrong raises `WireError` and nothing
else; its `reason` names the check that failed, for the drop counters.
"""

from vinifera.wire.addresses import format_address, parse_address
from vinifera.wire.decode import Decoder
from vinifera.wire.encode import (
    body,
    encode,
    encode_bodies,
    encode_datagrams,
    encode_handshake,
    encode_sends,
    frame,
)
from vinifera.wire.frames import (
    DIGEST_MAX,
    EID_LIMIT,
    HEADER_ROOM,
    KIND_CHALLENGE,
    KIND_HELLO,
    MAC_SIZE,
    MAX_ADDRESS_LEN,
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
    NO_HEADER,
    SEQ_LIMIT,
    U64,
    WIRE_VERSION,
    Body,
    Challenge,
    Framed,
    Header,
    Hello,
    OversizeError,
    WireError,
)
from vinifera.wire.netkey import MIN_SECRET, NetworkKey, read_secret, secret_bytes

__all__ = [
    "Body",
    "Challenge",
    "DIGEST_MAX",
    "Decoder",
    "EID_LIMIT",
    "Framed",
    "HEADER_ROOM",
    "Header",
    "Hello",
    "KIND_CHALLENGE",
    "KIND_HELLO",
    "MAC_SIZE",
    "MAX_ADDRESS_LEN",
    "MAX_AGE",
    "MAX_CLOCK",
    "MAX_CONTENT_ENTRIES",
    "MAX_DATAGRAM",
    "MAX_DEPTH",
    "MAX_FILTERS",
    "MAX_GOSSIP_ENTRIES",
    "MAX_HANDOVER_ROWS",
    "MAX_HOPS",
    "MAX_INTERVALS",
    "MAX_LOAD",
    "MAX_STRING",
    "MIN_SECRET",
    "NO_HEADER",
    "NetworkKey",
    "OversizeError",
    "SEQ_LIMIT",
    "U64",
    "WIRE_VERSION",
    "WireError",
    "body",
    "encode",
    "encode_bodies",
    "encode_datagrams",
    "encode_handshake",
    "encode_sends",
    "format_address",
    "frame",
    "parse_address",
    "read_secret",
    "secret_bytes",
]
