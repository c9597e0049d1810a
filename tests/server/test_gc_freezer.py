"""The server's freezer (``context.Freezer``): cycles that froze and died are swept.

A freeze keeps a cycle alive at it out of every later collection; without sweeps, every client
connection that outlived a freeze (its protocol and parser form a cycle) stayed in memory for
good. Times are passed in, so nothing here waits.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest
from topics_server import context
from topics_server.context import Freezer


class Node:
    def __init__(self) -> None:
        self.me = self


@pytest.fixture(autouse=True)
def _unfreeze_after() -> Iterator[None]:
    yield
    gc.unfreeze()


def _frozen_then_dropped() -> weakref.ref[Node]:
    node = Node()
    ref = weakref.ref(node)
    context.freeze_long_lived()
    del node
    return ref


def test_a_freeze_alone_keeps_a_dead_cycle() -> None:
    ref = _frozen_then_dropped()
    context.freeze_long_lived()
    gc.collect()
    assert ref() is not None


def test_a_sweep_frees_a_cycle_that_froze_and_died() -> None:
    freezer = Freezer(now=0.0)
    ref = _frozen_then_dropped()
    freezer.tick(1.0)  # before the first sweep is due: only a freeze
    assert ref() is not None
    freezer.tick(context.SWEEP_MIN_INTERVAL_S)
    assert ref() is None
    assert freezer.sweeps == 1 and freezer.last_freed >= 1
    assert gc.get_freeze_count() > 0  # the survivors are frozen again


def test_sweeps_are_spaced_by_their_pause_within_bounds() -> None:
    freezer = Freezer(now=0.0)
    freezer.sweep(100.0)
    expected = min(
        context.SWEEP_MAX_INTERVAL_S,
        max(context.SWEEP_MIN_INTERVAL_S, context.SWEEP_PAUSE_RATIO * freezer.last_cpu_s),
    )
    assert freezer.next_sweep == pytest.approx(100.0 + expected)
    ref = _frozen_then_dropped()
    freezer.tick(freezer.next_sweep - 0.001)
    assert ref() is not None and freezer.sweeps == 1
    freezer.tick(freezer.next_sweep)
    assert ref() is None and freezer.sweeps == 2
