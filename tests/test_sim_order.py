"""The simulator's event order: simultaneous events run in an order that
does not depend on how different nodes' events were interleaved when they
were scheduled (what lets the nodes be split between processes)."""

from __future__ import annotations

import heapq
import itertools
import random

import pytest

from vinifera.sim.driver import JOIN, MESSAGE, TICK
from vinifera.sim.events import DRIVER, EventQueue


def drain(queue: EventQueue) -> list:
    out = []
    while (ev := queue.pop_until(float("inf"))) is not None:
        out.append(ev)
    return out


def test_interleaving_of_origins_does_not_change_the_order():
    # node 7 and node 3 each schedule three events, some at the same times
    by_origin = {
        7: [(1.0, MESSAGE, 5, "a"), (1.0, MESSAGE, 2, "b"), (2.0, TICK, 7, "c")],
        3: [(1.0, MESSAGE, 5, "d"), (1.0, TICK, 3, "e"), (2.0, MESSAGE, 7, "f")],
    }
    orders = set()
    # every interleaving that keeps each origin's own order
    for pattern in set(itertools.permutations([7, 7, 7, 3, 3, 3])):
        queue = EventQueue()
        nxt = {7: 0, 3: 0}
        for origin in pattern:
            t, kind, a, b = by_origin[origin][nxt[origin]]
            nxt[origin] += 1
            queue.push(t, kind, a, b, origin)
        orders.add(tuple(ev[-1] for ev in drain(queue)))
    assert len(orders) == 1
    # by time; then by target (2, 3, 5 at 1.0); then by origin (3 before 7
    # at the same target), whatever the kind
    assert orders.pop() == ("b", "e", "d", "a", "f", "c")


def test_driver_events_run_first_and_in_the_order_scheduled():
    queue = EventQueue()
    queue.push(4.0, MESSAGE, 0, "node", origin=0)
    queue.push(4.0, JOIN, 9, "join 9")  # the driver's: before any node's at 4.0
    queue.push(4.0, JOIN, 1, "join 1")
    queue.push(3.5, MESSAGE, 2, "earlier", origin=5)
    assert [ev[-1] for ev in drain(queue)] == ["earlier", "join 9", "join 1", "node"]
    assert queue.pop_until(10.0) is None


def test_pop_until_stops_at_the_limit():
    queue = EventQueue()
    queue.push(1.0, TICK, 1, None, 1)
    queue.push(2.0, TICK, 1, None, 1)
    assert queue.pop_until(1.0) is None  # strictly before the limit
    assert queue.pop_until(1.5)[0] == 1.0
    assert len(queue) == 1
    assert DRIVER < 0  # never a node's address


def test_a_new_incarnation_numbers_its_events_from_its_incarnation_alone():
    keys = []
    for earlier in (2, 5):  # how much the previous incarnation did
        queue = EventQueue()
        for i in range(earlier):
            queue.push(1.0 + i, MESSAGE, 8, "old", origin=4)
        queue.restart_origin(4, 1)
        queue.push(9.0, MESSAGE, 8, "new", origin=4)
        queue.push(1.0, MESSAGE, 8, "new, as early as the old", origin=4)
        events = drain(queue)
        keys.append([ev[:4] for ev in events if ev[-1] != "old"])
        # at the same time and target, the old incarnation's events come first
        assert [ev[-1] for ev in events][:2] == ["old", "new, as early as the old"]
    assert keys[0] == keys[1]


@pytest.mark.parametrize("width", [1e-3, 0.03, 1 / 64, 0.25, 5.0])
def test_the_calendar_pops_in_the_order_of_one_heap(width):
    # events pushed before and while the queue is read, some at the very
    # time being read, some at equal times, some into the bucket being
    # read or an earlier one: the order is that of one heap of them all
    rng = random.Random(int(width * 1000) + 1)
    queue, heap = EventQueue(width), []

    def push(t, kind, a, origin):
        entry = queue.entry(t, kind, a, None, origin)
        queue.push_entry(entry)
        heapq.heappush(heap, entry)

    for node in range(20):
        push(rng.choice([0.0, 0.25, 0.5, rng.random()]), TICK, node, node)
    popped, now = 0, 0.0
    for limit in [0.3, 0.3, 1.0, 2.5, 2.5, 6.0, 12.0]:
        while (ev := queue.pop_until(limit)) is not None:
            assert ev == heapq.heappop(heap)
            popped += 1
            now, kind, a = ev[0], ev[4], ev[5]
            if kind == TICK:
                push(now + 1.0, TICK, a, a)
            for _ in range(rng.randrange(3)):
                delay = rng.choice([0.0, 0.25, 0.5, 1.0, rng.uniform(0.0, 0.1)])
                push(now + delay, MESSAGE, rng.randrange(20), a)
        assert not heap or heap[0][0] >= limit
        assert len(queue) == len(heap)
    assert popped > 200
