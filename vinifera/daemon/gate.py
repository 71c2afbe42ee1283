"""The gate between the socket and the protocol: which decoded datagrams
pass (keyless swarms: the address proof; keyed swarms: the replay window)
and how outgoing message bodies are framed (headers, tags, first contacts
held behind a Hello). docs/protocol.md, "Address proof" and "Replay
protection".

Pure: time is an argument, and the datagrams to send come back as values;
the driver sends them.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import NamedTuple

from vinifera.daemon.cookies import PREVIOUS, CookieIssuer, PeerCookies
from vinifera.daemon.replay import ReplayWindow
from vinifera.wire import (
    Body,
    Challenge,
    Framed,
    Header,
    Hello,
    NetworkKey,
    encode_handshake,
    frame,
)


class Verdict(NamedTuple):
    """What to do with one inbound datagram: pass its message on or not,
    what to send back to its source, and why it is bad (None if it is not)."""

    passes: bool
    replies: list[bytes]
    bad: str | None = None
    detail: str = ""


DROP = Verdict(False, [])


class Gate:
    def __init__(
        self,
        key: NetworkKey | None,
        started: float,
        replay_skew: float,
        cookie_epoch: float,
        hold_for: float,
    ) -> None:
        self.key = key
        self.counters: Counter = Counter()
        if key is None:
            self.cookies: PeerCookies | None = PeerCookies(
                CookieIssuer(os.urandom(32), cookie_epoch), hold_for
            )
            self.replay: ReplayWindow | None = None
        else:
            self.cookies = None
            self.replay = ReplayWindow(replay_skew, started)
        # A counter past any earlier life's: it starts at our start time in us.
        self.seq = int(started * 1e6)

    # ----------------------------------------------------------------- inbound

    def inbound(self, d, sender: str, size: int, now: float) -> Verdict:
        """A decoded datagram (Framed, Hello or Challenge) of `size` bytes
        from `sender`."""
        if self.replay is not None:
            if type(d) is not Framed:
                return Verdict(False, [], "kind", "a handshake in a keyed swarm")
            why = self.replay.check(sender, d.header.sent, d.header.seq, now)
            if why is not None:
                self.counters["replay_" + why] += 1
                return Verdict(False, [], "replay", why)
            return Verdict(True, [])
        return self._proven(d, sender, size, now)

    def _proven(self, d, sender: str, size: int, now: float) -> Verdict:
        """Handshakes are answered here; a message passes only with our
        cookie for its sender. Whatever goes back to an unproven address
        is a Challenge no larger than the datagram it answers."""
        cookies = self.cookies
        t = type(d)
        if t is Hello:
            self.counters["hellos_received"] += 1
            return Verdict(False, self._challenge(sender, size, now))
        if t is Challenge:
            self.counters["challenges_received"] += 1
            return Verdict(False, self._framed(cookies.on_challenge(sender, d.cookie, now)))
        verdict = cookies.check(sender, d.header, now)
        if verdict is None:
            # no proof: a forged source, or a cookie of ours from before a restart
            self.counters["unproven"] += 1
            return Verdict(False, self._challenge(sender, size, now))
        replies = (
            self._framed(cookies.released_to_proven(sender, now)) if cookies.held_bytes else []
        )
        if verdict is PREVIOUS and cookies.renewal_due(sender, now):
            replies += self._challenge(sender, size, now)
        return Verdict(True, replies)

    def _challenge(self, sender: str, size: int, now: float) -> list[bytes]:
        data = encode_handshake(Challenge(self.cookies.offer(sender, now)))
        if len(data) > size:  # never more bytes than we were sent
            self.counters["challenges_withheld"] += 1
            return []
        self.counters["challenges_sent"] += 1
        return [data]

    @staticmethod
    def _framed(held: list[tuple[Header, Body]]) -> list[bytes]:
        return [frame(b, header) for header, b in held]

    # ----------------------------------------------------------------- outbound

    def outbound(self, address: str, bodies: list[Body], now: float) -> list[bytes]:
        """The datagrams that carry `bodies` to `address` now (none while a
        first contact holds them: then perhaps a Hello)."""
        key = self.key
        if key is not None:
            sent = int(now * 1000)
            out = []
            for b in bodies:
                self.seq += 1
                out.append(frame(b, Header(sent=sent, seq=self.seq), key, address))
            return out
        cookies = self.cookies
        header = cookies.header_for(address, now)
        if header is None:
            if cookies.hold(address, bodies, now):
                self.counters["hellos_sent"] += 1
                return [encode_handshake(Hello(cookies.offer(address, now)))]
            return []
        return [frame(b, header) for b in bodies]

    def tick(self, now: float) -> None:
        if self.cookies is not None:
            self.cookies.prune(now)

    def status(self) -> dict:
        extra = self.cookies.counters if self.cookies is not None else {}
        return {**self.counters, **extra}
