"""Helpers for tests that run real daemons in one trio run: start a swarm on
127.0.0.1 (port 0), wait for it by condition, publish and collect."""

from __future__ import annotations

import random
from contextlib import AsyncExitStack

import trio

import vinifera
from vinifera.schema import Schema
from vinifera.subscription import Event, Subscription

SCHEMA = Schema.numeric(2, 0.0, 1000.0)  # a0, a1
PERIOD = 0.5  # generous: 30 nodes share one event loop (and CI shares the CPU)


def workload_subscription(rng: random.Random, i: int) -> Subscription | None:
    """Skewed ranges on a0 (most interest around 500); every third node also
    constrains a1; every tenth subscribes to nothing (a pure relay)."""
    if i % 10 == 9:
        return None
    centre = min(950.0, max(50.0, rng.gauss(500.0, 150.0)))
    width = rng.uniform(20.0, 120.0)
    cons = {"a0": (max(0.0, centre - width), min(1000.0, centre + width))}
    if i % 3 == 2:
        cons["a1"] = (0.0, 600.0)
    return Subscription.build(SCHEMA, cons)


class Swarm:
    def __init__(self, nodes: list, subs: list) -> None:
        self.nodes = nodes
        self.subs = subs
        self.got: dict[str, list] = {n.address: [] for n in nodes}
        self._last_shape: tuple = ()
        self._shape_since = 0.0
        for n in nodes:
            n.runner.add_listener(self.got[n.address].append)

    def alive(self) -> list:
        return [n for n in self.nodes if n.runner.node is not None and n.runner.node.alive]

    def ring_correct(self) -> bool:
        nodes = sorted(self.alive(), key=lambda n: n.runner.node.ident)
        for i, n in enumerate(nodes):
            succ = nodes[(i + 1) % len(nodes)].address
            if n.runner.node.overlay.links.succ != succ:
                return False
        return True

    def ready(self) -> bool:
        """Ring correct and every subscriber has installed its subscription."""
        return self.ring_correct() and all(
            n.runner.node.content.ready or n.runner.node.subscription is None for n in self.alive()
        )

    def expected(self, event: Event) -> set[str]:
        return {
            n.address
            for n in self.alive()
            if n.runner.node.subscription is not None
            and n.runner.node.subscription.matches(event.values)
        }

    def deliveries_of(self, eid: int) -> dict[str, int]:
        out = {}
        for addr, ds in self.got.items():
            c = sum(1 for d in ds if d.eid == eid)
            if c:
                out[addr] = c
        return out


async def start_swarm(stack: AsyncExitStack, n: int, seed: int = 1, **settings) -> Swarm:
    rng = random.Random(seed)
    subs = [workload_subscription(rng, i) for i in range(n)]
    nodes = []
    for i in range(n):
        bootstrap = [nodes[j].address for j in rng.sample(range(len(nodes)), min(2, len(nodes)))]
        node = vinifera.Node(
            SCHEMA,
            bootstrap=bootstrap,
            subscription=subs[i],
            period=PERIOD,
            seed=seed * 1000 + i,
            **settings,
        )
        nodes.append(await stack.enter_async_context(node))
    return Swarm(nodes, subs)


async def wait_for(condition, timeout: float, what: str) -> None:
    """Poll `condition` once per period until it holds (not a blind sleep)."""
    with trio.move_on_after(timeout):
        while not condition():
            await trio.sleep(PERIOD / 2)
        return
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


async def publish_and_collect(swarm: Swarm, publishers: list, rng: random.Random, count: int):
    """Publish `count` random events round-robin from `publishers`; wait
    until every expected (event, subscriber) pair is delivered. Returns
    (events as (eid, expected set), missing pairs after the wait)."""
    sent = []
    for k in range(count):
        values = {"a0": rng.uniform(300.0, 700.0), "a1": rng.uniform(0.0, 1000.0)}
        node = publishers[k % len(publishers)]
        eid = await node.publish(values)
        sent.append((eid, swarm.expected(Event.build(SCHEMA, values))))

    def missing() -> list:
        return [(eid, a) for eid, exp in sent for a in exp if a not in swarm.deliveries_of(eid)]

    with trio.move_on_after(30 * PERIOD):
        while missing():
            await trio.sleep(PERIOD / 2)
    return sent, missing()
