"""The simulator's event order: simultaneous events run in an order that
does not depend on how different nodes' events were interleaved when they
were scheduled (what lets the nodes be split between processes)."""

from __future__ import annotations

import itertools
import random

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


def test_events_a_period_ahead_keep_the_order_of_one_heap():
    # ticks go in the queue's line, messages in its heap; with ties of
    # times between ticks, and between ticks and messages, the order must
    # be the one a single heap of every entry gives
    rng = random.Random(3)
    period = 1.0
    line_q, heap_q = EventQueue(), EventQueue()
    starts = [rng.choice([0.0, 0.25, 0.5]) for _ in range(12)]  # shared start times
    for node, t in enumerate(starts):
        line_q.push_later(t, TICK, node, None, node)
        heap_q.push(t, TICK, node, None, node)
    seen, expected = [], []
    for q, out in ((line_q, seen), (heap_q, expected)):
        r = random.Random(4)
        for _ in range(400):
            ev = q.pop_until(30.0)
            assert ev is not None
            t, _target, _origin, _seq, kind, a, _b = ev
            out.append(ev[:5])
            if kind == TICK:
                if q is line_q:
                    q.push_later(t + period, TICK, a, None, a)
                else:
                    q.push(t + period, TICK, a, None, a)
                for _ in range(r.randrange(3)):
                    # a message, now and then at exactly another tick's time
                    delay = r.choice([0.25, 0.5, r.uniform(0.01, 0.1)])
                    q.push(t + delay, MESSAGE, r.randrange(12), None, a)
    assert seen == expected
    assert any(a[0] == b[0] for a, b in zip(seen, seen[1:]))  # ties were met
    assert len(line_q._line) > 0 and len(line_q._heap) > 0
