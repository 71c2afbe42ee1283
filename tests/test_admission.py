"""Admission: per-host and per-port budgets before decoding, a fair queue
between the socket and the handlers, and a flood from one host that does
not crowd out two honest ones (a real daemon process, real sockets)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time

import pytest
from test_daemon_processes import SCHEMA_TOML, cli, wait_for
from wirepeer import prove

from vinifera.daemon.admission import Admission, Bucket, FairQueue, Limits, host_of
from vinifera.daemon.control import request
from vinifera.protocol import messages as m
from vinifera.protocol.profile import Profile
from vinifera.schema import Schema
from vinifera.wire import NO_HEADER, Decoder, Header, encode, format_address


@pytest.mark.parametrize(
    "ip,v4,v6,expected",
    [
        ("192.0.2.7", 32, 64, "192.0.2.7"),
        ("192.0.2.7", 24, 64, "192.0.2.0/24"),
        ("2001:db8:1:2:3:4:5:6", 32, 64, "2001:db8:1:2::/64"),
        ("2001:db8:1:2:3:4:5:6", 32, 48, "2001:db8:1::/48"),
        ("2001:db8::1", 32, 128, "2001:db8::1"),
        ("::ffff:192.0.2.7", 32, 64, "192.0.2.7"),  # IPv4-mapped: the IPv4 host
    ],
)
def test_host_of_groups_addresses_by_prefix(ip, v4, v6, expected):
    assert host_of(ip, v4, v6) == expected


@pytest.mark.parametrize(
    "rate,burst,times,expected",
    [
        # a full bucket allows `burst` at once, then nothing
        (1.0, 3, [0, 0, 0, 0], [True, True, True, False]),
        # tokens come back at `rate` per second
        (2.0, 1, [0, 0, 0.25, 0.5, 0.5], [True, False, False, True, False]),
        # never more than `burst` saved up, however long the silence
        (10.0, 2, [0, 100, 100, 100], [True, True, True, False]),
        # a clock that goes backwards grants nothing
        (1.0, 1, [5, 4, 4.5], [True, False, False]),
    ],
)
def test_bucket_arithmetic(rate, burst, times, expected):
    b = Bucket(burst, times[0])
    got = []
    for t in times:
        b.refill(rate, burst, t)
        got.append(b.tokens >= 1)
        if got[-1]:
            b.tokens -= 1
    assert got == expected


def test_one_host_gets_one_budget_whatever_its_ports():
    adm = Admission(Limits(host_rate=1, host_burst=10, port_rate=1, port_burst=3,
                           ports_per_host=1000))  # fmt: skip
    admitted = sum(adm.admit("h", port, 100, 0.0) is None for port in range(1000))
    assert admitted == 10
    assert adm.admit("other", 1, 100, 0.0) is None  # another host has its own
    assert adm.top_hosts()[0] == {"host": "h", "admitted": 10, "refused": 990}


def test_one_port_cannot_take_the_whole_host_budget():
    adm = Admission(Limits(host_rate=1, host_burst=100, port_rate=1, port_burst=3))
    assert [adm.admit("h", 1, 10, 0.0) for _ in range(4)] == [None, None, None, "port"]
    assert adm.admit("h", 2, 10, 0.0) is None


def test_big_datagrams_cost_more():
    adm = Admission(Limits(host_rate=1, host_burst=100, port_rate=1, port_burst=40))
    assert adm.admit("h", 1, 60_000, 0.0) is None  # 1 + 14 tokens
    assert adm.admit("h", 1, 60_000, 0.0) is None
    assert adm.admit("h", 1, 60_000, 0.0) == "port"  # 30 spent, 15 more do not fit


def test_work_is_charged_after_the_fact_and_debt_refuses_until_paid():
    adm = Admission(Limits(host_rate=10, host_burst=20, port_rate=10, port_burst=20))
    assert adm.admit("h", 1, 10, 0.0) is None  # 1 token paid, 19 left
    adm.charge("h", 1, 30.0)  # its message took 30 tokens' worth of work: down to -11 (floor -20)
    assert adm.admit("h", 1, 10, 1.0) == "port"  # -11 + 10 = -1: still in debt
    assert adm.admit("h", 1, 10, 2.0) is None  # paid off: 9, then 8 after this one
    adm.charge("h", 1, 1e9)
    assert adm.admit("h", 2, 10, 2.0) == "host"  # the host's debt counts for its other ports
    assert adm.admit("h", 2, 10, 6.1) is None  # the floor is -burst: 4.1 s of refill pays it


def test_a_host_uses_only_so_many_ports_at_once_until_they_go_idle():
    adm = Admission(Limits(ports_per_host=2, port_idle=10))
    assert adm.admit("h", 1, 10, 0.0) is None
    assert adm.admit("h", 2, 10, 1.0) is None
    assert adm.admit("h", 3, 10, 2.0) == "ports"
    assert adm.admit("h", 1, 10, 5.0) is None  # known ports go on
    assert adm.admit("h", 3, 10, 11.5) is None  # port 2 idle for 10.5 s: its place is free
    assert adm.admit("h", 2, 10, 11.5) == "ports"


def test_forged_sources_cost_bounded_memory_that_a_quiet_spell_releases():
    """Issue 75 item 2: every distinct forged source used to keep a port
    bucket and a place among its host's ports, up to 4,096 hosts x 64 ports
    (+113 MB measured). Now the tables hold max_hosts + max_ports entries at
    most, and honest peers amid the flood are still admitted."""
    import random
    import tracemalloc

    rng = random.Random(1)
    lim = Limits()
    adm = Admission(lim)
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    honest = 0
    for i in range(60_000):
        ip = f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(256)}"
        t = i * 1e-5
        adm.admit(adm.host(ip), rng.randrange(1024, 65536), 64, t)
        if i % 1000 == 0:
            honest += adm.admit(adm.host("192.0.2.1"), 7000, 300, t) is None
    grown = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert len(adm) <= lim.max_hosts + lim.max_ports
    assert grown < 16 << 20, grown
    assert honest == 60
    adm.prune(60_000 * 1e-5 + lim.port_idle + 1.0)
    assert len(adm) == 0


def test_the_fair_queue_serves_hosts_in_turn_and_bounds_each():
    q = FairQueue(per_host=3, total=5)
    assert all(q.push("flood", i) for i in range(3))
    assert not q.push("flood", 3)  # its own queue is full
    assert q.push("a", "a1") and q.push("b", "b1")
    # the whole is full: c, with nothing queued, takes the flood's newest place
    assert q.push("c", "c1") and q.displaced == 1
    assert q.push("c", "c2") and not q.push("c", "c3")  # then c is the longest
    assert [q.pop() for _ in range(6)] == [0, "a1", "b1", "c1", "c2", None]
    assert len(q) == 0


def test_many_hosts_under_their_share_cannot_shut_out_another():
    """Issue 75 item 1: 40 hosts x 256 places filled the 8,192, after which
    an honest host's datagram was refused with its own queue empty."""
    q = FairQueue()
    for i in range(40 * 256):
        q.push(f"flood{i % 40}", i, 400)
    assert len(q) == 8192
    assert all(q.push("honest", n, 100) for n in range(8192 // 41))  # its share, whole
    assert len(q) == 8192
    # ... and bytes: a host of small datagrams is not shut out by big ones
    big = FairQueue(max_bytes=1 << 20)
    for i in range(40 * 256):
        big.push(f"flood{i % 40}", i, 60_000)
    assert big.push("honest", 0, 100)


def test_the_fair_queue_keeps_its_bounds_and_refuses_only_when_no_queue_is_longer():
    import random

    rng = random.Random(3)
    q = FairQueue(per_host=6, total=20, max_bytes=5_000)
    model: dict[str, list] = {}
    for step in range(20_000):
        if rng.random() < 0.55:
            host, size = f"h{rng.randrange(8)}", rng.randrange(1, 600)
            own = len(model.get(host, []))
            ok = q.push(host, (host, step), size)
            if not ok:  # its own queue is full, or no queue is longer than its now
                longest = max((len(v) for v in q._queues.values()), default=0)
                assert own >= 6 or longest <= own, (host, own, longest)
            model.clear()
            for item in q._queues.items():
                model[item[0]] = list(item[1])
        else:
            item = q.pop()
            assert (item is None) == (len(q) == 0 and not any(model.values()))
            model = {h: list(v) for h, v in q._queues.items()}
        assert len(q) <= 20 and q._bytes <= 5_000
        assert len(q) == sum(len(v) for v in q._queues.values())


def _ping(sender: str, header: Header = NO_HEADER) -> bytes:
    return encode(m.Ping(Profile(sender, 1, None)), header=header)


def _udp(host: str) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((host, 0))
    return s


FLOOD_PORTS = 4096
ROUNDS = 5
HOST_RATE, HOST_BURST = 50.0, 100.0
HONEST_EVERY = 256  # flood datagrams between two of an honest host's (within its budget)


def test_a_flood_from_4096_ports_of_one_host_gets_one_host_budget_and_spares_the_honest(tmp_path):
    schema = tmp_path / "s.toml"
    schema.write_text(SCHEMA_TOML)
    ctl = str(tmp_path / "n.sock")
    proc = subprocess.Popen(
        [*cli(), "run", "--schema", str(schema), "--listen", "127.0.0.1:0", "--period", "0.5",
         "--control", ctl, "--host-rate", str(HOST_RATE), "--host-burst", str(HOST_BURST),
         "--no-deliveries"],
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / "err", "w"),  # noqa: SIM115
    )  # fmt: skip
    with contextlib.ExitStack() as stack:
        stack.callback(proc.wait, 15)
        stack.callback(proc.terminate)
        status = wait_for(lambda: _status(ctl), 30, "the node up")
        host, port = status["address"].rsplit(":", 1)
        target = (host, int(port))
        flood = [stack.enter_context(_udp("127.0.0.2")) for _ in range(FLOOD_PORTS)]
        honest = [stack.enter_context(_udp(h)) for h in ("127.0.0.3", "127.0.0.4")]
        payloads = [_ping(f"127.0.0.2:{s.getsockname()[1]}") for s in flood]
        # the honest neighbours have proven their addresses, as nodes do on first contact
        pings = {s: _ping(format_address(*s.getsockname()), prove(s, target)) for s in honest}
        started = time.monotonic()
        for _ in range(ROUNDS):
            for i, (s, data) in enumerate(zip(flood, payloads, strict=True)):
                s.sendto(data, target)
                if i % HONEST_EVERY == 0:  # the honest neighbours speak amid the flood
                    for h in honest:
                        h.sendto(pings[h], target)
            time.sleep(0.05)
        elapsed = time.monotonic() - started
        sent_each = ROUNDS * FLOOD_PORTS // HONEST_EVERY
        decoder = Decoder(Schema.load(schema))
        for h in honest:
            h.settimeout(2.0)
            pongs = 0
            with contextlib.suppress(TimeoutError):
                while pongs < sent_each:
                    pongs += type(decoder.decode_untrusted(h.recvfrom(70_000)[0])) is m.Pong
            assert pongs >= 0.99 * sent_each, (h.getsockname(), pongs, sent_each)
        status = _status(ctl)
    hosts = {h["host"]: h for h in status["top_hosts"]}
    flooder = hosts["127.0.0.2"]
    assert flooder["admitted"] + flooder["refused"] >= 0.99 * ROUNDS * FLOOD_PORTS
    assert flooder["admitted"] <= HOST_BURST + HOST_RATE * (elapsed + 1.0)
    assert status["counters"]["limited_ports"] > 0 and status["counters"]["limited_host"] > 0
    for h in ("127.0.0.3", "127.0.0.4"):
        assert hosts[h]["refused"] == 0


def _status(ctl: str) -> dict | None:
    try:
        return request(ctl, {"op": "status"}, timeout=5)
    except Exception:  # noqa: BLE001 - not up yet
        return None
