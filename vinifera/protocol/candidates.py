"""A node's candidates for its routing links, beyond the links themselves,
the ring backups and the Cyclon view: the nodes gossip and direct contacts
told it about since its last reselection (the inbox), and the nodes that
left (refused until heard from again).

Gossip is believed only so far: never about ourselves, never older than
`stale_after`, never about a node that left after the evidence was gathered
or that would not answer us (vetting.py), and one source host's gossip may
put at most `tman_message_size` entries into the inbox per reselection.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from vinifera.protocol.config import Durations
from vinifera.protocol.profile import Entry, Profile
from vinifera.protocol.vetting import SourceCaps, Vetting

# Gossiped candidates held between two reselections; direct contacts may use
# twice as much. Bounds memory when many peers write to us at once.
MAX_INBOX = 64


class Candidates:
    def __init__(self, durations: Durations, per_source: int, vetting: Vetting) -> None:
        self.durations = durations
        self.vetting = vetting
        self.transit = durations.transit
        # Candidates learned since the last reselection (gossip and contacts).
        self.inbox: dict[Hashable, Entry] = {}
        # Entries one source host's gossip may add per reselection.
        self.caps = SourceCaps(per_source)
        # address -> when it said it left
        self.departed: dict[Hashable, float] = {}

    def contact(self, entry: Entry) -> None:
        """Direct word from a node: it is back if it had left, and a candidate."""
        addr = entry.profile.address
        if self.departed:
            self.departed.pop(addr, None)
        inbox = self.inbox
        if addr in inbox or len(inbox) < 2 * MAX_INBOX:
            inbox[addr] = entry

    def left(self, now: float, addr: Hashable) -> None:
        self.departed[addr] = now
        self.inbox.pop(addr, None)

    def forget(self, addr: Hashable) -> None:
        self.inbox.pop(addr, None)

    def expire(self, now: float) -> None:
        """Departures older than departed_memory are forgotten."""
        if self.departed:
            memory = self.durations.departed_memory
            for addr, t in list(self.departed.items()):
                if now - t > memory:
                    del self.departed[addr]

    def clear_inbox(self) -> None:
        """A reselection took everything in the inbox into account."""
        self.inbox.clear()
        self.caps.clear()

    # ----------------------------------------------------------------- gossip

    def believable(self, now: float, me: Hashable, entries: Iterable[Entry]) -> list[Entry]:
        """Gossip we believe: not about us (`me`), not stale, not about a node
        that left after the evidence was gathered, not about one that would
        not answer us."""
        limit = now - self.durations.stale_after
        departed = self.departed
        silent = self.vetting.silent
        ok = []
        for e in entries:
            addr = e.profile.address
            if addr == me or e.heard < limit or addr in silent:
                continue
            if departed:
                left = departed.get(addr)
                if left is not None and e.heard <= left:
                    continue
            ok.append(e)
        return ok

    def stash(self, entries: Iterable[Entry], source: Hashable) -> None:
        """Candidates from `source`'s gossip, at most tman_message_size of
        them per source host until the next reselection."""
        inbox = self.inbox
        silent = self.vetting.silent
        caps = self.caps
        for e in entries:
            addr = e.profile.address
            if addr in silent:
                continue
            cur = inbox.get(addr)
            if cur is None:
                if len(inbox) < MAX_INBOX and caps.admit(addr, source):
                    inbox[addr] = e
            elif e.heard > cur.heard:
                inbox[addr] = e

    def stash_wire(
        self, now: float, profiles: tuple[Profile, ...], ages: tuple[float, ...], source: Hashable
    ) -> None:
        """stash of gossip as received (profiles and their ages): an Entry
        is made only for what is kept (most of a T-Man buffer is not)."""
        inbox = self.inbox
        silent = self.vetting.silent
        caps = self.caps
        base = now - self.transit  # as from_wire_entries back-dates
        host: Hashable | None = None  # the source's, found at the first need
        room = 0  # how many more entries the source may add
        taken: list[Hashable] = []  # ... and those it added, counted at the end
        for i in range(len(profiles)):
            p = profiles[i]
            addr = p.address
            if silent and addr in silent:
                continue
            heard = base - ages[i]
            cur = inbox.get(addr)
            if cur is None:
                if len(inbox) < MAX_INBOX:
                    if host is None:
                        host = caps.host_of(source)
                        room = caps.room(host)
                    if caps.counted(addr):
                        inbox[addr] = Entry(p, heard)
                    elif len(taken) < room:
                        taken.append(addr)
                        inbox[addr] = Entry(p, heard)
            elif heard > cur.heard:
                inbox[addr] = Entry(p, heard)
        caps.take(taken, host)

    # ----------------------------------------------------------------- the pool

    def pool(
        self,
        now: float,
        me: Hashable,
        links: Iterable[Entry],
        ring_backups: Iterable[Entry],
        view: Iterable[Entry] | None,
    ) -> dict[Hashable, Entry]:
        """Everything believable we know (links, the inbox, ring backups and,
        unless None, the Cyclon view): the freshest entry of each node, by
        address."""
        limit = now - self.durations.stale_after
        pool: dict[Hashable, Entry] = {}
        sources: tuple[Iterable[Entry], ...] = (links, self.inbox.values(), ring_backups)
        if view is not None:
            sources += (view,)
        for source in sources:
            for e in source:
                if e.heard < limit:
                    continue
                addr = e.profile.address
                cur = pool.get(addr)
                if (
                    cur is None
                    or e.heard > cur.heard
                    or (e.heard == cur.heard and e.profile.seq > cur.profile.seq)
                ):
                    pool[addr] = e
        pool.pop(me, None)
        if self.vetting.silent:
            for addr in self.vetting.silent:
                pool.pop(addr, None)
        if self.departed:
            for addr, left in self.departed.items():
                held = pool.get(addr)
                if held is not None and held.heard <= left:
                    del pool[addr]
        return pool
