"""Replay protection for keyed swarms: every datagram carries, inside its
MAC, the sender's clock (`sent`, milliseconds) and a counter (`seq`) that
starts at the sender's start time in microseconds and grows by one per
datagram, so it never repeats, not even across restarts (a node sends far
fewer than a million datagrams a second).

A datagram is refused when
- `sent` is more than `skew` seconds from our clock (old news, or a clock
  too far off: the documented tolerance);
- `sent` is before this node started (captured before a restart of ours);
- its sender's window has seen its `seq`, or `seq` is more than `window`
  datagrams older than the sender's newest (IPsec/WireGuard-style sliding
  window: reordering within the window is fine);
- its sender is not in the table and `sent` is not newer than the newest
  datagram of any sender the table had to forget (the table is bounded).

So a captured datagram re-sent at any age is refused: within the skew by
the window, after it by the clock. Pure: the clock is an argument.
"""

from __future__ import annotations

from collections import OrderedDict


class _Sender:
    __slots__ = ("top", "mask", "last_sent")

    def __init__(self, seq: int, sent: int) -> None:
        self.top = seq
        self.mask = 1  # bit i: seq top - i seen
        self.last_sent = sent


class ReplayWindow:
    def __init__(
        self, skew: float, started: float, window: int = 4096, max_senders: int = 8192
    ) -> None:
        if skew <= 0 or window < 64 or max_senders < 1:
            raise ValueError("skew must be > 0, window >= 64, max_senders >= 1")
        self.skew_ms = int(skew * 1000)
        self.started_ms = int(started * 1000)
        self.window = window
        self.max_senders = max_senders
        self.forgotten_ms = 0  # newest `sent` of any sender forgotten
        self._senders: OrderedDict[str, _Sender] = OrderedDict()

    def check(self, sender: str, sent: int, seq: int, now: float) -> str | None:
        """None if the datagram is new (and now seen), else why not:
        'stale', 'future', 'before_start', 'replay' or 'too_old'."""
        now_ms = int(now * 1000)
        if sent < now_ms - self.skew_ms:
            return "stale"
        if sent > now_ms + self.skew_ms:
            return "future"
        if sent < self.started_ms:
            return "before_start"
        s = self._senders.get(sender)
        if s is None:
            if sent <= self.forgotten_ms:
                return "stale"
            if len(self._senders) >= self.max_senders:
                _, old = self._senders.popitem(last=False)
                self.forgotten_ms = max(self.forgotten_ms, old.last_sent)
            self._senders[sender] = _Sender(seq, sent)
            return None
        self._senders.move_to_end(sender)
        if seq > s.top:
            shift = seq - s.top
            s.mask = (
                1 if shift >= self.window else ((s.mask << shift) | 1) & ((1 << self.window) - 1)
            )
            s.top = seq
        else:
            back = s.top - seq
            if back >= self.window:
                return "too_old"
            bit = 1 << back
            if s.mask & bit:
                return "replay"
            s.mask |= bit
        s.last_sent = max(s.last_sent, sent)
        return None

    def __len__(self) -> int:
        return len(self._senders)
