"""Admission: which datagrams a node reads at all, and in what order it
handles them. Checked before anything is decoded, on the source address only.

Budgets are per source host (an IPv4 address, or an IPv6 network of a
configurable prefix: one machine has a whole /64) and, within a host, per
source port: one host with many ports gets one host's budget, and one port
of a host cannot take all of it. A host may also use only so many ports at
once (each port is a peer the node keeps state for). A datagram costs one
token plus one per 4 KiB, so big datagrams are budgeted by size.

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

from vinifera.daemon.ratelimit import PeerRateLimiter

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
    # Hosts (and ports) remembered; the least recently seen is forgotten.
    max_hosts: int = 4096

    def __post_init__(self) -> None:
        if min(self.host_rate, self.port_rate) <= 0 or min(self.host_burst, self.port_burst) < 1:
            raise ValueError("rates must be > 0 and bursts >= 1")
        if self.ports_per_host < 1 or self.port_idle <= 0 or self.max_hosts < 1:
            raise ValueError("ports_per_host, port_idle and max_hosts must be positive")
        if not 8 <= self.ipv4_prefix <= 32 or not 16 <= self.ipv6_prefix <= 128:
            raise ValueError("ipv4_prefix must be in 8-32 and ipv6_prefix in 16-128")


class Admission:
    """Per-host and per-port budgets; `admit` says whether to read on."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._hosts = PeerRateLimiter(limits.host_rate, limits.host_burst, limits.max_hosts)
        self._ports = PeerRateLimiter(
            limits.port_rate, limits.port_burst, limits.max_hosts * limits.ports_per_host
        )
        # host -> port -> last seen, least recently seen first
        self._active: OrderedDict[str, OrderedDict[int, float]] = OrderedDict()
        self._host_cache: dict[str, str] = {}
        # host -> [admitted, refused] datagrams, for status: who sends what
        self.traffic: OrderedDict[str, list[int]] = OrderedDict()

    def host(self, ip: str) -> str:
        h = self._host_cache.get(ip)
        if h is None:
            if len(self._host_cache) >= 4 * self.limits.max_hosts:
                self._host_cache.clear()
            lim = self.limits
            h = self._host_cache[ip] = host_of(ip, lim.ipv4_prefix, lim.ipv6_prefix)
        return h

    def admit(self, host: str, port: int, size: int, now: float) -> str | None:
        """None if the datagram may be read on; else why not: 'ports' (too
        many ports of its host at once), 'host' or 'port' (over budget)."""
        reason = self._check(host, port, size, now)
        seen = self.traffic.get(host)
        if seen is None:
            if len(self.traffic) >= self.limits.max_hosts:
                self.traffic.popitem(last=False)
            seen = self.traffic[host] = [0, 0]
        else:
            self.traffic.move_to_end(host)
        seen[reason is not None] += 1
        return reason

    def _check(self, host: str, port: int, size: int, now: float) -> str | None:
        if not self._port_active(host, port, now):
            return "ports"
        cost = 1.0 + size // BYTES_PER_TOKEN
        if not self._ports.allow((host, port), now, cost):
            return "port"
        if not self._hosts.allow(host, now, cost):
            return "host"
        return None

    def _port_active(self, host: str, port: int, now: float) -> bool:
        lim = self.limits
        ports = self._active.get(host)
        if ports is None:
            if len(self._active) >= lim.max_hosts:
                self._active.popitem(last=False)
            ports = self._active[host] = OrderedDict()
        else:
            self._active.move_to_end(host)
        if port in ports:
            ports[port] = now
            ports.move_to_end(port)
            return True
        idle = now - lim.port_idle
        while ports and next(iter(ports.values())) < idle:
            ports.popitem(last=False)
        if len(ports) >= lim.ports_per_host:
            return False
        ports[port] = now
        return True

    def top_hosts(self, n: int = 16) -> list[dict]:
        """The hosts that sent most, with what was admitted and refused."""
        ranked = sorted(self.traffic.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))[:n]
        return [{"host": h, "admitted": a, "refused": r} for h, (a, r) in ranked]


class FairQueue:
    """Bounded per-host queues served round-robin."""

    def __init__(self, per_host: int = 256, total: int = 8192) -> None:
        self.per_host = per_host
        self.total = total
        self._queues: dict[str, deque] = {}
        self._turns: deque[str] = deque()  # hosts with something queued, in serving order
        self._size = 0

    def push(self, host: str, item) -> bool:
        """Queue `item` for `host`; False (dropped) if its queue or the
        whole is full."""
        q = self._queues.get(host)
        if q is None:
            if self._size >= self.total:
                return False
            q = self._queues[host] = deque()
            self._turns.append(host)
        elif len(q) >= self.per_host or self._size >= self.total:
            return False
        q.append(item)
        self._size += 1
        return True

    def pop(self):
        """The next item, one host after another; None when empty."""
        if not self._turns:
            return None
        host = self._turns.popleft()
        q = self._queues[host]
        item = q.popleft()
        self._size -= 1
        if q:
            self._turns.append(host)
        else:
            del self._queues[host]
        return item

    def __len__(self) -> int:
        return self._size
