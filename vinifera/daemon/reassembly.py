"""Putting fragmented messages together again (wire/fragments.py).

Only fragments that passed the gate (address proof or replay window) come
here, so every partial message belongs to a proven sender. Still bounded:
at most `max_partial` messages in progress and `max_bytes` held in all (the
oldest go first), each for at most `hold_for` seconds; a message is
complete when every part has arrived, in any order, each once.

Pure: the clock is an argument.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable

from vinifera.wire.fragments import Fragment


class _Partial:
    __slots__ = ("kind", "items", "parts", "size", "since")

    def __init__(self, f: Fragment, now: float) -> None:
        self.kind = f.kind
        self.items = f.items
        self.parts: list[bytes | None] = [None] * f.count
        self.size = 0
        self.since = now


class Reassembly:
    def __init__(self, hold_for: float, max_partial: int = 256, max_bytes: int = 4 << 20) -> None:
        self.hold_for = hold_for
        self.max_partial = max_partial
        self.max_bytes = max_bytes
        self.held_bytes = 0
        self._partial: OrderedDict[tuple[Hashable, int], _Partial] = OrderedDict()
        self.counters = {"fragments_received": 0, "reassembled": 0, "fragments_dropped": 0}

    def add(self, sender: Hashable, f: Fragment, now: float) -> tuple[int, int, bytes] | None:
        """The (kind, items, body) that `f` completes, or None for now."""
        self.counters["fragments_received"] += 1
        key = (sender, f.msg_id)
        p = self._partial.get(key)
        if p is None:
            self.prune(now)
            while self._partial and len(self._partial) >= self.max_partial:
                self._drop_oldest()
            p = self._partial[key] = _Partial(f, now)
        elif (p.kind, p.items, len(p.parts)) != (f.kind, f.items, f.count):
            self.counters["fragments_dropped"] += 1  # parts that do not agree: none of it
            self._forget(key)
            return None
        if p.parts[f.index] is not None:
            self.counters["fragments_dropped"] += 1  # a duplicate
            return None
        while self._partial and self.held_bytes + len(f.chunk) > self.max_bytes:
            if next(iter(self._partial)) == key:
                self.counters["fragments_dropped"] += 1
                self._forget(key)
                return None
            self._drop_oldest()
        p.parts[f.index] = f.chunk
        p.size += len(f.chunk)
        self.held_bytes += len(f.chunk)
        if any(part is None for part in p.parts):
            return None
        self._forget(key)
        self.counters["reassembled"] += 1
        return p.kind, p.items, b"".join(p.parts)  # type: ignore[arg-type]

    def prune(self, now: float) -> None:
        """Forget messages whose parts did not all come within hold_for."""
        late = now - self.hold_for
        while self._partial and next(iter(self._partial.values())).since < late:
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        key = next(iter(self._partial))
        self.counters["fragments_dropped"] += sum(x is not None for x in self._partial[key].parts)
        self._forget(key)

    def _forget(self, key) -> None:
        p = self._partial.pop(key)
        self.held_bytes -= p.size

    def __len__(self) -> int:
        return len(self._partial)
