"""How a process that runs nodes sets Python's cyclic garbage collector.

Protocol state is long-lived (CRT rows, gossip views, duplicate memories)
and makes almost no cyclic garbage, but with the default thresholds
(700, 10, 10) the collector runs every 700 allocations and walks all of
that state again and again: about 13% of one node's event path
(benchmarks/event_path.py) and a third of a 1,000-node simulation. Both
settings freeze what exists when they are applied (imports, start-up
state) out of the collector's walks and make collections rarer; cyclic
garbage is still collected.

The process that owns the node chooses: the simulator and `vinifera-node
run` do; an application that embeds NodeRunner keeps its own settings.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager

# A daemon runs for days: young collections every 50,000 allocations
# instead of 700, full ones still every 10 of the middle generation's.
DAEMON_THRESHOLDS = (50_000, 20, 10)
# A simulation makes next to no cyclic garbage (a node incarnation that a
# trace rejoin replaces is discarded: RetiredNodes below), so automatic
# collections are off while it runs:
# young ones every 100,000 allocations took 7% of a 40-round, 1,000-node
# run and 6.5% of a 24 h Skype replay, for next to nothing freed
# (docs/decisions/simulator-speed.md, "The collector in a simulation").
SIMULATION_THRESHOLDS = (0, 0, 0)


def settle_for_daemon() -> None:
    """For a long-running node process, once its imports are done."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*DAEMON_THRESHOLDS)


@contextmanager
def quiet_garbage_collector():
    """For one simulation: automatic collections off while it runs, then
    the collector as it was. A gc.collect() still works meanwhile. A freeze
    made before (e.g. by settle_for_daemon) stays."""
    before = gc.get_threshold()
    frozen_before = gc.get_freeze_count() > 0
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SIMULATION_THRESHOLDS)
    try:
        yield
    finally:
        if not frozen_before:
            # What the run made moves to the oldest generation unwalked;
            # restored as it was, the first young collection would walk it
            # all at once (0.7 s after a 40-round, 1,000-node run).
            gc.freeze()
            gc.unfreeze()
        gc.set_threshold(*before)


def spare_the_exit() -> None:
    """For a process about to exit with a large simulation still in memory
    (`vinifera sim run` once its summary is out): what exists now is left
    out of the interpreter's final collection, which would otherwise walk
    and free every node at exit (3 s after a 1,000-node run whose
    simulation took 33 s) only for the OS to take the memory back anyway.
    Files are closed before (the log writer closes in the driver)."""
    gc.freeze()


# A retired incarnation is freed by reference counting (Node.discard breaks
# its cycles), so retirements make no garbage for the collector; one walk
# every this many retirements is only a safety net against a cycle that a
# later change might leave: six walks per worker in the month-long Skype
# replay's 27,136 retirements, none of which found anything; 0.6-0.9 s each,
# 2.3-6.1 s in the worker that also holds the growing ledger.
RETIRED_BEFORE_COLLECTING = 4096


class RetiredNodes:
    """Counts the incarnations a driver replaces (trace rejoins) and
    collects now and then. Before Node.discard, each retired incarnation
    kept itself alive through its layers' references to each other and its
    handler table of bound methods (about 700 objects each), and a full
    collection that walked every live node ran every few hundred
    retirements."""

    def __init__(self) -> None:
        self.retired = 0
        self.uncollected = 0
        self.collections = 0

    def retire(self) -> None:
        self.retired += 1
        self.uncollected += 1
        if self.uncollected >= RETIRED_BEFORE_COLLECTING:
            gc.collect()
            self.uncollected = 0
            self.collections += 1
