"""Cyclon peer sampling (Voulgaris, Gavidia, van Steen, 2005) as pure state.

The view maps address -> Entry. Ages are kept as `heard` times: the oldest
entry is the one with the smallest `heard`. The shuffle target is removed from
the view when the shuffle starts; if it is dead it never answers and is
forgotten, which is how Cyclon sheds dead nodes without a failure detector.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Iterable

from vinifera.draws import choice, sample
from vinifera.protocol.profile import Entry, fresher
from vinifera.protocol.vetting import SourceCaps


class Cyclon:
    __slots__ = ("address", "view_size", "shuffle_length", "rng", "view", "pending", "caps")

    def __init__(
        self,
        address: Hashable,
        view_size: int,
        shuffle_length: int,
        rng: random.Random,
        caps: SourceCaps | None = None,
    ) -> None:
        self.address = address
        self.view_size = view_size
        self.shuffle_length = shuffle_length
        self.rng = rng
        self.view: dict[Hashable, Entry] = {}
        # target address -> addresses we sent it, replaceable by its reply.
        self.pending: dict[Hashable, list[Hashable]] = {}
        # Entries one source's gossip may hold at once (None: no cap).
        self.caps = caps

    def entries(self) -> list[Entry]:
        return list(self.view.values())

    def start_shuffle(self) -> tuple[Hashable, list[Entry]] | None:
        """Pick the oldest neighbour, remove it, and choose what to send it
        (the caller prepends its own fresh descriptor)."""
        if not self.view:
            return None
        oldest: Entry | None = None  # the first least recently heard (as min())
        for e in self.view.values():
            if oldest is None or e.heard < oldest.heard:
                oldest = e
        assert oldest is not None
        target = oldest.profile.address
        self._drop(target)
        others = list(self.view.values())
        k = min(self.shuffle_length - 1, len(others))
        sent = sample(self.rng, others, k) if k else []
        # Bounded: an unanswered shuffle is forgotten when we shuffle with it again.
        if len(self.pending) >= self.view_size:
            self.pending.pop(next(iter(self.pending)))
        self.pending[target] = [e.profile.address for e in sent]
        return target, sent

    def answer_shuffle(self, sender: Hashable, received: Iterable[Entry]) -> list[Entry]:
        """Serve a shuffle request: reply with a random subset of the view,
        then merge what was received in place of what we replied with."""
        candidates = [e for e in self.view.values() if e.profile.address != sender]
        k = min(self.shuffle_length, len(candidates))
        reply = sample(self.rng, candidates, k) if k else []
        self.merge(received, [e.profile.address for e in reply], sender)
        return reply

    def finish_shuffle(self, sender: Hashable, received: Iterable[Entry]) -> None:
        self.merge(received, self.pending.pop(sender, []), sender)

    def merge(
        self, received: Iterable[Entry], replaceable: list[Hashable], source: Hashable = None
    ) -> None:
        """Take gossip from `source` (None: no cap applies) into free slots or
        in place of `replaceable` entries; what `source` has in the view
        beyond its cap is left out."""
        view = self.view
        caps = self.caps if source is not None else None
        for entry in received:
            addr = entry.profile.address
            if addr == self.address:
                continue
            current = view.get(addr)
            if current is not None:
                if fresher(entry, current):
                    view[addr] = entry
                continue
            # the source's own descriptor is its direct word, not hearsay
            if caps is not None and not caps.admit(addr, None if addr == source else source):
                continue
            if len(view) < self.view_size:
                view[addr] = entry
                continue
            while replaceable:
                victim = replaceable.pop()
                if victim in view:
                    self._drop(victim)
                    view[addr] = entry
                    break
            else:
                if caps is not None:
                    caps.release(addr)

    def insert(self, entry: Entry) -> None:
        """Admit a newcomer (a join): into a free slot, else in place of a
        random entry, so that a newcomer always becomes reachable."""
        addr = entry.profile.address
        if addr == self.address:
            return
        current = self.view.get(addr)
        if current is not None:
            if fresher(entry, current):
                self.view[addr] = entry
            return
        if len(self.view) >= self.view_size:
            self._drop(choice(self.rng, list(self.view)))
        self.view[addr] = entry
        if self.caps is not None:
            self.caps.release(addr)  # direct evidence: counts against no source

    def touch(self, entry: Entry) -> None:
        """Refresh an entry we already hold with direct evidence."""
        addr = entry.profile.address
        current = self.view.get(addr)
        if current is not None:
            if fresher(entry, current):
                self.view[addr] = entry
            if self.caps is not None:
                self.caps.release(addr)

    def forget(self, address: Hashable) -> None:
        self._drop(address)
        self.pending.pop(address, None)

    def _drop(self, address: Hashable) -> None:
        if self.view.pop(address, None) is not None and self.caps is not None:
            self.caps.release(address)
