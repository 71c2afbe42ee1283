"""What a swarm run will do, decided before anything starts (pure).

Slots are the swarm's nodes: each has a fixed address and a subscription
from the reference workload, and is up or down over time. Without a trace
every slot is up for the whole run; with one, trace nodes are mapped onto at
most N slots and their sessions, compressed by `speedup`, say when each slot
starts and stops.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from vinifera.churn_traces import ChurnSchedule, Trace, map_to_slots
from vinifera.schema import Schema
from vinifera.workload import Workload


@dataclass(frozen=True)
class Slot:
    index: int
    subscription: str | None  # expression text, or None for a pure relay


@dataclass(frozen=True)
class Change:
    at: float  # seconds after the swarm started
    slot: int
    kind: str  # "up" or "down"


@dataclass(frozen=True)
class SwarmPlan:
    schema: Schema
    slots: tuple[Slot, ...]
    changes: tuple[Change, ...]  # time-ordered; empty without a trace
    initially_up: tuple[int, ...]
    seed: int
    workload: str


def reference_schema(d: int = 1) -> Schema:
    """docs/experiments.md: d numeric attributes with domain [0, 1000]."""
    return Schema.numeric(d, 0.0, 1000.0)


def make_plan(
    nodes: int,
    seed: int,
    workload: str = "skewed",
    attributes: int = 1,
    trace: Trace | None = None,
    speedup: float = 1.0,
    duration: float | None = None,
) -> SwarmPlan:
    if nodes < 1:
        raise ValueError("a swarm needs at least one node")
    if speedup <= 0:
        raise ValueError("speedup must be positive")
    schema = reference_schema(attributes)
    rng = random.Random(seed)
    work = Workload(workload, schema, random.Random(seed + 1))
    slots = tuple(Slot(i, str(work.subscription(rng))) for i in range(nodes))
    if trace is None:
        return SwarmPlan(schema, slots, (), tuple(range(nodes)), seed, workload)
    mapping = map_to_slots(trace, nodes)
    changes = []
    up_at_zero = set()
    for ev in ChurnSchedule.from_trace(mapping.trace):
        slot = int(ev.node)  # the mapped trace names its nodes by slot
        at = ev.time / speedup
        if duration is not None and at >= duration:
            continue
        if at == 0 and ev.kind == "up":
            up_at_zero.add(slot)
        else:
            changes.append(Change(at, slot, ev.kind))
    return SwarmPlan(schema, slots, tuple(changes), tuple(sorted(up_at_zero)), seed, workload)
