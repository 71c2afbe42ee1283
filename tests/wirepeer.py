"""Raw sockets that speak to a keyless daemon as a node would: a first
contact (Hello, then the node's Challenge) proves the socket receives at its
address, and later datagrams carry the node's cookie in their header."""

from __future__ import annotations

import socket

from vinifera.schema import Schema
from vinifera.wire import Challenge, Decoder, Header, Hello, encode_handshake

# A Hello as big as a node's (a 64-bit cookie): the node's Challenge is no larger. It is
# also the cookie we offer in our headers (a node takes none from a Hello).
HELLO_OFFER = (1 << 64) - 1
_ANY = Decoder(Schema.numeric(1, 0.0, 1.0))  # handshakes do not depend on the schema


def challenge_in(data: bytes) -> Challenge | None:
    try:
        d = _ANY.decode_datagram_untrusted(data)
    except Exception:  # noqa: BLE001 - anything else is not a challenge
        return None
    return d if type(d) is Challenge else None


def prove(sock: socket.socket, target: tuple[str, int], timeout: float = 5.0) -> Header:
    """Blocking first contact from `sock` to `target`: the header to use."""
    sock.settimeout(timeout)
    sock.sendto(encode_handshake(Hello(HELLO_OFFER)), target)
    while True:
        data, src = sock.recvfrom(70_000)
        c = challenge_in(data)
        if src[:2] == target and c is not None:
            return Header(cookie=c.cookie, offer=HELLO_OFFER)


async def aprove(sock, target: tuple[str, int]) -> Header:
    """The same from a trio socket."""
    await sock.sendto(encode_handshake(Hello(HELLO_OFFER)), target)
    while True:
        data, src = await sock.recvfrom(70_000)
        c = challenge_in(data)
        if src[:2] == target and c is not None:
            return Header(cookie=c.cookie, offer=HELLO_OFFER)
