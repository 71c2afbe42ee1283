"""Real daemons in one process: UDP on 127.0.0.1, port 0, real clock."""

from __future__ import annotations

import itertools
import json
import os
import random
import time
from contextlib import AsyncExitStack

import msgpack
import trio
from daemon_swarm import PERIOD, SCHEMA, publish_and_collect, start_swarm, wait_for
from wirepeer import aprove

import vinifera
from vinifera.protocol import messages as m
from vinifera.protocol.profile import Profile
from vinifera.subscription import Event
from vinifera.wire import MAX_DATAGRAM, WIRE_VERSION, Header, NetworkKey, encode


async def quiet_for(probe, quiet: float, timeout: float, what: str):
    """Wait until `probe()` has not changed for `quiet` seconds; returns its
    last value. Fails after `timeout` seconds if it never settles.

    For "nothing more arrived" assertions: that nothing more will arrive is
    not an event one can wait for, but when the probe counts everything
    that could still bring something (every event copy a node receives) and
    it has stood still for longer than the protocol's longest gap between
    one copy and the next it causes (forwarding takes milliseconds; an
    unacknowledged copy is retried at the sender's next tick, one period
    later), the traffic has ended and what was delivered is final. Unlike a
    fixed sleep this waits as long as copies are still moving, and says so
    when they never stop."""
    last, since = probe(), trio.current_time()
    with trio.move_on_after(timeout):
        while trio.current_time() - since < quiet:
            await trio.sleep(quiet / 8)
            value = probe()
            if value != last:
                last, since = value, trio.current_time()
        return last
    raise AssertionError(f"{what} still changing after {timeout} s (last: {last})")


def event_copies_received(nodes) -> int:
    """Event copies (tree or push) that reached the nodes' protocol cores,
    dropped by the congestion model or not: each one's only chance to be a
    duplicate or a false positive."""
    total = 0
    for node in nodes:
        counters = node.status()["protocol_counters"]
        total += counters["events_received"] + counters["events_dropped"]
    return total


async def test_thirty_nodes_deliver_every_event_exactly_once():
    async with AsyncExitStack() as stack:
        swarm = await start_swarm(stack, 30, seed=1)
        await wait_for(swarm.ready, 60, "ring and installs")
        rng = random.Random(5)
        publishers = [swarm.nodes[i] for i in (0, 7, 13, 22, 29)]
        sent, missing = await publish_and_collect(swarm, publishers, rng, 25)
        assert missing == []
        pairs = sum(len(exp) for _, exp in sent)
        assert pairs >= 50  # the workload really exercises the trees
        # Late copies (retries, slow pushes) would be duplicates: wait until
        # no copy has arrived anywhere for two periods (the old fixed sleep).
        copies = await quiet_for(
            lambda: event_copies_received(swarm.nodes), 2 * PERIOD, 40 * PERIOD, "event copies"
        )
        # The probe sees the copies that delivered (all but a publisher's own).
        assert copies >= pairs - len(sent)
        for eid, exp in sent:
            got = swarm.deliveries_of(eid)
            assert set(got) == exp, "false positives"
            assert all(c == 1 for c in got.values()), "duplicates"
        statuses = [n.status() for n in swarm.nodes]
        assert all(s["counters"].get("bad", 0) == 0 for s in statuses)
        assert sum(len(s["crt_rows"]) for s in statuses) > 0
        # every datagram sent is counted under the kind of message it carried
        for s in statuses:
            assert sum(s["sent_datagrams"].values()) == s["counters"]["datagrams_sent"]
            assert s["sent_bytes"]["Shuffle"] > 0
            assert s["sent_bytes"].keys() == s["sent_datagrams"].keys()
        assert sum(s["sent_datagrams"].get("EventMessage", 0) for s in statuses) > 0


async def test_publish_and_subscribe_through_the_api(tmp_path):
    async with AsyncExitStack() as stack:
        a = await stack.enter_async_context(
            vinifera.Node(SCHEMA, period=PERIOD, seed=1, log_file=tmp_path / "a.jsonl")
        )
        b = await stack.enter_async_context(
            vinifera.Node(
                SCHEMA,
                period=PERIOD,
                seed=2,
                bootstrap=[a.address],
                subscription="a0 in [100, 200]",
            )  # fmt: skip
        )
        await wait_for(lambda: b.runner.node.content.ready, 20, "b installed")
        await wait_for(lambda: a.status()["links"]["succ"] == b.address, 20, "ring")
        await a.subscribe("a1 == 5")
        eid = await a.publish(a0=150, a1=5)
        got = []
        with trio.fail_after(10):
            async for d in b.deliveries():
                got.append(d)
                break
        assert got[0].eid == eid and got[0].values == {"a0": 150.0, "a1": 5.0}
        with trio.fail_after(10):
            async for d in a.deliveries():  # a's own event matches its new subscription
                assert d.eid == eid and d.hops == 0
                break
    records = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    kinds = [r["ev"] for r in records]
    assert kinds[0] == "join" and kinds[-1] == "leave"
    assert {"subscribe", "publish", "deliver"} <= set(kinds)
    assert all(r["node"] == a.address and r["v"] == 1 for r in records)


async def malformed_stream(
    key: NetworkKey, sender: str, target: str, victim: str, rng: random.Random
):
    """Endless malformed datagrams to `target`, cycling through the ways to be wrong."""
    seqs = itertools.count(int(time.time() * 1e6))

    def fresh() -> Header:  # a header that passes the replay window
        return Header(sent=int(time.time() * 1000), seq=next(seqs))

    def tag(b: bytes) -> bytes:
        return key.tag(b, target) + b

    good = encode(m.Ping(Profile(sender, 1, None)), key, fresh(), target)
    plain = encode(m.Ping(Profile(sender, 1, None)))
    wrong_key = NetworkKey(b"not the swarm's key, but long enough")
    v = WIRE_VERSION
    kinds = [
        lambda: os.urandom(rng.randrange(1, 200)),  # random bytes
        lambda: good[: rng.randrange(1, len(good))],  # truncated
        lambda: tag(good[16 : rng.randrange(17, len(good))]),  # truncated, keyed
        lambda: tag(os.urandom(rng.randrange(1, 200))),  # random bytes, keyed
        lambda: tag(msgpack.packb([v, 7, ["x", "y"]])),  # wrong types, keyed
        lambda: tag(msgpack.packb([v, 99, [sender, 1, 0, None]])),  # unknown kind
        lambda: tag(msgpack.packb([9, 7, [sender, 1, 0, None]])),  # version
        lambda: encode(m.Ping(Profile(sender, 1, None)), key, fresh()),  # tagged for no one
        lambda: os.urandom(MAX_DATAGRAM + 100),  # oversized
        lambda: plain,  # no key
        lambda: encode(m.Ping(Profile(sender, 1, None)), wrong_key),  # wrong key
        lambda: encode(m.Ping(Profile(victim, 1, None)), key, fresh(), target),  # spoofed
        lambda: good,  # a replay
    ]
    i = 0
    while True:
        yield kinds[i % len(kinds)]()
        i += 1


async def test_ten_thousand_malformed_datagrams_change_nothing(tmp_path):
    keyfile = tmp_path / "key"
    keyfile.write_bytes(b"the swarm's shared secret")
    key = NetworkKey.load(keyfile)
    async with AsyncExitStack() as stack:
        # the victim accepts everything the rate limits would otherwise stop,
        # so every datagram reaches the decoder; the host budget too, which
        # the flood shares with every peer on 127.0.0.1 (spent, it refuses
        # the swarm's own datagrams, and deliveries fail for the wrong reason)
        swarm = await start_swarm(stack, 10, seed=3, network_key=key, peer_rate=1e9,
                                  peer_burst=1e9, host_rate=1e9, host_burst=1e9)  # fmt: skip
        await wait_for(swarm.ready, 60, "ring and installs")
        victim = swarm.nodes[4]
        sock = trio.socket.socket(type=trio.socket.SOCK_DGRAM)
        stack.enter_context(sock)
        await sock.bind(("127.0.0.1", 0))
        sender = f"127.0.0.1:{sock.getsockname()[1]}"
        host, port = victim.address.rsplit(":", 1)
        rng = random.Random(9)
        stream = malformed_stream(key, sender, victim.address, swarm.nodes[5].address, rng)
        sent = 0
        published = []

        async def flood():
            nonlocal sent
            async for data in stream:
                try:
                    await sock.sendto(data, (host, int(port)))
                except OSError:  # the oversized ones may not leave the host
                    continue
                sent += 1
                if sent % 50 == 0:
                    await trio.sleep(0.005)  # share the CPU with the swarm
                    # (a status builds the node's whole snapshot: not per datagram)
                    if victim.status()["counters"].get("bad", 0) >= 10_000:
                        return

        async with trio.open_nursery() as nursery:
            nursery.start_soon(flood)
            while victim.status()["counters"].get("bad", 0) < 10_000:
                sent_now, missing = await publish_and_collect(
                    swarm, swarm.nodes[:5], random.Random(len(published)), 3
                )
                published.extend(sent_now)
                assert missing == [], "deliveries must stay at 100% during the flood"
        status = victim.status()
        counters = status["counters"]
        assert counters["bad"] >= 10_000
        for reason in ("mac", "msgpack", "field", "kind", "version", "spoofed", "replay"):
            assert counters.get(f"bad_{reason}", 0) > 0, reason
        assert victim.runner.node.alive
        assert counters.get("rate_limited", 0) == 0  # the decoder saw every datagram
        # and the swarm still delivers afterwards
        _, missing = await publish_and_collect(swarm, swarm.nodes[5:], random.Random(99), 5)
        assert missing == []
        assert sum(len(exp) for _, exp in published) > 0


async def test_a_node_without_the_key_cannot_join(tmp_path):
    key = NetworkKey(b"the swarm's shared secret")
    async with AsyncExitStack() as stack:
        a = await stack.enter_async_context(
            vinifera.Node(SCHEMA, period=PERIOD, seed=1, network_key=key)
        )
        stranger = await stack.enter_async_context(
            vinifera.Node(SCHEMA, period=PERIOD, seed=2, bootstrap=[a.address])
        )
        await wait_for(lambda: a.status()["counters"].get("bad_mac", 0) >= 3, 20, "join attempts")
        assert a.status()["view"] == [] and stranger.status()["view"] == []


async def test_a_flooding_peer_is_rate_limited():
    async with AsyncExitStack() as stack:
        node = await stack.enter_async_context(
            vinifera.Node(SCHEMA, period=PERIOD, seed=1, peer_rate=20.0, peer_burst=10)
        )
        sock = trio.socket.socket(type=trio.socket.SOCK_DGRAM)
        stack.enter_context(sock)
        await sock.bind(("127.0.0.1", 0))
        me = f"127.0.0.1:{sock.getsockname()[1]}"
        host, port = node.address.rsplit(":", 1)
        header = await aprove(sock, (host, int(port)))
        ping = encode(m.Ping(Profile(me, 1, None)), header=header)
        for _ in range(500):
            await sock.sendto(ping, (host, int(port)))
        await wait_for(
            lambda: node.status()["counters"].get("datagrams_received", 0) >= 400, 10, "flood"
        )
        counters = node.status()["counters"]
        assert counters["rate_limited"] >= 300
        assert counters.get("messages_received", 0) <= 10 + 20 * 10  # burst + rate x time


def test_the_delivery_journal_reads_back_only_recent_deliveries(tmp_path, monkeypatch):
    from vinifera.daemon import journal

    log = tmp_path / "node.jsonl"
    lines = []
    for i in range(300):
        lines.append(json.dumps({"v": 1, "t": 1000.0 + i, "node": "n", "ev": "deliver",
                                 "eid": i, "hops": 1}))  # fmt: skip
        lines.append(json.dumps({"v": 1, "t": 1000.0 + i, "node": "n", "ev": "publish",
                                 "eid": 10_000 + i, "values": [["a0", 1.0]]}))  # fmt: skip
    lines.append('{"v": 1, "t": 1300.0, "node": "n", "ev": "deliv')  # cut by a hard kill
    log.write_text("\n".join(lines))
    monkeypatch.setattr(journal, "BLOCK", 997)  # many blocks, lines cut at their edges
    got = journal.recent_deliveries(log, since=1250.0)
    assert got == [(1000.0 + i, i) for i in range(250, 300)]
    assert journal.recent_deliveries(log, since=0.0) == [(1000.0 + i, i) for i in range(300)]
    assert journal.recent_deliveries(tmp_path / "none.jsonl", since=0.0) == []


async def test_a_restarted_daemon_does_not_deliver_again_what_its_log_says_it_delivered(tmp_path):
    """A crash and restart of the same node (same log file): a late copy
    of an event the previous life delivered is not delivered again."""
    log = tmp_path / "a.jsonl"
    sub = "a0 in [100, 200]"
    async with vinifera.Node(SCHEMA, period=PERIOD, seed=1, log_file=log, subscription=sub) as a:
        old = await a.publish(a0=150, a1=1)  # matches: delivered to itself
        address = a.address
    async with AsyncExitStack() as stack:
        again = await stack.enter_async_context(
            vinifera.Node(
                SCHEMA, period=PERIOD, seed=2, listen=address, log_file=log, subscription=sub
            )  # fmt: skip
        )
        sock = trio.socket.socket(type=trio.socket.SOCK_DGRAM)
        stack.enter_context(sock)
        await sock.bind(("127.0.0.1", 0))
        me = Profile(f"127.0.0.1:{sock.getsockname()[1]}", 1, None)
        host, port = again.address.rsplit(":", 1)
        header = await aprove(sock, (host, int(port)))
        event = Event.build(SCHEMA, {"a0": 150, "a1": 1})
        for eid in (old, old + 1):  # the late copy, then a new event
            push = encode(m.EventPush(me, eid, event, 3), header=header)
            await sock.sendto(push, (host, int(port)))
        # Not a quiet period but the exact condition: both copies reached the
        # protocol core (the late one is counted and refused there).
        await wait_for(lambda: event_copies_received([again]) >= 2, 10, "both copies handled")
        assert again.status()["counters"]["delivered"] == 1
    eids = [json.loads(x)["eid"] for x in log.read_text().splitlines() if '"deliver"' in x]
    assert eids == [old, old + 1]


async def test_a_node_whose_bootstrap_never_answers_says_so_once_and_keeps_trying():
    import structlog

    async with AsyncExitStack() as stack:
        silent = trio.socket.socket(type=trio.socket.SOCK_DGRAM)
        stack.enter_context(silent)
        await silent.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{silent.getsockname()[1]}"
        with structlog.testing.capture_logs() as logs:
            node = await stack.enter_async_context(
                vinifera.Node(SCHEMA, period=PERIOD, seed=1, bootstrap=[dead])
            )
            await wait_for(
                lambda: any(e["event"] == "no bootstrap node answered" for e in logs),
                40 * PERIOD, "the warning",
            )  # fmt: skip
            assert node.status()["alone"] is True
            joins = node.status()["protocol_counters"]["joins_sent"]
            await trio.sleep(3 * PERIOD)
            assert node.status()["protocol_counters"]["joins_sent"] > joins  # still trying
        warned = [e for e in logs if e["event"] == "no bootstrap node answered"]
        assert len(warned) == 1 and warned[0]["bootstrap"] == [dead]
