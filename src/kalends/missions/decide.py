"""What a scheduler does with a schedule whose wake is due: one pure decision.

Seed 002 "Daily scheduler and civil time". :func:`decide` reads the document and the
instant of the look and nothing else (no database, no clock, no filesystem); both ways a
scheduler looks at its due wakes, the set-based round and the look of its own, act on it:

============================================  ===============  ===========================
the document                                  decision         the wake
============================================  ===============  ===========================
none (never was, or a tombstone)              :class:`Gone`     dropped
a pending passage (any state, any phase)      :class:`Attend`   the look reconciles it
deleted, nothing pending                      :class:`Compact`  dropped once a tombstone
paused, stopped or interrupted                :class:`Dormant`  dropped (a control rearms)
running, a slot not after ``now``             :class:`Launch`   its passage is reserved
running, the next slot later                  :class:`Sleep`    due at min(slot, now + 1 h)
running, no slot left under the end bounds    :class:`Finished` dropped
============================================  ===============  ===========================

Catch-up: after an outage only the latest missed slot launches; the older missed slots
are skipped, never run as a backlog, because the reservation advances the high-water mark
to the launched slot. A slot moved by a DST transition (shifted out of a gap, the earlier
of a repeated hour) launches at its moved instant and carries its note
(:class:`~kalends.civil.DstNote`): the civil slot search decides it, not this
module.

:class:`Launch`, :class:`Sleep` and :class:`Finished` are decisions about a running
schedule; they stand only while its workspace exists (``needs_workspace``). Whether it
does is a filesystem read, the caller's: a schedule whose workspace is gone is
interrupted (reason ``error``) instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from kalends.civil import Slot
from kalends.missions.controls import DocState
from kalends.missions.document import (
    EndReason,
    Pending,
    Phase,
    State,
    latest_missed,
    next_due_or_end,
    quota_exhausted,
)
from kalends.missions.wakes import MAX_SLEEP

__all__ = [
    "Attend",
    "Compact",
    "Decision",
    "Dormant",
    "Finished",
    "Gone",
    "Launch",
    "Sleep",
    "decide",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Gone:
    """No document: the schedule never existed or is a tombstone. Nothing to wake for."""

    needs_workspace: ClassVar[bool] = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Attend:
    """A passage is pending: reconcile its start, observe it or settle it before any
    other slot (the runtime's part, never decided here)."""

    needs_workspace: ClassVar[bool] = False
    pending: Pending


@dataclass(frozen=True, slots=True, kw_only=True)
class Compact:
    """Deleted and nothing pending: turn the document into a tombstone, then forget it."""

    needs_workspace: ClassVar[bool] = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Dormant:
    """Paused, stopped, or running but interrupted (``interruption`` says why): no slot
    launches until a control changes it, and that control arms the wake again."""

    needs_workspace: ClassVar[bool] = False
    state: State
    interruption: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Launch:
    """Reserve ``slot``, the latest slot newer than the high-water mark and not after
    ``now``, under the end bounds and the quota; older missed slots are skipped."""

    needs_workspace: ClassVar[bool] = True
    slot: Slot


@dataclass(frozen=True, slots=True, kw_only=True)
class Sleep:
    """Nothing due: look again at ``until``, the next slot or ``now`` plus the hourly
    ceiling, whichever comes first (the ceiling bounds clock-change detection)."""

    needs_workspace: ClassVar[bool] = True
    until: datetime
    next_slot: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class Finished:
    """Running with no slot left: ``reason`` is the bound that ends it (the one reads
    show), ``None`` for a schedule without a first Play (nothing to count slots from)."""

    needs_workspace: ClassVar[bool] = True
    reason: EndReason | None


Decision = Gone | Attend | Compact | Dormant | Launch | Sleep | Finished


def decide(document: DocState | None, now: datetime) -> Decision:
    """What to do with ``document`` (``None``: none, or a tombstone) at ``now``. Pure:
    the same document and instant always give the same decision."""
    if document is None or document.phase is Phase.TOMBSTONE:
        return Gone()
    body = document.body
    if body.pending is not None:
        return Attend(pending=body.pending)
    if document.phase is Phase.DELETING:
        return Compact()
    if document.state is not State.RUNNING or body.interruption is not None:
        return Dormant(state=document.state, interruption=body.interruption)
    config = document.config
    if not quota_exhausted(config, body):
        slot = latest_missed(config, body, now)
        if slot is not None:
            return Launch(slot=slot)
    found = next_due_or_end(config, body)
    if isinstance(found, datetime):
        return Sleep(until=min(found, now + MAX_SLEEP), next_slot=found)
    return Finished(reason=found)
