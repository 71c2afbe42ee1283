"""A live daemon (a real process) under hostile datagrams: whatever arrives,
it counts and drops what is bad and keeps delivering."""

from __future__ import annotations

import random
import socket
import time

import pytest
import trio
from daemon_swarm import PERIOD, SCHEMA
from daemon_swarm import wait_for as wait_until
from test_daemon_processes import ProcessSwarm, wait_for
from wirepeer import aprove, prove

import vinifera
from vinifera.daemon.admission import BYTES_PER_TOKEN
from vinifera.fuzz import Fuzzer
from vinifera.protocol import messages as m
from vinifera.protocol.profile import Profile
from vinifera.subscription import Event
from vinifera.wire import encode, parse_address

PER_FAMILY = 300
UDP_MAX = 65_507  # an IPv4 datagram's payload limit


@pytest.fixture
def pair(tmp_path):
    swarm = ProcessSwarm(tmp_path)
    try:
        swarm.start(0, [])  # temp in [0, 10]
        swarm.start(1, [swarm.address[0]])
        wait_for(swarm.converged, 60, "two nodes to link up")
        yield swarm
    finally:
        swarm.stop_all()


def _delivered(swarm: ProcessSwarm, eid: int) -> bool:
    return any(d["eid"] == eid for d in swarm.deliveries(0))


def test_a_node_survives_deep_nesting_and_every_fuzz_family(pair):
    target = parse_address(pair.address[0])
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        # proven like a node, so that fuzzed messages carry the cookie and reach the handlers
        header = prove(sock, target)
        fuzzer = Fuzzer(pair.schema, port=sock.getsockname()[1], header=header)
        # the one-packet kill of before: arrays nested 1,000 deep where the version goes
        sock.sendto(b"\x93" + b"\x91" * 1_000 + b"\x01\x07\xc0", target)
        wait_for(lambda: _counters(pair).get("bad_depth") == 1, 10, "the deep datagram counted")
        rng = random.Random(17)
        for family in Fuzzer.FAMILIES:
            for _ in range(PER_FAMILY):
                data = fuzzer.datagram(rng, family)[:UDP_MAX]
                sock.sendto(data, target)
                # under the per-peer rate (500 tokens/s; a datagram costs 1
                # plus 1 per 4 KiB): every datagram is parsed
                time.sleep(0.002 * (1 + len(data) // BYTES_PER_TOKEN))
    status = wait_for(lambda: pair.try_status(0), 10, "status after the fuzz")
    counters = status["counters"]
    assert counters.get("rate_limited", 0) == 0
    assert counters["bad"] >= PER_FAMILY * 4, counters
    assert "bad_internal" not in counters, counters  # no handler raised
    # and it still does its job: an event from its neighbour is delivered
    eid = pair.publish_cli(1, ["temp=5", "city=Oslo"])
    wait_for(lambda: _delivered(pair, eid), 20, "a delivery after the fuzz")
    assert pair.procs[0].poll() is None


def _counters(swarm: ProcessSwarm) -> dict:
    status = swarm.try_status(0)  # raises if the process has exited
    return {} if status is None else status["counters"]


async def test_a_handler_that_raises_costs_that_datagram_only():
    """A bug in one handler (planted here) must not end the node: the
    datagram is dropped and counted, and the next one is handled."""
    async with vinifera.Node(SCHEMA, period=PERIOD, seed=1, subscription="a0 in [0, 500]") as node:
        protocol = node.runner.node

        def ping_handler_with_a_bug(now, msg):
            raise KeyError("a planted bug")

        # in the handler table, not on the instance: a compiled Node
        # (scripts/build_compiled.sh) takes no new attributes
        protocol._handlers[m.Ping] = ping_handler_with_a_bug
        sock = trio.socket.socket(type=trio.socket.SOCK_DGRAM)
        with sock:
            await sock.bind(("127.0.0.1", 0))
            me = Profile(f"127.0.0.1:{sock.getsockname()[1]}", 1, None)
            target = parse_address(node.address)
            header = await aprove(sock, target)
            event = Event.build(SCHEMA, {"a0": 150, "a1": 1})
            for _ in range(3):
                await sock.sendto(encode(m.Ping(me), header=header), target)
            await sock.sendto(encode(m.EventPush(me, 77, event, 3), header=header), target)
            await wait_until(
                lambda: node.status()["counters"].get("delivered") == 1, 10, "the push"
            )
        counters = node.status()["counters"]
        assert counters["bad_internal"] == 3 and node.runner.failures == {"KeyError": 3}
