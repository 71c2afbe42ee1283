"""What one daemon needs to run, validated once, and how it maps onto the
protocol configuration."""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from vinifera.daemon.admission import Limits, host_of
from vinifera.daemon.control import ControlToken, check_control
from vinifera.daemon.metrics import parse_metrics_address
from vinifera.daemon.signing import SealPolicy, SigningKey
from vinifera.errors import ViniferaError
from vinifera.protocol.config import SYSTEMS, ContentConfig, OverlayConfig, profile
from vinifera.schema import Schema
from vinifera.subscription import Subscription
from vinifera.wire import MAX_DATAGRAM, NetworkKey, format_address, parse_address
from vinifera.wire.fragments import MIN_DATAGRAM

WILDCARDS = ("0.0.0.0", "::")

# Where a daemon departs from its profile, which the simulator runs as is.
# probe_after 2 (the profile: 3): a silent link is pinged at 2, 3 and 4
# periods before the 5-period failure timeout, not twice. The simulator
# moved to 3 for a third less maintenance at the same quality (69e386e,
# loss-free runs); real UDP loses datagrams, and a third probe before a
# link is declared dead is worth one ping per silent link and period.
DAEMON_OVERLAY = {"probe_after": 2.0}


@dataclass(frozen=True)
class NodeSettings:
    # The swarm's attribute schema (every node must share it).
    schema: Schema
    # Where the UDP socket binds; port 0 picks a free port.
    listen: str = "127.0.0.1:0"
    # The address peers reach us at; defaults to the listen address (which
    # then must not be a wildcard). Peers check datagrams come from it.
    advertise: str | None = None
    # Any live nodes of the swarm; none for the first node.
    bootstrap: tuple[str, ...] = ()
    subscription: Subscription | None = None
    # JSON-lines node log (docs/logs.md); appended to, so restarts add sessions.
    log_file: Path | None = None
    # Local control endpoint: a Unix socket path, or HOST:PORT (loopback TCP,
    # which then needs control_token: any local user can reach a TCP port).
    control: str | None = None
    # Requests to the control endpoint must carry this token's proof.
    control_token: ControlToken | None = None
    network_key: NetworkKey | None = None
    # Seal the events we publish with this key (daemon/signing.py) ...
    signing_key: SigningKey | None = None
    # ... and accept only events sealed as this policy says (None: any event).
    seal_policy: SealPolicy | None = None
    # The largest datagram sent: bigger messages go as fragments. 1,200 B
    # (QUIC's) crosses any path without IP fragmentation, which many NATs
    # and firewalls drop.
    max_datagram: int = 1200
    # Prometheus endpoint, HOST:PORT (or PORT, on 127.0.0.1); None: none.
    metrics: str | None = None
    # Gossip period in seconds; the overlay's timeouts scale with it.
    period: float = 1.0
    # Seed of the node's random generator (None: from the OS).
    seed: int | None = None
    # Datagram budget of one source port (a peer): sustained rate (per
    # second) and burst; a datagram costs 1 plus 1 per 4 KiB.
    peer_rate: float = 500.0
    peer_burst: float = 1000.0
    # ... and of one source host, whatever the number of its ports: one
    # machine cannot multiply its budget by opening ports.
    host_rate: float = 2000.0
    host_burst: float = 4000.0
    # Source ports of one host admitted at once (each is a peer we keep
    # state for). Nodes sharing an IP count as one host: a local swarm on
    # one address needs this above its size (or one loopback IP per node).
    ports_per_host: int = 64
    # What one host is: an IPv4 address, an IPv6 /64 (a machine's usual
    # share); wider prefixes group more, e.g. a NAT pool or a provider's /48.
    ipv4_prefix: int = 32
    ipv6_prefix: int = 64
    # Routing links to one host at most (never both ring links), a host
    # being an IPv4 network or an IPv6 prefix of these lengths: Sybils on
    # one machine or subnet cannot take a node's links. 0: no cap.
    # Loopback addresses are exempt (a local swarm's nodes share 127/8)
    # unless loopback_links_exempt is off.
    links_per_host: int = 2
    link_ipv4_prefix: int = 24
    link_ipv6_prefix: int = 64
    loopback_links_exempt: bool = True
    # Keyed swarms: a datagram stamped more than this many seconds from our
    # clock is refused (replay protection; node clocks must agree this well).
    replay_skew: float = 30.0
    # Keyless swarms: our address-proof cookies change this often (seconds);
    # the previous one is still accepted, and peers get the new one.
    cookie_epoch: float = 120.0
    # SO_RCVBUF in bytes: room for bursts while the node is busy (the kernel
    # caps it at net.core.rmem_max; the node warns when it does).
    recv_buffer: int = 4 << 20
    # Routing links beyond the two ring links; None: the system's profile's.
    friends: int | None = None
    small_world: int | None = None
    # The system's profile (protocol/config.py PROFILES): "vinifera" or
    # "baseline" (the paper's comparison system).
    system: str = "vinifera"
    # Deliveries buffered for the application before the oldest are dropped.
    delivery_buffer: int = 10_000

    def __post_init__(self) -> None:
        try:
            parse_address(self.listen, allow_any_port=True)
            if self.advertise is not None:
                parse_address(self.advertise)
            for b in self.bootstrap:
                parse_address(b)
        except ValueError as err:
            raise ViniferaError(str(err)) from None
        if self.period <= 0:
            raise ViniferaError("period must be positive")
        if self.system not in SYSTEMS:
            raise ViniferaError(f"system must be one of {', '.join(SYSTEMS)}")
        if (self.friends or 0) < 0 or (self.small_world or 0) < 0:
            raise ViniferaError("friends and small_world must be >= 0")
        try:
            self.limits()
        except ValueError as err:
            raise ViniferaError(str(err)) from None
        if not MIN_DATAGRAM <= self.max_datagram <= MAX_DATAGRAM:
            raise ViniferaError(f"max_datagram must be in {MIN_DATAGRAM}-{MAX_DATAGRAM}")
        if self.links_per_host < 0:
            raise ViniferaError("links_per_host must be >= 0")
        if not 8 <= self.link_ipv4_prefix <= 32 or not 16 <= self.link_ipv6_prefix <= 128:
            raise ViniferaError("link_ipv4_prefix must be in 8-32 and link_ipv6_prefix in 16-128")
        if self.replay_skew <= 0 or self.cookie_epoch <= 0:
            raise ViniferaError("replay_skew and cookie_epoch must be positive")
        if self.recv_buffer < 4096:
            raise ViniferaError("recv_buffer must be at least 4096 bytes")
        if self.control is not None:
            check_control(self.control, self.control_token)
        if self.metrics is not None:
            parse_metrics_address(self.metrics)
        host, _ = parse_address(self.listen, allow_any_port=True)
        if self.advertise is None and host in WILDCARDS:
            raise ViniferaError(
                f"listening on {self.listen}: give --advertise HOST:PORT, the address peers "
                "reach this node at"
            )

    def limits(self) -> Limits:
        return Limits(
            host_rate=self.host_rate,
            host_burst=self.host_burst,
            port_rate=self.peer_rate,
            port_burst=self.peer_burst,
            ports_per_host=self.ports_per_host,
            ipv4_prefix=self.ipv4_prefix,
            ipv6_prefix=self.ipv6_prefix,
        )

    def link_host_of(self) -> Callable[[str], str]:
        """The host of a peer's address ('ip:port') for the link cap."""
        v4, v6, exempt = self.link_ipv4_prefix, self.link_ipv6_prefix, self.loopback_links_exempt
        cache: dict[str, str] = {}

        def host(address: str) -> str:
            h = cache.get(address)
            if h is None:
                ip = address.rpartition(":")[0].strip("[]")
                if exempt and ipaddress.ip_address(ip).is_loopback:
                    h = address  # every local node its own host
                else:
                    h = host_of(ip, v4, v6)
                if len(cache) > 4096:
                    cache.clear()
                cache[address] = h
            return h

        return host

    def advertised_address(self, bound_port: int) -> str:
        if self.advertise is not None:
            return format_address(*parse_address(self.advertise))
        host, _ = parse_address(self.listen, allow_any_port=True)
        return format_address(host, bound_port)

    def overlay_config(self) -> OverlayConfig:
        """The system's profile, with the daemon's differences (DAEMON_OVERLAY)
        and the links asked for."""
        p = self.period
        base = profile(self.system).overlay
        return base.with_(
            period=p,
            # Durations are in periods (the protocol's unit); only the transit
            # allowance, a bound on network delay, is set from seconds.
            transit_allowance=min(0.1, p / 4) / p,
            friends=base.friends if self.friends is None else self.friends,
            small_world=base.small_world if self.small_world is None else self.small_world,
            **DAEMON_OVERLAY,
        )

    def content_config(self) -> ContentConfig:
        cfg = profile(self.system).content
        # The duplicate memory must outlive every way a captured datagram
        # gets in again: with a key, the replay skew (older is refused by its
        # stamp); without, its cookie, which passes for up to two epochs.
        # Shorter, a capture sent again after the memory was delivered again.
        admits_for = self.replay_skew if self.network_key is not None else 2 * self.cookie_epoch
        periods = math.ceil(admits_for / self.period) + 2
        if periods > cfg.dedupe_memory:
            cfg = replace(cfg, dedupe_memory=float(periods))
        return cfg
