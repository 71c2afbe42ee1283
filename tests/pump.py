"""The one in-memory network of the protocol tests: sans-IO nodes (dict
address -> Node) and a FIFO of their sends, delivered at the current time.

With `wire=WirePath(...)` every message crosses as the daemon sends it:
encoded once (wire.encode_sends), fragmented to the path's datagram size
(wire.fragments), framed and tagged with the network key if any, decoded by
the receiver's own Decoder and reassembled (daemon/reassembly.py). The
protocol cannot tell the two apart: tests/test_wire_pair.py checks that.
The simulator (vinifera/sim) is the network of thousands; this one is for
tests that look at single messages.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable

from vinifera.daemon.reassembly import Reassembly
from vinifera.protocol.actions import Deliver, Send
from vinifera.schema import Schema
from vinifera.wire import Decoder, encode_sends, frame
from vinifera.wire.fragments import Fragment, split_body
from vinifera.wire.netkey import NetworkKey


class WirePath:
    """What a message crosses between two nodes: encoding, fragments of at
    most `max_datagram` bytes, the key's tags, each receiver's decoder."""

    def __init__(
        self, schema: Schema, max_datagram: int = 1200, key: NetworkKey | None = None
    ) -> None:
        self.schema = schema
        self.max_datagram = max_datagram
        self.key = key
        self.decoders: dict[Hashable, Decoder] = {}
        self.reassembly: dict[Hashable, Reassembly] = {}
        self.datagrams: Counter[str] = Counter()  # by message kind
        self.largest = 0  # bytes of the largest datagram sent
        self._msg_id = 0

    def cross(self, send: Send, src: Hashable, now: float) -> list:
        """The messages the receiver decodes from `send`'s datagrams (one,
        or none while fragments are missing)."""
        ((_dest, bodies),) = encode_sends([send])
        assert bodies is not None, f"{type(send.message).__name__} does not fit a datagram"
        dest = send.dest
        decoder = self.decoders.get(dest)
        if decoder is None:
            decoder = self.decoders[dest] = Decoder(self.schema, self.key, str(dest))
            self.reassembly[dest] = Reassembly(hold_for=2.0)
        out = []
        for b in bodies:
            parts = split_body(b, self._msg_id, self.max_datagram)
            self._msg_id += 1
            for part in parts:
                data = frame(part, key=self.key, dest=str(dest))
                assert len(data) <= self.max_datagram
                self.largest = max(self.largest, len(data))
                self.datagrams[type(send.message).__name__] += 1
                msg = decoder.decode_untrusted(data)
                if type(msg) is Fragment:
                    whole = self.reassembly[dest].add(src, msg, now)
                    if whole is None:
                        continue
                    msg = decoder.decode_body_untrusted(*whole)
                out.append(msg)
        return out


class Pump:
    """`nodes` and the messages between them. `down`: addresses that hear
    nothing; a node that left hears nothing either. `deliveries`: (node,
    eid) for every Deliver action, `hops`: eid -> node -> hops of its first."""

    def __init__(
        self,
        nodes: dict | None = None,
        now: float = 0.0,
        down: Iterable[Hashable] = (),
        wire: WirePath | None = None,
    ) -> None:
        self.nodes: dict = nodes if nodes is not None else {}
        self.now = now
        self.down = set(down)
        self.wire = wire
        self.deliveries: list[tuple[Hashable, int]] = []
        self.hops: dict[int, dict[Hashable, int]] = {}
        self.handled = 0

    def run(self, actions, origin: Hashable | None = None) -> None:
        """Deliver `actions` (of the node at `origin`) and all they cause,
        breadth-first, at the current time."""
        queue = [(origin, a) for a in actions]
        budget = self.handled + 200_000
        while queue:
            # messages that never end in one instant: fail, do not hang
            assert self.handled < budget, "messages chase each other without end"
            src, a = queue.pop(0)
            if isinstance(a, Deliver):
                self.deliveries.append((src, a.eid))
                self.hops.setdefault(a.eid, {}).setdefault(src, a.hops)
                continue
            if not isinstance(a, Send) or not self._hears(a.dest):
                continue
            self.handled += 1
            node = self.nodes[a.dest]
            messages = [a.message] if self.wire is None else self.wire.cross(a, src, self.now)
            for msg in messages:
                queue.extend((a.dest, x) for x in node.receive(self.now, msg))

    def _hears(self, addr: Hashable) -> bool:
        node = self.nodes.get(addr)
        return node is not None and addr not in self.down and node.alive

    def tick_all(self) -> None:
        for addr, node in self.nodes.items():
            if addr not in self.down:
                self.run(node.tick(self.now), addr)

    def rounds(self, k: int, period: float = 1.0) -> None:
        for _ in range(k):
            self.now += period
            self.tick_all()

    def got(self, eid: int) -> list:
        return [a for a, e in self.deliveries if e == eid]
