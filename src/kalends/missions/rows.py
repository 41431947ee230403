"""The rows the schedule repository reads, as typed immutable values: a schedule's row,
the same row as a read shows it (with its wake's columns and the reader's role), a
control's record, and what a control reads first. Each is built from a driver row by its
``from_row`` only. :class:`StoredSchedule` names what the document functions read of any
of them (and of the scheduler's :class:`~kalends.missions.scheduler_rows.SchedulerRow`).

They are named tuples whose fields are the columns in the order the repository selects
them, so a row becomes one without a lookup per column: a listing builds 64 of them per
call, and a frozen dataclass of 21 fields costs about ten times as much to build. A test
holds each read's columns to its fields. ``phase`` and ``state`` stay the stored
strings (a :class:`~kalends.missions.document.Phase` or ``State`` compares equal to its
own); the document stays its text, parsed once and cached by that text by
:func:`~kalends.missions.stored_documents.doc_of`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple, Protocol
from uuid import UUID

__all__ = [
    "ControlRead",
    "ControlRecord",
    "Schedule",
    "ScheduleRead",
    "ScheduleRow",
    "StoredSchedule",
]


class StoredSchedule(Protocol):
    """The ``schedules`` columns that parse into a document and that its compare-and-swap
    and compaction write against (:mod:`kalends.missions.stored_documents`): what a
    :class:`ScheduleRow`, a :class:`ScheduleRead` and the scheduler's
    :class:`~kalends.missions.scheduler_rows.SchedulerRow` all have. A protocol, not one
    more value: each of those is already built once, by its own ``from_row``, from a read
    with its own further columns. ``config`` and ``body`` are ``None`` for a tombstone."""

    @property
    def id(self) -> UUID: ...
    @property
    def workspace_id(self) -> UUID: ...
    @property
    def phase(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def revision(self) -> int: ...
    @property
    def evicted_control_revision(self) -> int: ...
    @property
    def title(self) -> str: ...
    @property
    def creation_request_id(self) -> str: ...
    @property
    def config(self) -> str | None: ...
    @property
    def body(self) -> str | None: ...


class ScheduleRow(NamedTuple):
    """A schedule's row as stored (the ``schedules`` columns, in their order);
    ``config`` and ``body`` are ``None`` for a tombstone."""

    id: UUID
    workspace_id: UUID
    phase: str
    state: str
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
        return cls._make(row)


class ScheduleRead(NamedTuple):
    """A schedule's row as a read shows it: the ``schedules`` columns, then its wake's,
    which are outside the document's revision (whether a scheduler holds it, its last
    error), then the reading actor's role on its workspace (``None``: no member, or not
    asked)."""

    id: UUID
    workspace_id: UUID
    phase: str
    state: str
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
    wake_owner: str | None
    wake_lease: datetime | None
    last_error_code: str | None
    last_error_at: datetime | None
    last_error_message: str | None
    role: str | None

    @classmethod
    def from_row(cls, row: Any) -> ScheduleRead:
        """A read's row that starts with these columns (a control's read has more)."""
        return cls._make(row[:_READ_COLUMNS])


Schedule = ScheduleRow | ScheduleRead
"""A schedule's row, whichever way it was read."""

_READ_COLUMNS = len(ScheduleRead._fields)


class ControlRecord(NamedTuple):
    """A control's record under its request ID (the ``schedule_controls`` columns, in
    their order): applied (``outcome`` is ``APPLIED``) or refused (``outcome`` holds the
    refusal, :mod:`kalends.missions.refusals`)."""

    schedule_id: UUID
    request_id: str
    action: str
    expected_revision: int
    recorded_revision: int
    complete: bool
    digest: str
    outcome: str
    at: datetime

    @classmethod
    def from_row(cls, row: Any) -> ControlRecord:
        """A row of the ``schedule_controls`` table."""
        return cls._make(row)


_RECORD_COLUMNS = len(ControlRecord._fields)


class ControlRead(NamedTuple):
    """A control's first read: the schedule, the record of the control's request ID when
    that request was answered before (applied or refused), and how many records the
    schedule keeps."""

    schedule: ScheduleRead
    repeat: ControlRecord | None
    control_count: int

    @classmethod
    def from_row(cls, row: Any) -> ControlRead:
        """A schedule's read, then the request's record (its columns, ``NULL`` when there is
        none), then ``control_count``."""
        end = _READ_COLUMNS + _RECORD_COLUMNS
        record = row[_READ_COLUMNS:end]
        return cls(
            ScheduleRead.from_row(row),
            None if record[0] is None else ControlRecord._make(record),
            row[end],
        )
