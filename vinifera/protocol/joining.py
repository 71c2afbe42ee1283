"""Join bootstrap (docs/protocol.md, "Join bootstrap"): a newcomer sends a
Join to up to `join_fanout` of the addresses it was given; a bootstrap node
it never heard from gets the Join again every period, `join_retries` times,
even once others have let it in (otherwise the first node of a swarm can
stay alone); a node that knows nobody at all starts over."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence

from vinifera.protocol import messages as m
from vinifera.protocol.actions import Send
from vinifera.protocol.config import OverlayConfig
from vinifera.protocol.profile import Profile


class Joining:
    def __init__(self, config: OverlayConfig, rng: random.Random, out: list, counters: dict):
        self.fanout = config.join_fanout
        self.retries_left = config.join_retries
        self.rng = rng
        self.out = out
        self.counters = counters  # the overlay's: joins_sent
        self.bootstrap: list[Hashable] = []
        self.unanswered: set[Hashable] = set()  # bootstrap nodes not heard from yet

    def start(self, me: Profile, bootstrap: Sequence[Hashable]) -> None:
        self.bootstrap = [a for a in bootstrap if a != me.address]
        if self.bootstrap:  # else: the first node of a new overlay
            self._send(me)

    def tick(self, me: Profile, alone: bool) -> None:
        """Once per period; `alone`: we know nobody (no view, no links)."""
        if alone and self.bootstrap:
            self._send(me)
        elif self.unanswered and self.retries_left > 0:
            self.retries_left -= 1
            msg = m.Join(me)
            for addr in sorted(self.unanswered, key=str):
                self.counters["joins_sent"] += 1
                self.out.append(Send(addr, msg))

    def heard(self, addr: Hashable) -> None:
        if self.unanswered:
            self.unanswered.discard(addr)

    def _send(self, me: Profile) -> None:
        k = min(self.fanout, len(self.bootstrap))
        msg = m.Join(me)
        for addr in self.rng.sample(self.bootstrap, k):
            self.counters["joins_sent"] += 1
            self.unanswered.add(addr)
            self.out.append(Send(addr, msg))
