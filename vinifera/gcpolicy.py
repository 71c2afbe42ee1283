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
# A simulation is one bounded run: full collections all but never.
SIMULATION_THRESHOLDS = (100_000, 50, 1_000)


def settle_for_daemon() -> None:
    """For a long-running node process, once its imports are done."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*DAEMON_THRESHOLDS)


@contextmanager
def quiet_garbage_collector():
    """For one simulation: a simulation keeps millions of objects alive
    (tables, queues) and collections found nothing. Settings are restored
    on the way out (a freeze made before, e.g. by settle_for_daemon, stays)."""
    before = gc.get_threshold()
    frozen_before = gc.get_freeze_count() > 0
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SIMULATION_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        if not frozen_before:
            gc.unfreeze()
