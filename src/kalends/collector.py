"""The cyclic garbage collector set for a long-running process that admits passages.

A scheduler's round of :data:`~kalends.missions.scheduler.LOOK_BATCH` due wakes makes
hundreds of thousands of short-lived containers (rows, documents, parameters) that live
for the round, long enough to outlive CPython's youngest generation at its default
threshold of 700 allocations. Promoted, they fill the oldest generation, and every full
collection then walks the whole heap, start-up included (the modules, the tables, the
compiled statements: some 75,000 objects). In a burst of 10,000 due schedules on
PostgreSQL (``bench/scale.py --quick``) the collector took about a fifth of the
scheduler's CPU: twelve full collections of 50-130 ms each.

:func:`tune_collector`, called once where a process starts its scheduler (``kalends
serve`` and ``kalends worker``), freezes what start-up made (never walked again: see
:func:`gc.freeze`) and raises the youngest generation's threshold to
:data:`YOUNG_THRESHOLD`, so that a round's objects mostly die young. Nothing is left
uncollected but what start-up made and still holds.
"""

from __future__ import annotations

import gc

__all__ = ["YOUNG_THRESHOLD", "tune_collector"]

YOUNG_THRESHOLD = 10_000
"""Allocations (less deallocations) of tracked objects between two collections of the
youngest generation (CPython's default: 700)."""


def tune_collector() -> int:
    """Collect once, freeze every object that survives, and set the youngest generation's
    threshold to :data:`YOUNG_THRESHOLD` (the older two keep theirs). Returns the number
    of objects frozen. Calling it again freezes what was made since; the thresholds stay."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
    return gc.get_freeze_count()
