"""Which gossiped nodes to believe: a node learns of others through gossip,
which anyone can fill with made-up profiles, so (Kademlia's ping before
insert) it only links to nodes that have answered it, and forgets for a
while those it asked that never answered.

- `answered`: the last direct word from each address (any message from it;
  a driver passes only messages whose sender proved its address). A routing
  link goes only to an address that answered within `verify_memory`; a
  better candidate that has not gets a trial ping first.
- `asked`: requests sent (shuffles, trial pings) not yet answered. An
  address that never answered us and leaves a request unanswered for
  `answer_within` is `silent` for `silent_memory`: gossip about it is
  ignored and it leaves the view and the candidates. Nodes that did answer
  before are not punished for one lost message.
- `SourceCaps`: how many entries one source host's gossip may put into a
  table at once (the Cyclon view, the candidates of one reselection).

Pure state: times are arguments, nothing here sends anything.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable


def same_address(address: Hashable) -> Hashable:
    """The default host of an address: itself (the simulator: one node, one host)."""
    return address


class Vetting:
    __slots__ = ("verify_memory", "answer_within", "silent_memory", "answered", "asked", "silent")

    def __init__(self, verify_memory: float, answer_within: float, silent_memory: float) -> None:
        self.verify_memory = verify_memory
        self.answer_within = answer_within
        self.silent_memory = silent_memory
        # address -> time of its last direct word, oldest first: a plain dict
        # kept in that order by re-inserting (heard runs on every message; an
        # OrderedDict's move_to_end cost more than plain dict operations)
        self.answered: dict[Hashable, float] = {}
        self.asked: dict[Hashable, float] = {}  # address -> when first asked, unanswered
        self.silent: dict[Hashable, float] = {}  # address -> silent until

    def heard(self, address: Hashable, now: float) -> None:
        answered = self.answered
        if address in answered:  # (not pop(): compiled, a method call by name)
            del answered[address]
        answered[address] = now
        if self.asked:
            self.asked.pop(address, None)
        if self.silent:
            self.silent.pop(address, None)

    def ask(self, address: Hashable, now: float) -> bool:
        """Note a request that wants an answer; False if one is pending."""
        if address in self.asked:
            return False
        self.asked[address] = now
        return True

    def verified(self, address: Hashable, now: float) -> bool:
        t = self.answered.get(address)
        return t is not None and t >= now - self.verify_memory

    def is_silent(self, address: Hashable) -> bool:
        return address in self.silent

    def tick(self, now: float) -> list[Hashable]:
        """Expire old records; returns the addresses that just fell silent."""
        answered = self.answered
        limit = now - self.verify_memory
        old = []
        for addr, t in answered.items():
            if t >= limit:
                break
            old.append(addr)
        for addr in old:
            del answered[addr]
        if self.silent:
            for addr in [a for a, until in self.silent.items() if until <= now]:
                del self.silent[addr]
        fallen = []
        if self.asked:
            late = now - self.answer_within
            for addr in [a for a, t in self.asked.items() if t <= late]:
                del self.asked[addr]
                if addr not in answered:  # never answered: nothing says it exists
                    self.silent[addr] = now + self.silent_memory
                    fallen.append(addr)
        return fallen


class SourceCaps:
    """Counts, per source host, the entries its gossip has in a table."""

    __slots__ = ("cap", "host_of", "_counts", "_origin")

    def __init__(self, cap: int, host_of: Callable[[Hashable], Hashable] = same_address) -> None:
        self.cap = cap
        self.host_of = host_of
        self._counts: dict[Hashable, int] = {}
        self._origin: dict[Hashable, Hashable] = {}  # entry address -> source host

    def admit(self, address: Hashable, source: Hashable | None) -> bool:
        """Room for an entry from `source` (an address; None: direct evidence,
        always room)? Counts it if so; an entry already held keeps its place."""
        if source is None:
            self.release(address)
            return True
        return address in self._origin or self.admit_from(address, self.host_of(source))

    def admit_from(self, address: Hashable, host: Hashable) -> bool:
        """admit, for gossip from a source whose host is known (a message's
        entries share one source: its host is found once)."""
        if address in self._origin:
            return True
        n = self._counts.get(host, 0)
        if n >= self.cap:
            return False
        self._counts[host] = n + 1
        self._origin[address] = host
        return True

    def room(self, host: Hashable) -> int:
        """How many more entries `host`'s gossip may add now."""
        return self.cap - self._counts.get(host, 0)

    def counted(self, address: Hashable) -> bool:
        """Whether the entry at `address` is counted already (it keeps its place)."""
        return address in self._origin

    def take(self, addresses: list[Hashable], host: Hashable) -> None:
        """Count entries admitted from `host`'s gossip, none of them counted
        yet and no more than room(host): admit_from for each, one count
        update for all (a message's entries share one source)."""
        if addresses:
            origin = self._origin
            for address in addresses:
                origin[address] = host
            self._counts[host] = self._counts.get(host, 0) + len(addresses)

    def release(self, address: Hashable) -> None:
        """The entry left the table, or was confirmed directly."""
        host = self._origin.pop(address, None)
        if host is not None:
            n = self._counts[host] - 1
            if n:
                self._counts[host] = n
            else:
                del self._counts[host]

    def clear(self) -> None:
        self._counts.clear()
        self._origin.clear()

    def __len__(self) -> int:
        return len(self._origin)
