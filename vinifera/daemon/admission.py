"""Admission: which datagrams a node reads at all, and in what order it
handles them. Checked before anything is decoded, on the source address only.

Budgets are per source host (an IPv4 address, or an IPv6 network of a
configurable prefix: one machine has a whole /64) and, within a host, per
source port: one host with many ports gets one host's budget, and one port
of a host cannot take all of it. A host may also use only so many ports at
once (each port is a peer the node keeps state for). A datagram costs one
token plus one per 4 KiB on admission, so big datagrams are budgeted by
size, and the work it then made is charged afterwards (`charge`: the
daemon measures it), so an expensive message costs what it costs.

The FairQueue sits between the socket and the handlers: admitted datagrams
wait in one bounded queue per host, served round-robin, so a host that
sends more than its share fills its own queue and loses its own datagrams,
not its neighbours'.

Pure: the clock is an argument.
"""

from __future__ import annotations

import ipaddress
from collections import OrderedDict, deque
from dataclasses import dataclass

# A datagram costs 1 token plus 1 per this many bytes.
BYTES_PER_TOKEN = 4096


def host_of(ip: str, ipv4_prefix: int = 32, ipv6_prefix: int = 64) -> str:
    """The host (network) an IP belongs to for budgets and caps:
    '192.0.2.0/24'-style for a prefix, the address itself for a full one.
    IPv4-mapped IPv6 addresses count as IPv4."""
    addr = ipaddress.ip_address(ip)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    prefix = ipv4_prefix if addr.version == 4 else ipv6_prefix
    if prefix == addr.max_prefixlen:
        return str(addr)
    return str(ipaddress.ip_network(f"{addr}/{prefix}", strict=False))


@dataclass(frozen=True, slots=True)
class Limits:
    # Sustained datagrams per second (a token each, plus one per 4 KiB) and
    # burst, per source host and per source port within it.
    host_rate: float = 2000.0
    host_burst: float = 4000.0
    port_rate: float = 500.0
    port_burst: float = 1000.0
    # Source ports of one host active at once; a port silent for
    # port_idle seconds frees its place.
    ports_per_host: int = 64
    port_idle: float = 60.0
    # What counts as one host.
    ipv4_prefix: int = 32
    ipv6_prefix: int = 64
    # Hosts and ports remembered, all hosts together; the least recently
    # seen is forgotten first. Every unverified source costs one entry of
    # each at most, so a flood from forged sources is bounded in memory
    # (about 5 MiB at these sizes) however many sources it forges.
    max_hosts: int = 4096
    max_ports: int = 16384

    def __post_init__(self) -> None:
        if min(self.host_rate, self.port_rate) <= 0 or min(self.host_burst, self.port_burst) < 1:
            raise ValueError("rates must be > 0 and bursts >= 1")
        if min(self.ports_per_host, self.max_hosts, self.max_ports) < 1 or self.port_idle <= 0:
            raise ValueError("ports_per_host, port_idle, max_hosts and max_ports must be positive")
        if not 8 <= self.ipv4_prefix <= 32 or not 16 <= self.ipv6_prefix <= 128:
            raise ValueError("ipv4_prefix must be in 8-32 and ipv6_prefix in 16-128")


class Bucket:
    """A token bucket (tokens, and when they were counted)."""

    __slots__ = ("tokens", "t")

    def __init__(self, tokens: float, t: float) -> None:
        self.tokens = tokens
        self.t = t

    def refill(self, rate: float, burst: float, now: float) -> None:
        # a clock that goes backwards grants nothing
        self.tokens = min(burst, self.tokens + max(0.0, now - self.t) * rate)
        self.t = now


class _Host(Bucket):
    """A source host's bucket, its ports in the table, and the datagrams
    admitted and refused (for status)."""

    __slots__ = ("ports", "admitted", "refused")

    def __init__(self, tokens: float, t: float) -> None:
        super().__init__(tokens, t)
        self.ports = 0
        self.admitted = 0
        self.refused = 0


class Admission:
    """Per-host and per-port budgets; `admit` says whether to read on."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        # least recently seen first in both
        self._hosts: OrderedDict[str, _Host] = OrderedDict()
        self._ports: OrderedDict[tuple[str, int], Bucket] = OrderedDict()
        self._host_cache: dict[str, str] = {}

    def host(self, ip: str) -> str:
        h = self._host_cache.get(ip)
        if h is None:
            if len(self._host_cache) >= self.limits.max_hosts:
                self._host_cache.clear()
            lim = self.limits
            h = self._host_cache[ip] = host_of(ip, lim.ipv4_prefix, lim.ipv6_prefix)
        return h

    def admit(self, host: str, port: int, size: int, now: float) -> str | None:
        """None if the datagram may be read on; else why not: 'ports' (too
        many ports of its host at once), 'host' or 'port' (over budget)."""
        h = self._host(host, now)
        reason = self._check(h, host, port, 1.0 + size // BYTES_PER_TOKEN, now)
        if reason is None:
            h.admitted += 1
        else:
            h.refused += 1
        return reason

    def _host(self, host: str, now: float) -> _Host:
        lim = self.limits
        h = self._hosts.get(host)
        if h is None:
            if len(self._hosts) >= lim.max_hosts:
                self._hosts.popitem(last=False)  # its ports stay until they age out
            h = self._hosts[host] = _Host(lim.host_burst, now)
        else:
            self._hosts.move_to_end(host)
            h.refill(lim.host_rate, lim.host_burst, now)
        return h

    def _check(self, h: _Host, host: str, port: int, cost: float, now: float) -> str | None:
        lim = self.limits
        key = (host, port)
        p = self._ports.get(key)
        if p is None:
            self._expire(now)
            if h.ports >= lim.ports_per_host:
                return "ports"
            if len(self._ports) >= lim.max_ports:
                self._forget_oldest_port()
            p = self._ports[key] = Bucket(lim.port_burst, now)
            h.ports += 1
        else:
            self._ports.move_to_end(key)
            p.refill(lim.port_rate, lim.port_burst, now)
        if p.tokens < cost:
            return "port"
        if h.tokens < cost:
            return "host"
        p.tokens -= cost
        h.tokens -= cost
        return None

    def charge(self, host: str, port: int, tokens: float) -> None:
        """Charge a source for work its datagram made beyond the token it
        paid on admission (the driver measures it: budgets count work, not
        datagrams). A bucket may go into debt down to minus its burst; the
        source is then refused until it has paid off."""
        lim = self.limits
        h = self._hosts.get(host)
        if h is not None:
            h.tokens = max(-lim.host_burst, h.tokens - tokens)
        p = self._ports.get((host, port))
        if p is not None:
            p.tokens = max(-lim.port_burst, p.tokens - tokens)

    def _forget_oldest_port(self) -> None:
        (host, _), _ = self._ports.popitem(last=False)
        h = self._hosts.get(host)
        if h is not None and h.ports > 0:
            h.ports -= 1

    def _expire(self, now: float) -> None:
        """Forget ports silent for port_idle (the oldest come first)."""
        ports, idle = self._ports, now - self.limits.port_idle
        while ports and next(iter(ports.values())).t < idle:
            self._forget_oldest_port()

    def prune(self, now: float) -> None:
        """Release what a quiet spell made useless: idle ports, and hosts
        without ports whose bucket has filled up again (a new entry would
        be the same)."""
        self._expire(now)
        lim = self.limits
        full_after = lim.host_burst / lim.host_rate
        hosts = self._hosts
        for host in [k for k, h in hosts.items() if not h.ports and now - h.t >= full_after]:
            del hosts[host]
        if not hosts:
            self._host_cache.clear()

    def top_hosts(self, n: int = 16) -> list[dict]:
        """The hosts that sent most, with what was admitted and refused."""
        ranked = sorted(self._hosts.items(), key=lambda kv: -(kv[1].admitted + kv[1].refused))
        return [{"host": k, "admitted": h.admitted, "refused": h.refused} for k, h in ranked[:n]]

    def __len__(self) -> int:
        """Entries held (hosts and ports)."""
        return len(self._hosts) + len(self._ports)


class FairQueue:
    """Bounded per-host queues served round-robin. When the whole is full
    (in datagrams or bytes), a host whose queue is shorter than the longest
    takes its place from the longest: so many hosts, each under its budget,
    cannot fill the queue and shut out one whose own queue is empty (40
    hosts x 256 places used to fill the 8,192 and refuse honest peers)."""

    def __init__(self, per_host: int = 256, total: int = 8192, max_bytes: int = 4 << 20) -> None:
        if min(per_host, total, max_bytes) < 1:
            raise ValueError("per_host, total and max_bytes must be positive")
        self.per_host = per_host
        self.total = total
        self.max_bytes = max_bytes
        self._queues: dict[str, deque] = {}
        self._turns: deque[str] = deque()  # hosts with something queued, in serving order
        # hosts by queue length, and the longest length (maybe stale: it only
        # ever overestimates, and is corrected when looked at)
        self._by_len: list[set[str]] = [set() for _ in range(per_host + 1)]
        self._longest = 0
        self._size = 0
        self._bytes = 0
        self.displaced = 0  # datagrams dropped from the longest queue to make room

    def push(self, host: str, item, size: int = 0) -> bool:
        """Queue `item` (`size` bytes) for `host`; False (dropped) if its
        own queue is full, or the whole is and no queue is longer than its."""
        q = self._queues.get(host)
        n = 0 if q is None else len(q)
        if n >= self.per_host:
            return False
        while self._size >= self.total or self._bytes + size > self.max_bytes:
            victim = self._longest_host()
            if victim is None or len(self._queues[victim]) <= n:
                return False
            self._drop_newest(victim)
        if q is None:
            q = self._queues[host] = deque()
            self._turns.append(host)
        elif n:
            self._by_len[n].discard(host)
        q.append((item, size))
        self._by_len[n + 1].add(host)
        self._longest = max(self._longest, n + 1)
        self._size += 1
        self._bytes += size
        return True

    def pop(self):
        """The next item, one host after another; None when empty."""
        turns, queues = self._turns, self._queues
        while turns:
            host = turns.popleft()
            q = queues[host]
            if q:
                break
            del queues[host]  # emptied by _drop_newest: it left its turn in place
        else:
            return None
        n = len(q)
        item, size = q.popleft()
        self._size -= 1
        self._bytes -= size
        self._by_len[n].discard(host)
        if q:
            self._by_len[n - 1].add(host)
            self._turns.append(host)
        else:
            del self._queues[host]
        return item

    def _longest_host(self) -> str | None:
        by_len = self._by_len
        while self._longest > 0 and not by_len[self._longest]:
            self._longest -= 1
        if self._longest == 0:
            return None
        return next(iter(by_len[self._longest]))

    def _drop_newest(self, host: str) -> None:
        q = self._queues[host]
        n = len(q)
        _, size = q.pop()
        self._size -= 1
        self._bytes -= size
        self.displaced += 1
        self._by_len[n].discard(host)
        if n > 1:
            self._by_len[n - 1].add(host)
        # an emptied queue keeps its turn; pop() skips and removes it

    def __len__(self) -> int:
        return self._size
