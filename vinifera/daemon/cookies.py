"""Address proof for keyless swarms: before a node has seen a peer prove
that it receives datagrams at its address, nothing the peer sends reaches
the protocol, and nothing the node sends it is larger than what it sent.

A cookie is a keyed hash of the peer's address under a secret of this
process (rotated every `epoch` seconds; the previous one still counts), so
issuing and checking cookies keeps no state per peer (QUIC's address
validation token, DTLS's cookie exchange). Every datagram carries, in its
header, the cookie its receiver issued to its sender; a datagram without a
valid one is answered only with a Challenge (a 12-byte datagram, never
larger than what it answers) and dropped. First contact:

    A -> B  Hello(A's cookie for B)        A holds its messages for B
    B -> A  Challenge(B's cookie for A)    B sends A nothing else yet
    A -> B  held messages, header cookie = B's cookie for A: A is proven,
            and their offer (A's cookie for B) is what B sends A with
    B -> A  replies, header cookie = A's cookie for B: A checks it too

A Hello proves nothing (anyone can forge its source), so it is answered
with the Challenge only: it neither gives us a cookie to send with nor
releases what we hold for that address.

The PeerCookies table remembers what peers issued to us, whether they hold
ours, and messages held until a first contact completes; it is bounded
(least recently used peers are forgotten and simply go through a first
contact again). Pure: the clock is an argument, the secret is given.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

from vinifera.wire import Body, Header

CURRENT = "current"
PREVIOUS = "previous"


class CookieIssuer:
    """Stateless cookies: BLAKE2b(address) keyed by a per-epoch secret."""

    __slots__ = ("_secret", "epoch", "_keys")

    def __init__(self, secret: bytes, epoch: float) -> None:
        if len(secret) < 16 or epoch <= 0:
            raise ValueError("a cookie secret needs 16 bytes or more and epoch > 0")
        self._secret = secret
        self.epoch = epoch
        self._keys: dict[int, bytes] = {}

    def _key(self, n: int) -> bytes:
        key = self._keys.get(n)
        if key is None:
            if len(self._keys) > 4:
                self._keys.clear()
            key = hashlib.blake2b(
                n.to_bytes(8, "big", signed=True), key=self._secret, digest_size=32
            ).digest()
            self._keys[n] = key
        return key

    def _cookie(self, address: str, n: int) -> int:
        digest = hashlib.blake2b(address.encode(), key=self._key(n), digest_size=8).digest()
        # top bit set: never 0 ("no cookie"), and always packed in 9 bytes, so a
        # Hello and the Challenge that answers it are the same size (12 bytes)
        return int.from_bytes(digest, "big") | (1 << 63)

    def issue(self, address: str, now: float) -> int:
        return self._cookie(address, int(now // self.epoch))

    def check(self, address: str, cookie: int, now: float) -> str | None:
        """CURRENT, PREVIOUS (valid but due for renewal) or None."""
        if not cookie:
            return None
        n = int(now // self.epoch)
        if cookie == self._cookie(address, n):
            return CURRENT
        if cookie == self._cookie(address, n - 1):
            return PREVIOUS
        return None


class _Peer:
    __slots__ = ("theirs", "holds_mine", "last_sent", "last_hello", "last_renewal", "held")

    def __init__(self) -> None:
        self.theirs = 0  # the cookie this peer issued to us
        self.holds_mine = False  # its datagrams carry our current cookie: stop offering it
        self.last_sent = -1e18
        self.last_hello = -1e18
        self.last_renewal = -1e18
        self.held: list[tuple[float, Body]] = []  # waiting for its cookie


class PeerCookies:
    def __init__(
        self,
        issuer: CookieIssuer,
        hold_for: float,
        max_peers: int = 8192,
        held_per_peer: int = 8,
        held_bytes: int = 4 << 20,
    ) -> None:
        self.issuer = issuer
        self.hold_for = hold_for
        self.max_peers = max_peers
        self.held_per_peer = held_per_peer
        self.held_bytes_max = held_bytes
        self.held_bytes = 0
        self._peers: OrderedDict[str, _Peer] = OrderedDict()
        self.counters = {"held_dropped": 0, "unsolicited_challenges": 0}

    def _peer(self, address: str, create: bool) -> _Peer | None:
        p = self._peers.get(address)
        if p is not None:
            self._peers.move_to_end(address)
        elif create:
            if len(self._peers) >= self.max_peers:
                _, old = self._peers.popitem(last=False)
                self._drop_held(old)
            p = self._peers[address] = _Peer()
        return p

    def _drop_held(self, p: _Peer) -> None:
        for _, b in p.held:
            self.held_bytes -= len(b.data)
        self.counters["held_dropped"] += len(p.held)
        p.held = []

    # ----------------------------------------------------------------- sending

    def header_for(self, address: str, now: float) -> Header | None:
        """The header for a datagram to `address`, or None while we have no
        cookie of its (hold the datagram and say Hello)."""
        p = self._peer(address, True)
        p.last_sent = now
        if not p.theirs:
            return None
        offer = 0 if p.holds_mine else self.issuer.issue(address, now)
        return Header(cookie=p.theirs, offer=offer)

    def hold(self, address: str, bodies: list[Body], now: float) -> bool:
        """Keep bodies for `address` until its cookie arrives (the oldest go
        when its share or the total is full). True when a Hello is due."""
        p = self._peer(address, True)
        for b in bodies:
            if len(p.held) >= self.held_per_peer or self.held_bytes + len(b.data) > (
                self.held_bytes_max
            ):
                self.counters["held_dropped"] += 1
                continue
            p.held.append((now, b))
            self.held_bytes += len(b.data)
        if now - p.last_hello >= self.hold_for / 4:
            p.last_hello = now
            return True
        return False

    def offer(self, address: str, now: float) -> int:
        return self.issuer.issue(address, now)

    # ----------------------------------------------------------------- receiving

    def check(self, address: str, header: Header, now: float) -> str | None:
        """Whether a datagram from `address` proves it receives there (its
        header carries our cookie): CURRENT, PREVIOUS or None. A proven
        datagram's offer becomes our cookie for it."""
        verdict = self.issuer.check(address, header.cookie, now)
        if verdict is not None:
            p = self._peer(address, True)
            p.holds_mine = verdict == CURRENT
            if header.offer:
                p.theirs = header.offer
        return verdict

    def renewal_due(self, address: str, now: float) -> bool:
        """After a PREVIOUS verdict: send a fresh cookie, once per epoch."""
        p = self._peer(address, True)
        if now - p.last_renewal < self.issuer.epoch:
            return False
        p.last_renewal = now
        return True

    def released_to_proven(self, address: str, now: float) -> list[tuple[Header, Body]]:
        """After a proven datagram from `address` (which carried its cookie
        for us): what we held for it can go."""
        p = self._peer(address, False)
        if p is None or not p.theirs:
            return []
        return self._release(address, p, now)

    def on_challenge(self, address: str, cookie: int, now: float) -> list[tuple[Header, Body]]:
        """A peer's cookie for us, in answer to something we sent it lately
        (else ignored: a forged challenge must not change what we use);
        returns the held datagrams, framed, to send now."""
        p = self._peer(address, False)
        if p is None or now - p.last_sent > self.hold_for:
            self.counters["unsolicited_challenges"] += 1
            return []
        p.theirs = cookie
        return self._release(address, p, now)

    def _release(self, address: str, p: _Peer, now: float) -> list[tuple[Header, Body]]:
        if not p.held:
            return []
        header = Header(cookie=p.theirs, offer=self.issuer.issue(address, now))
        fresh = now - self.hold_for
        out = [(header, b) for t, b in p.held if t >= fresh]
        self.counters["held_dropped"] += len(p.held) - len(out)
        self.held_bytes -= sum(len(b.data) for _, b in p.held)
        p.held = []
        p.last_sent = now
        return out

    def prune(self, now: float) -> None:
        """Drop held datagrams older than hold_for (their peer never answered)."""
        fresh = now - self.hold_for
        for p in self._peers.values():
            if p.held and p.held[0][0] < fresh:
                kept = [(t, b) for t, b in p.held if t >= fresh]
                self.counters["held_dropped"] += len(p.held) - len(kept)
                self.held_bytes -= sum(len(b.data) for t, b in p.held if t < fresh)
                p.held = kept

    def __len__(self) -> int:
        return len(self._peers)
