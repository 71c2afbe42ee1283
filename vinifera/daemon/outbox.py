"""Datagrams the socket will not take yet: a bounded queue by priority.

A datagram goes out at once while the socket's send buffer has room.
Once it is full (BlockingIOError), datagrams wait here, served control
first, then tree copies, then pushes; when the queue is full a datagram
of a lower class is dropped to make room, else the newcomer is. Pushes
go first because the tree reaches every subscriber without them (they
only make deliveries earlier), the same order as the simulator's
capacity model (ContentConfig.capacity_push_share). The receive loop
never waits for the socket, so a busy link does not stall handling.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable

import trio

# Priority classes, first served first; a message kind's class by its name.
CONTROL, TREE, PUSH = 0, 1, 2
CLASS_NAMES = ("control", "tree", "push")
CLASS_OF_KIND = {"EventMessage": TREE, "EventPush": PUSH}
# Datagrams waiting at most (about 1.2 MB of 1,200-byte datagrams).
CAPACITY = 1024


class Outbox:
    def __init__(
        self,
        sock,
        on_sent: Callable[[str, int], None],
        counters: Counter,
        capacity: int = CAPACITY,
    ) -> None:
        self._sock = sock
        self._on_sent = on_sent  # (kind, bytes) of each datagram the socket took
        self.counters = counters  # send_errors, outbox_dropped_<class>, outbox_queued
        self.capacity = capacity
        self._queues: tuple[deque, deque, deque] = (deque(), deque(), deque())
        self._waiting = trio.Event()  # set while something is queued

    def __len__(self) -> int:
        return sum(len(q) for q in self._queues)

    def send(self, data: bytes, dest, kind: str) -> None:
        """Send now, or queue behind what waits already (order kept)."""
        if self._waiting.is_set() or not self._try(data, dest, kind):
            self._queue(CLASS_OF_KIND.get(kind, CONTROL), (data, dest, kind))

    def _try(self, data: bytes, dest, kind: str) -> bool:
        """One sendto; False if the socket has no room (an error counts as done)."""
        try:
            self._sock.sendto(data, dest)
        except BlockingIOError:
            return False
        except OSError:
            self.counters["send_errors"] += 1
        else:
            self._on_sent(kind, len(data))
        return True

    def _queue(self, cls: int, item: tuple) -> None:
        if len(self) >= self.capacity:
            lower = next((c for c in (PUSH, TREE) if c > cls and self._queues[c]), None)
            if lower is None:
                self.counters["outbox_dropped_" + CLASS_NAMES[cls]] += 1
                return
            self._queues[lower].pop()  # the newest of the lowest class waiting
            self.counters["outbox_dropped_" + CLASS_NAMES[lower]] += 1
        self._queues[cls].append(item)
        self.counters["outbox_queued"] += 1
        self._waiting.set()

    async def drain(self) -> None:
        """Wait until everything queued is sent (when leaving)."""
        while self._waiting.is_set():
            await trio.lowlevel.wait_writable(self._sock)
            self._flush()

    async def serve(self) -> None:
        """A task: send what waits as the socket makes room, first class first."""
        while True:
            await self._waiting.wait()
            await trio.lowlevel.wait_writable(self._sock)
            self._flush()

    def _flush(self) -> None:
        for q in self._queues:
            while q:
                if not self._try(*q[0]):
                    return
                q.popleft()
        self._waiting = trio.Event()
