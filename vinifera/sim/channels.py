"""How the processes of one parallel simulation (sim/parallel.py) talk:
pickled (tag, payload) messages in length-prefixed frames over socket
pairs made before the fork.

Sends never block. A worker may send several windows ahead of reading
(parallel.LAG), so two workers could both be writing while neither reads;
with blocking sends and full socket buffers they would wait on each other
for ever. Here what a socket does not take waits in the channel and goes
out whenever its worker next waits for anything.
"""

from __future__ import annotations

import contextlib
import pickle
import select
import socket
from collections import deque
from collections.abc import Callable
from typing import Any

HEADER = 8  # frame length, little-endian
READ_SIZE = 1 << 20


class _Channel:
    """This worker's end of the socket pair to one other worker."""

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = sock
        self.out = bytearray()  # frames the socket has not taken yet
        self.inbuf = bytearray()  # bytes read past the last whole frame
        self.frames: deque[bytes] = deque()

    def send(self, frame: bytes) -> None:
        self.out += len(frame).to_bytes(HEADER, "little")
        self.out += frame
        self.flush()

    def flush(self) -> None:
        while self.out:
            try:
                sent = self.sock.send(self.out)
            except BlockingIOError:
                return
            del self.out[:sent]

    def take(self) -> bytes | None:
        """The next whole frame, if one has arrived."""
        if not self.frames:
            self._read()
        return self.frames.popleft() if self.frames else None

    def _read(self) -> None:
        while True:
            try:
                chunk = self.sock.recv(READ_SIZE)
            except BlockingIOError:
                break
            if not chunk:
                raise EOFError("the other worker closed its end")
            self.inbuf += chunk
            if len(chunk) < READ_SIZE:
                break
        buf, pos = self.inbuf, 0
        while len(buf) - pos >= HEADER:
            size = int.from_bytes(buf[pos : pos + HEADER], "little")
            if len(buf) - pos - HEADER < size:
                break
            self.frames.append(bytes(buf[pos + HEADER : pos + HEADER + size]))
            pos += HEADER + size
        del buf[:pos]

    def finish(self) -> None:
        """Send what is still pending, waiting (at most a few seconds) for
        the other end to take it: the worker is about to exit."""
        self.sock.settimeout(5)
        with contextlib.suppress(OSError):
            self.sock.sendall(self.out)
        self.out.clear()


class Peers:
    """Channels to the other workers. `idle`, if set, is called while a
    worker has not answered yet, until it says it has nothing left to do."""

    def __init__(self, socks: dict[int, socket.socket]) -> None:
        self.channels = {j: _Channel(s) for j, s in socks.items()}
        self.idle: Callable[[], bool] | None = None

    def put(self, j: int, tag: str, payload: Any) -> None:
        self.channels[j].send(pickle.dumps((tag, payload), pickle.HIGHEST_PROTOCOL))

    def get(self, j: int) -> Any:
        """The payload of worker j's next message (its failure raised)."""
        tag, payload = pickle.loads(self._wait(j))
        if tag == "error":
            raise RuntimeError(f"worker {j} failed:\n{payload}")
        return payload

    def send_window(self, outbox: list[list]) -> None:
        """Each other worker's entries from the window just run."""
        for j in self.channels:
            self.put(j, "entries", outbox[j])
            outbox[j] = []

    def receive_window(self) -> list:
        """Every other worker's entries from its next window."""
        incoming: list = []
        for j in sorted(self.channels):
            incoming.extend(self.get(j))
        return incoming

    def finish(self) -> None:
        for channel in self.channels.values():
            channel.finish()

    def fail(self, report: str) -> None:
        """Tell every other worker why this one stops."""
        for j in self.channels:
            with contextlib.suppress(OSError):
                self.put(j, "error", report)
        self.finish()

    def _wait(self, j: int) -> bytes:
        channel, channels = self.channels[j], self.channels.values()
        while True:
            for c in channels:
                c.flush()
            try:
                frame = channel.take()
            except EOFError:
                raise RuntimeError(f"worker {j} ended without a word") from None
            if frame is not None:
                return frame
            if self.idle is not None and self.idle():
                continue
            writing = [c.sock for c in channels if c.out]
            select.select([channel.sock], writing, [])


def socket_pairs(workers: int) -> dict[tuple[int, int], socket.socket]:
    """ends[(i, j)]: worker i's socket to worker j."""
    ends = {}
    for i in range(workers):
        for j in range(i + 1, workers):
            ends[(i, j)], ends[(j, i)] = socket.socketpair()
    return ends
