"""Signed events (optional): a publisher holding an Ed25519 key seals its
events; a subscriber can require a valid seal, from a set of trusted keys
or from any key. The shared network key stays what admits nodes to the
swarm; a seal says who published an event, and that no relay changed it.

A seal is the publisher's public key (32 bytes) and its signature (64) of
SIGNED_PREFIX + the event's values (msgpack of Event.to_plain(), which is
in schema order and normalized, so publisher and subscriber encode the
same bytes). Relays pass seals on untouched; a node that requires seals
drops a copy whose seal is missing, altered or untrusted before the
protocol sees it (counted: bad_unsigned, bad_signature, bad_untrusted).

Not covered: the event id is not signed (the protocol draws it after the
event is built), so a captured signed event can be injected again under a
new id; within the duplicate memory that is refused as any replay is, and
a subscriber that needs exactly-once across days should put a sequence
number or timestamp in the event's own values.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

import msgpack
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from vinifera.errors import ViniferaError
from vinifera.subscription import Event
from vinifera.wire.encode import SEAL_SIZE

SIGNED_PREFIX = b"vinifera-event\x00"
PUBLIC_SIZE = 32


def fingerprint(public: bytes) -> str:
    """A key's short name in logs and status (16 hex digits)."""
    return hashlib.blake2b(public, digest_size=8).hexdigest()


def _signed_bytes(event: Event) -> bytes:
    return SIGNED_PREFIX + msgpack.packb(event.to_plain(), use_bin_type=True)


class SigningKey:
    """A node's Ed25519 key, from a PEM file (`vinifera-node keygen`)."""

    __slots__ = ("_key", "public", "fingerprint")

    def __init__(self, key: Ed25519PrivateKey) -> None:
        self._key = key
        self.public = key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        self.fingerprint = fingerprint(self.public)

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def load(cls, path: str | Path) -> SigningKey:
        try:
            data = Path(path).read_bytes()
        except OSError as err:
            raise ViniferaError(f"signing key {path}: {err.strerror or err}") from None
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError):
            raise ViniferaError(
                f"signing key {path}: not an unencrypted PEM private key "
                "(make one with `vinifera-node keygen FILE`)"
            ) from None
        if not isinstance(key, Ed25519PrivateKey):
            raise ViniferaError(f"signing key {path}: not an Ed25519 key")
        return cls(key)

    def save(self, path: str | Path) -> None:
        """Write the key as PEM, readable by this user only (refuses to
        replace an existing file)."""
        pem = self._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as err:
            raise ViniferaError(f"cannot write {path}: {err.strerror or err}") from None
        with os.fdopen(fd, "wb") as fh:
            fh.write(pem)

    def seal(self, event: Event) -> Event:
        """The event, sealed by this key."""
        return event.sealed(self.public + self._key.sign(_signed_bytes(event)))

    def __repr__(self) -> str:
        return f"SigningKey({self.fingerprint})"


def parse_public_key(text: str) -> bytes:
    """A public key given as 64 hex digits (what keygen prints)."""
    try:
        raw = bytes.fromhex(text.strip())
    except ValueError:
        raw = b""
    if len(raw) != PUBLIC_SIZE:
        raise ViniferaError(f"trusted key {text!r}: expected 64 hex digits (an Ed25519 key)")
    return raw


class SealPolicy:
    """Which events a node accepts: sealed by one of `trusted` (public keys),
    or by any key when `trusted` is empty."""

    __slots__ = ("trusted", "_keys")

    def __init__(self, trusted: Iterable[bytes] = ()) -> None:
        self.trusted = frozenset(trusted)
        self._keys: dict[bytes, Ed25519PublicKey] = {}

    def check(self, event: Event) -> str | None:
        """None if the event's seal is valid and trusted, else why not:
        'unsigned', 'untrusted' or 'signature'."""
        seal = event.seal
        if seal is None or len(seal) != SEAL_SIZE:
            return "unsigned"
        public, signature = seal[:PUBLIC_SIZE], seal[PUBLIC_SIZE:]
        if self.trusted and public not in self.trusted:
            return "untrusted"
        try:
            key = self._keys.get(public)
            if key is None:
                if len(self._keys) >= 4096:
                    self._keys.clear()
                key = self._keys[public] = Ed25519PublicKey.from_public_bytes(public)
            key.verify(signature, _signed_bytes(event))
        except (InvalidSignature, ValueError):
            return "signature"
        return None
