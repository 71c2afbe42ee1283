"""The garbage collector settings of node processes (vinifera/gcpolicy.py)."""

from __future__ import annotations

import gc
import weakref

import pytest

from vinifera.gcpolicy import (
    DAEMON_THRESHOLDS,
    RETIRED_BEFORE_COLLECTING,
    SIMULATION_THRESHOLDS,
    RetiredNodes,
    quiet_garbage_collector,
    settle_for_daemon,
)


class Cell:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the cyclic collector frees it


@pytest.fixture
def restored_gc():
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)
    gc.unfreeze()


def test_a_daemon_freezes_start_up_state_and_still_collects_cycles(restored_gc):
    settle_for_daemon()
    assert gc.get_threshold() == DAEMON_THRESHOLDS
    assert gc.get_freeze_count() > 0
    first = Cell()
    dead = weakref.ref(first)
    del first
    # More new cyclic objects than the young generation's threshold: a
    # collection runs by itself, with no gc.collect() call.
    cells = [Cell() for _ in range(DAEMON_THRESHOLDS[0] + 1_000)]
    del cells
    assert dead() is None


def test_a_simulation_restores_the_collector_on_the_way_out(restored_gc):
    gc.set_threshold(700, 10, 10)
    with quiet_garbage_collector():
        assert gc.get_threshold() == SIMULATION_THRESHOLDS
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_a_simulation_keeps_a_freeze_made_before_it(restored_gc):
    held = Cell()  # made before the freeze, alive throughout
    settle_for_daemon()
    assert not listed(held)  # frozen: in no generation the collector walks
    with quiet_garbage_collector():
        pass
    # Judged by an object we hold, not by the frozen count: frozen objects
    # may still die by reference counting meanwhile (the test worker's own
    # threads free a few: CI once saw the count go 176,283 -> 176,281).
    assert not listed(held)
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == DAEMON_THRESHOLDS


def listed(obj: object) -> bool:
    """Whether the collector's generations hold `obj` (the frozen one is not
    among them)."""
    return any(o is obj for o in gc.get_objects())


def test_a_simulation_runs_no_automatic_collection_yet_collects_on_request(restored_gc):
    with quiet_garbage_collector():
        first = Cell()
        dead = weakref.ref(first)
        del first
        cells = [Cell() for _ in range(200_000)]  # past any young threshold
        del cells
        assert dead() is not None  # no collection ran by itself
        gc.collect()
        assert dead() is None


def test_what_a_simulation_made_is_not_left_to_the_next_young_collection(restored_gc):
    gc.set_threshold(700, 10, 10)
    with quiet_garbage_collector():
        kept = [[i] for i in range(50_000)]
        assert gc.get_count()[0] >= 50_000
    # Handed to the oldest generation on the way out, unwalked.
    assert gc.get_count()[0] < 700
    assert len(kept) == 50_000


def retire_cells(retired: RetiredNodes, count: int) -> list:
    refs = []
    for _ in range(count):
        cell = Cell()
        refs.append(weakref.ref(cell))
        del cell
        retired.retire()
    return refs


def test_a_cycle_left_by_retirements_is_collected_after_a_batch_of_them(restored_gc):
    """The safety net: retired incarnations make no cycles (Node.discard;
    tests/test_trace_sim.py), but one that a change might leave is still
    freed, a batch of retirements later."""
    with quiet_garbage_collector():
        retired = RetiredNodes()
        waiting = retire_cells(retired, RETIRED_BEFORE_COLLECTING - 1)
        assert retired.collections == 0
        assert all(ref() is not None for ref in waiting)
        retire_cells(retired, 1)
        assert retired.collections == 1
        assert all(ref() is None for ref in waiting)


def test_sim_run_leaves_its_nodes_out_of_the_final_collection(tmp_path):
    """After `vinifera sim run` prints its summary, the simulation's nodes
    are frozen: the interpreter's exit does not walk them (in a child
    process, so this one keeps its collector as it was)."""
    import subprocess
    import sys

    child = (
        "import gc\n"
        "from vinifera.cli.main import main\n"
        "from vinifera.protocol.node import Node\n"
        "main(['sim', 'run', '--nodes', '12', '--rounds', '4', '--json'], standalone_mode=False)\n"
        "print('frozen', gc.get_freeze_count())\n"
        "print('walked', sum(isinstance(o, Node) for o in gc.get_objects()))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, check=True, cwd=tmp_path
    ).stdout
    counts = dict(line.split() for line in out.splitlines() if line.startswith(("frozen", "walk")))
    assert int(counts["frozen"]) > 0
    assert counts["walked"] == "0"
