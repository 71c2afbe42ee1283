"""The garbage collector settings of node processes (vinifera/gcpolicy.py)."""

from __future__ import annotations

import gc
import weakref

import pytest

from vinifera.gcpolicy import (
    DAEMON_THRESHOLDS,
    SIMULATION_THRESHOLDS,
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
    settle_for_daemon()
    frozen = gc.get_freeze_count()
    with quiet_garbage_collector():
        pass
    assert gc.get_freeze_count() >= frozen
    assert gc.get_threshold() == DAEMON_THRESHOLDS
