"""Settling the server's heap: startup's objects leave the collector's reach, and what is
made afterwards is still collected."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from kalends.cli import heap


class Node:
    """A value that can take part in a reference cycle."""

    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def settled() -> Iterator[int]:
    try:
        yield heap.settle()
    finally:
        gc.unfreeze()


def test_settling_exempts_every_surviving_object_from_collection(settled: int) -> None:
    # (Frozen objects are still freed when their last reference goes: the count may fall.)
    assert 0 < gc.get_freeze_count() <= settled
    # A full collection now scans only what was made since: nothing old remains in it.
    assert len(gc.get_objects(2)) < settled
    assert gc.isenabled()


def test_a_cycle_made_after_settling_is_still_collected(settled: int) -> None:
    a, b = Node(), Node()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    del a, b

    gc.collect()

    assert gone() is None
