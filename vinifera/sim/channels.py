"""How the processes of one parallel simulation (sim/parallel.py) talk:
pickled (tag, payload) messages in length-prefixed frames over socket
pairs made before the fork, each channel's frames pickled with one memo
(_Encoder).

Sends never block. A worker may send several windows ahead of reading
(parallel.LAG), so two workers could both be writing while neither reads;
with blocking sends and full socket buffers they would wait on each other
for ever. Here what a socket does not take waits in the channel and goes
out whenever its worker next waits for anything. Messages are asked for
by tag (Peers.get): a worker's window entries and its round reports are
two queues, read in order each, so that one can be taken later than the
other.
"""

from __future__ import annotations

import contextlib
import io
import pickle
import select
import socket
from collections import defaultdict, deque
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
        # read into this, not into a new READ_SIZE object per recv(): that
        # allocation cost more than the read (about 20 us a call)
        self._chunk = bytearray(READ_SIZE)
        self._view = memoryview(self._chunk)

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
        """Whole frames into self.frames; EOFError once the other end has
        closed and every frame it sent has been taken."""
        closed = False
        while True:
            try:
                n = self.sock.recv_into(self._chunk)
            except BlockingIOError:
                break
            if not n:
                closed = True
                break
            self.inbuf += self._view[:n]
            if n < READ_SIZE:
                break
        buf, pos = self.inbuf, 0
        while len(buf) - pos >= HEADER:
            size = int.from_bytes(buf[pos : pos + HEADER], "little")
            if len(buf) - pos - HEADER < size:
                break
            self.frames.append(bytes(buf[pos + HEADER : pos + HEADER + size]))
            pos += HEADER + size
        del buf[:pos]
        if closed and not self.frames:
            raise EOFError("the other worker closed its end")

    def finish(self) -> None:
        """Send what is still pending, waiting (at most a few seconds) for
        the other end to take it: the worker is about to exit."""
        self.sock.settimeout(5)
        with contextlib.suppress(OSError):
            self.sock.sendall(self.out)
        self.out.clear()


# Frames a channel's pickle memo spans before both ends start afresh:
# about ten rounds of the trace's 201 windows. Against 256 (1.3 rounds),
# profiles go as references for longer: 16% less decoding over the first
# 48 h on two workers, for 14 MB more; 8192 gained nothing
# (docs/decisions/simulator-speed.md, "A longer pickle memo").
MEMO_FRAMES = 2048
_FRESH, _GOING, _ALONE = b"\x01", b"\x00", b"\x02"


class _Encoder:
    """Pickles one channel's frames with one memo, so that an object sent
    again (a profile in T-Man buffer after buffer) goes as a reference to
    its first copy, not through its reducer again. The memo keeps what it
    holds alive, so it is cleared every MEMO_FRAMES frames; the first byte
    of a frame says whether it starts a memo (or is pickled alone). What
    goes through the memo must never change once sent, or a reference
    would carry its old state: protocol messages and queue entries."""

    def __init__(self) -> None:
        self.buf = io.BytesIO()
        self.pickler = pickle.Pickler(self.buf, pickle.HIGHEST_PROTOCOL)
        self.frames = 0

    def encode(self, obj: Any, memo: bool = True) -> bytes:
        """`memo`: False for what may hold objects the sender changes later
        (reports and records, a round's end): pickled alone."""
        if not memo:
            return _ALONE + pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
        buf = self.buf
        buf.seek(0)
        buf.truncate()
        if self.frames % MEMO_FRAMES == 0:
            self.pickler.clear_memo()
            buf.write(_FRESH)
        else:
            buf.write(_GOING)
        self.frames += 1
        self.pickler.dump(obj)
        return buf.getvalue()


class _Decoder:
    """The other end of an _Encoder: one unpickler (and so one memo) per
    memo the frames say they span. It reads the current frame through
    this object's read methods."""

    def __init__(self) -> None:
        self.frame = io.BytesIO()
        self.unpickler: pickle.Unpickler | None = None

    def decode(self, frame: bytes) -> Any:
        first = frame[:1]
        if first == _ALONE:
            return pickle.loads(memoryview(frame)[1:])
        if first == _FRESH:
            self.unpickler = pickle.Unpickler(self)
        elif self.unpickler is None:  # an _Encoder's first frame starts its memo
            raise ValueError("a frame that continues a memo, before any started one")
        self.frame = io.BytesIO(frame)
        self.frame.seek(1)
        return self.unpickler.load()

    def read(self, size: int = -1) -> bytes:
        return self.frame.read(size)

    def readinto(self, b) -> int:
        return self.frame.readinto(b)

    def readline(self) -> bytes:
        return self.frame.readline()


class Peers:
    """Channels to the other workers. `idle`, if set, is called while a
    worker has not answered yet, until it says it has nothing left to do."""

    def __init__(self, socks: dict[int, socket.socket]) -> None:
        self.channels = {j: _Channel(s) for j, s in socks.items()}
        self.encoders = {j: _Encoder() for j in socks}
        self.decoders = {j: _Decoder() for j in socks}
        self.idle: Callable[[], bool] | None = None
        # per worker, what has arrived and not been asked for yet, by tag
        self._inbox: dict[int, defaultdict[str, deque]] = {j: defaultdict(deque) for j in socks}
        self._ended: set[int] = set()  # workers whose end of the socket closed

    def put(self, j: int, tag: str, payload: Any) -> None:
        # only the windows' entries (immutable messages) share a memo
        self.channels[j].send(self.encoders[j].encode((tag, payload), tag == "entries"))

    def get(self, j: int, tag: str = "entries") -> Any:
        """The payload of worker j's next message tagged `tag`, waiting for
        it; its messages of other tags keep for their own get (a failure
        is raised at once)."""
        waiting = self._inbox[j][tag]
        if not waiting:
            self._wait(j, waiting)
        return waiting.popleft()

    def has(self, j: int, tag: str) -> bool:
        """Whether worker j's next message tagged `tag` is here (what has
        arrived is read; never waits)."""
        waiting = self._inbox[j][tag]
        if not waiting:
            self._receive(j)
        return bool(waiting)

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

    def _receive(self, j: int) -> None:
        """Decode whatever whole frames worker j has sent, in order (the
        entries' memo needs it), into the inbox."""
        channel, decoder, inbox = self.channels[j], self.decoders[j], self._inbox[j]
        while True:
            try:
                frame = channel.take()
            except EOFError:  # what it sent before may still be asked for
                self._ended.add(j)
                return
            if frame is None:
                return
            tag, payload = decoder.decode(frame)
            if tag == "error":
                raise RuntimeError(f"worker {j} failed:\n{payload}")
            inbox[tag].append(payload)

    def _wait(self, j: int, waiting: deque) -> None:
        """Until `waiting` (one of worker j's inbox queues) holds something."""
        channel, channels = self.channels[j], self.channels.values()
        while True:
            for c in channels:
                c.flush()
            self._receive(j)
            if waiting:
                return
            if j in self._ended:
                raise RuntimeError(f"worker {j} ended without a word")
            if self.idle is not None:
                more = self.idle()
                if waiting:  # the idle work read it
                    return
                if more:
                    continue
            # poll, not select: select refuses descriptors past 1,024, which
            # 20-odd workers' socket pairs pass
            poller = select.poll()
            for c in channels:
                if c.out:
                    poller.register(c.sock, select.POLLOUT)
            poller.register(channel.sock, select.POLLIN | (select.POLLOUT if channel.out else 0))
            poller.poll()


def socket_pairs(workers: int) -> dict[tuple[int, int], socket.socket]:
    """ends[(i, j)]: worker i's socket to worker j."""
    ends = {}
    for i in range(workers):
        for j in range(i + 1, workers):
            ends[(i, j)], ends[(j, i)] = socket.socketpair()
    return ends
