"""Runtimes: what starts, finds, observes and interrupts a passage's work.

SPEC §4 replaces seed 002's native session/message admission by a runtime with four
operations. ``start`` is idempotent and first-admission-wins; ``lookup`` proves the
presence or absence of an admitted start; ``observe`` reports the family's state and
the passage's report; ``interrupt`` stops the whole family. The scheduler only ever
talks to a :class:`Runtime`; :mod:`kalends.missions.runtime.process` runs real
commands, :mod:`kalends.missions.runtime.memory` is an in-process one for scale
benchmarks and unit tests.
"""

from kalends.missions.runtime.base import (
    Observation,
    PassageStart,
    Presence,
    Report,
    Runtime,
    RuntimeUnavailable,
)

__all__ = [
    "Observation",
    "PassageStart",
    "Presence",
    "Report",
    "Runtime",
    "RuntimeUnavailable",
]
