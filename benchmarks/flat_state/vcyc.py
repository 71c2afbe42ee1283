"""Cyclon's view as parallel unboxed vectors (librt.vecs) instead of a dict
of Entry objects: a prototype for benchmarks/flat_state.py, not the
project's code. Same rules as vinifera/protocol/cyclon.py (oldest target,
random samples, merge into free slots or in place of what was sent) but
without source caps, and a view kept in no particular order, so its draws
differ from Cyclon's: it measures the layout, not the same run."""

from __future__ import annotations

from random import Random

from librt.vecs import append, vec
from mypy_extensions import i64
from vdraws import below


class Batch:
    """Entries in flight: parallel vectors plus the profiles."""

    def __init__(self) -> None:
        self.addrs: vec[i64] = vec[i64]()
        self.heard: vec[float] = vec[float]()
        self.seqs: vec[i64] = vec[i64]()
        self.profiles: list[object] = []

    def add(self, addr: i64, heard: float, seq: i64, profile: object) -> None:
        self.addrs = append(self.addrs, addr)
        self.heard = append(self.heard, heard)
        self.seqs = append(self.seqs, seq)
        self.profiles.append(profile)


class VCyclon(Batch):
    """The view: a Batch (add puts an entry in) and Cyclon's state."""

    def __init__(self, address: i64, view_size: i64, shuffle_length: i64, rng: Random) -> None:
        super().__init__()
        self.address = address
        self.view_size = view_size
        self.shuffle_length = shuffle_length
        self.rng = rng
        self.pending: dict[i64, vec[i64]] = {}

    def find(self, addr: i64) -> i64:
        addrs = self.addrs
        for i in range(len(addrs)):
            if addrs[i] == addr:
                return i
        return -1

    def _drop_at(self, i: i64) -> None:
        last = len(self.addrs) - 1
        if i != last:
            self.addrs[i] = self.addrs[last]
            self.heard[i] = self.heard[last]
            self.seqs[i] = self.seqs[last]
            self.profiles[i] = self.profiles[last]
        self.addrs = self.addrs[:last]
        self.heard = self.heard[:last]
        self.seqs = self.seqs[:last]
        self.profiles.pop()

    def _sample(self, k: i64, skip: i64) -> Batch:
        """k random view entries (not address `skip`)."""
        idx: vec[i64] = vec[i64]()
        for i in range(len(self.addrs)):
            if self.addrs[i] != skip:
                idx = append(idx, i)
        out = Batch()
        n = len(idx)
        for j in range(k):
            r = below(self.rng, n - j)
            i = idx[r]
            idx[r] = idx[n - j - 1]
            out.add(self.addrs[i], self.heard[i], self.seqs[i], self.profiles[i])
        return out

    def start_shuffle(self) -> tuple[i64, Batch]:
        heard = self.heard
        best: i64 = 0
        for i in range(1, len(heard)):
            if heard[i] < heard[best]:
                best = i
        target = self.addrs[best]
        self._drop_at(best)
        k = min(self.shuffle_length - 1, len(self.addrs))
        sent = self._sample(k, -1)
        if len(self.pending) >= self.view_size:
            self.pending.pop(next(iter(self.pending)))
        self.pending[target] = sent.addrs
        return target, sent

    def answer_shuffle(self, sender: i64, received: Batch) -> Batch:
        n = len(self.addrs) - (1 if self.find(sender) >= 0 else 0)
        reply = self._sample(min(self.shuffle_length, n), sender)
        self.merge(received, reply.addrs)
        return reply

    def finish_shuffle(self, sender: i64, received: Batch) -> None:
        replaceable = self.pending.pop(sender, vec[i64]())
        self.merge(received, replaceable)

    def merge(self, received: Batch, replaceable: vec[i64]) -> None:
        left = len(replaceable)
        for j in range(len(received.addrs)):
            addr = received.addrs[j]
            if addr == self.address:
                continue
            i = self.find(addr)
            h = received.heard[j]
            if i >= 0:
                if h > self.heard[i] or (h == self.heard[i] and received.seqs[j] > self.seqs[i]):
                    self.heard[i] = h
                    self.seqs[i] = received.seqs[j]
                    self.profiles[i] = received.profiles[j]
                continue
            if len(self.addrs) < self.view_size:
                self.add(addr, h, received.seqs[j], received.profiles[j])
                continue
            while left > 0:
                left -= 1
                v = self.find(replaceable[left])
                if v >= 0:
                    self._drop_at(v)
                    self.add(addr, h, received.seqs[j], received.profiles[j])
                    break
