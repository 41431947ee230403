"""The rows the schedule repository reads, as frozen values: a schedule's row, the same
row as a read shows it (with the actor's role and the wake's columns), a control's record,
and what a control reads first. Each is built from a driver row by its ``from_row`` only.

A schedule's document stays the stored text here: it is parsed once, cached by that
text, by :func:`~kalends.missions.stored_documents.doc_of`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from kalends.missions.document import Phase, State

__all__ = ["ControlRead", "ControlRecord", "ScheduleRead", "ScheduleRow"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduleRow:
    """A schedule's row as stored; ``config`` and ``body`` are ``None`` for a tombstone."""

    id: UUID
    workspace_id: UUID
    phase: Phase
    state: State
    revision: int
    evicted_control_revision: int
    title: str
    creation_request_id: str
    creation_digest: str
    config: str | None
    body: str | None
    size: int
    next_due_at: datetime | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: Any) -> ScheduleRow:
        """A row of the ``schedules`` table."""
        return cls(**_schedule_columns(row))


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduleRead(ScheduleRow):
    """A schedule's row as a read shows it: with the reading actor's role on its workspace
    (``None``: no member, or not asked) and its wake's columns, which are outside the
    document's revision: whether a scheduler holds it, and its last error."""

    role: str | None
    wake_owner: str | None
    wake_lease: datetime | None
    last_error_code: str | None
    last_error_at: datetime | None
    last_error_message: str | None

    @classmethod
    def from_row(cls, row: Any) -> ScheduleRead:
        """A row of the ``schedules`` table with the wake's labelled columns and, when the
        read names an actor, their ``role``."""
        return cls(
            **_schedule_columns(row),
            role=getattr(row, "role", None),
            wake_owner=row.wake_owner,
            wake_lease=row.wake_lease,
            last_error_code=row.last_error_code,
            last_error_at=row.last_error_at,
            last_error_message=row.last_error_message,
        )


def _schedule_columns(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "workspace_id": row.workspace_id,
        "phase": Phase(row.phase),
        "state": State(row.state),
        "revision": row.revision,
        "evicted_control_revision": row.evicted_control_revision,
        "title": row.title,
        "creation_request_id": row.creation_request_id,
        "creation_digest": row.creation_digest,
        "config": row.config,
        "body": row.body,
        "size": row.size,
        "next_due_at": row.next_due_at,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }


_CONTROL_COLUMNS = (
    "request_id",
    "action",
    "expected_revision",
    "recorded_revision",
    "complete",
    "digest",
    "outcome",
    "at",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlRecord:
    """A control's record under its request ID: applied (``outcome`` is ``APPLIED``) or
    refused (``outcome`` holds the refusal, :mod:`kalends.missions.refusals`)."""

    request_id: str
    action: str
    expected_revision: int
    recorded_revision: int
    complete: bool
    digest: str
    outcome: str
    at: datetime

    @classmethod
    def from_row(cls, row: Any, *, prefix: str = "") -> ControlRecord:
        """A row of the ``schedule_controls`` table, each column named ``prefix`` and its
        name (a record read beside its schedule's columns)."""
        request_id, action, expected, recorded, complete, digest, outcome, at = (
            getattr(row, prefix + name) for name in _CONTROL_COLUMNS
        )
        return cls(
            request_id=request_id,
            action=action,
            expected_revision=expected,
            recorded_revision=recorded,
            complete=bool(complete),
            digest=digest,
            outcome=outcome,
            at=at,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlRead:
    """A control's first read: the schedule, the record of the control's request ID when
    that request was answered before (applied or refused), and how many records the
    schedule keeps."""

    schedule: ScheduleRead
    repeat: ControlRecord | None
    control_count: int

    @classmethod
    def from_row(cls, row: Any) -> ControlRead:
        """A schedule's read with the request's record as ``repeat_``-prefixed columns and
        ``control_count``."""
        return cls(
            schedule=ScheduleRead.from_row(row),
            repeat=None
            if row.repeat_request_id is None
            else ControlRecord.from_row(row, prefix="repeat_"),
            control_count=row.control_count,
        )
