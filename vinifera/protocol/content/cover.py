"""Who an event copy says has the event (ContentConfig.covered).

Each copy carries two short lists of node tokens: the nodes its senders sent
the event to in the tree (and the senders themselves), and those they pushed
it to. A node sends no copy to a node in them. A token is 32 bits of the
node's address: a simulator address (an int) itself, a real one's BLAKE2b
digest, so a copy carries 4 bytes per node rather than an address string.
Two addresses with one token (about 1 in 2**32 per pair) cost at most a
skipped copy that another path usually brings.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from functools import lru_cache
from hashlib import blake2b

TOKEN_BYTES = 4
TOKEN_MASK = (1 << (8 * TOKEN_BYTES)) - 1


@lru_cache(maxsize=4096)
def _digest(address: str) -> int:
    return int.from_bytes(blake2b(address.encode(), digest_size=TOKEN_BYTES).digest(), "big")


def token(address: Hashable) -> int:
    """The node's token: what a copy's covered lists hold."""
    if type(address) is int:
        return address & TOKEN_MASK
    return _digest(str(address))


class Cover:
    """One handling of an event copy: the tokens known to have been sent
    it. `nodes`: what the copy brought, us, and whom we send tree copies to
    now; `pushed`: whom we (and they) pushed it to. A push gives way first
    under load (capacity_push_share), so with covered_pushes_stop_tree off a
    push stops only other pushes. Every copy this handling sends carries
    both lists, closed (cut to the latest `cap`) before the copies leave:
    the lists are shared, not copied, per message."""

    __slots__ = ("nodes", "pushed", "known", "tree")

    def __init__(self, inherited: Sequence[int], pushed: Sequence[int], me: Hashable) -> None:
        self.nodes = [*inherited, token(me)]
        self.pushed = list(pushed)
        self.tree = set(self.nodes)
        self.known = self.tree | set(self.pushed)

    def add(self, targets: Iterable[Hashable]) -> None:
        self._add(targets, self.tree, self.nodes)

    def add_pushed(self, targets: Iterable[Hashable]) -> None:
        self._add(targets, self.known, self.pushed)

    def _add(self, targets: Iterable[Hashable], seen: set[int], into: list[int]) -> None:
        known = self.known
        for t in targets:
            k = token(t)
            if k not in seen:
                seen.add(k)
                known.add(k)
                into.append(k)

    def close(self, cap: int) -> None:
        if len(self.nodes) > cap:
            del self.nodes[: len(self.nodes) - cap]
        if len(self.pushed) > cap:
            del self.pushed[: len(self.pushed) - cap]
