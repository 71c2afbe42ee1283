"""The optional network key: a shared secret whose keyed BLAKE2b tag every
datagram carries, so that only its holders take part in a swarm."""

from __future__ import annotations

import hashlib
from pathlib import Path

from vinifera.errors import ViniferaError
from vinifera.wire.frames import MAC_SIZE

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
