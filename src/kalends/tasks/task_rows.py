"""The rows the task store reads, typed.

The rows the role checks read (:mod:`kalends.tasks.access`), a series and its
occurrences, and what a successor is copied from are typed immutable values made by
position from the row the statement gives, in the statement's column order (a test holds
each to its statement), by their ``from_row``, and read by name as before: a
:class:`~typing.NamedTuple` each, but for the task's two rows, frozen dataclasses so that
the detail's row extends the role check's (one row a request: the cost is nothing).

The reads of many tasks as values or as JSON (:mod:`kalends.tasks.loading`,
:mod:`kalends.tasks.tree_json`) pass the driver's rows on as they come instead, each
read once into a :class:`~kalends.tasks.models.Task` or a JSON object: a page or a tree
is hundreds of rows, and one more object made per row would only add to the loop that
the API's page reads spend their time in. Their types are protocols of what those reads
take of a row (:class:`ShownTask`, :class:`ReminderColumns`, and as
the database gives them, :class:`RawTaskRow` and :class:`RawReminderRow`), which the
driver's rows and the values above both meet.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from datetime import date, datetime
from typing import Any, NamedTuple, Protocol, Self
from uuid import UUID


@dataclass(frozen=True, slots=True)
class TaskRow:
    """A task as the role check reads it: the tasks table's columns in table order, then
    its list's status and name and the actor's role on that list (``None``: no member)."""

    id: UUID
    ref: str
    list_id: UUID
    section_id: UUID | None
    parent_id: UUID | None
    position: int
    title: str
    description: str
    status: str
    completed_at: datetime | None
    trashed: bool
    trashed_at: datetime | None
    revision: int
    schedule_revision: int
    priority: int | None
    planned_date: date | None
    due_date: date | None
    due_local: str | None
    due_zone: str | None
    due_at: datetime | None
    series_id: UUID | None
    occurrence: int | None
    created_by: UUID
    created_at: datetime
    updated_at: datetime
    list_status: str
    list_name: str
    role: str | None

    @classmethod
    def from_row(cls, row: Iterable[Any]) -> Self:
        """The value of a row of the role check's statement, by position."""
        return cls(*row)

    def __iter__(self) -> Iterator[Any]:
        """The columns in order, as the statement's row has them."""
        return (getattr(self, column.name) for column in fields(self))


@dataclass(frozen=True, slots=True)
class TaskDetailRow(TaskRow):
    """A task as the detail's role check reads it: :class:`TaskRow`'s columns, then its
    list's revision, the status it is shown with, its section's name and how many live
    children it has."""

    list_revision: int
    shown_status: str
    section_name: str | None
    live_children: int


class ListRow(NamedTuple):
    """A list as the role check reads it: the lists table's columns in table order, then
    the actor's role on it (``None``: no member)."""

    id: UUID
    name: str
    status: str
    revision: int
    created_at: datetime
    role: str | None

    @classmethod
    def from_row(cls, row: Iterable[Any]) -> ListRow:
        """The value of a row of the list's role check, by position."""
        return cls._make(row)


class ShownTask(Protocol):
    """A task as a read of tasks as values gives it (``select(tasks, SHOWN)``, or the
    detail's :class:`TaskDetailRow`): the ``tasks`` columns first, in
    :data:`~kalends.tasks.models.TASK_COLUMNS` order, which :mod:`kalends.tasks.loading`
    reads by position; more columns may follow, ``shown_status`` among them (the status
    the task is shown with: skipped or not). By name, the trees read only these."""

    @property
    def id(self) -> UUID: ...
    @property
    def ref(self) -> str: ...
    @property
    def parent_id(self) -> UUID | None: ...
    @property
    def position(self) -> int: ...
    @property
    def trashed(self) -> bool: ...
    @property
    def shown_status(self) -> str: ...
    def __iter__(self) -> Iterator[Any]: ...


class ReminderColumns(Protocol):
    """A row of ``task_reminders`` (``select(task_reminders)``), by name."""

    @property
    def task_id(self) -> UUID: ...
    @property
    def position(self) -> int: ...
    @property
    def channel(self) -> str: ...
    @property
    def local(self) -> str: ...
    @property
    def zone(self) -> str: ...
    @property
    def at(self) -> datetime: ...
    @property
    def recipient_id(self) -> UUID: ...


class RawTaskRow(Protocol):
    """A task's row as the database gives it (:data:`~kalends.tasks.tree_pages.RAW_TASK_COLUMNS`:
    the ``tasks`` columns in :data:`~kalends.tasks.models.TASK_COLUMNS` order, its IDs,
    instants and dates unconverted: text on SQLite, the driver's objects on PostgreSQL),
    read by position."""

    def __getitem__(self, index: int, /) -> Any: ...


class RawReminderRow(Protocol):
    """A reminder's row as the database gives it
    (:data:`~kalends.tasks.tree_pages.RAW_REMINDER_COLUMNS`), by name: its IDs and instant
    unconverted (text on SQLite, the driver's objects on PostgreSQL)."""

    @property
    def task_id(self) -> str | UUID: ...
    @property
    def channel(self) -> str: ...
    @property
    def local(self) -> str: ...
    @property
    def zone(self) -> str: ...
    @property
    def at(self) -> str | datetime: ...
    @property
    def recipient_id(self) -> str | UUID: ...


TagPair = tuple[UUID, str]
"""A tag row: ``(task_id, name)``."""


class SeriesRow(NamedTuple):
    """A series: the ``task_series`` columns in table order."""

    id: UUID
    list_id: UUID
    first_task_id: UUID
    rule: dict[str, Any]
    local_time: str | None
    zone: str | None
    anchor_date: date
    end_date: date | None
    max_count: int | None
    emitted: int
    status: str
    revision: int
    created_by: UUID
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: Iterable[Any]) -> SeriesRow:
        """The value of a row of ``select(task_series)``, by position."""
        return cls._make(row)


class OccurrenceRow(NamedTuple):
    """An occurrence of a series: the ``series_occurrences`` columns in table order."""

    series_id: UUID
    ordinal: int
    root_task_id: UUID
    occurrence_date: date
    status: str
    settled_at: datetime | None

    @classmethod
    def from_row(cls, row: Iterable[Any]) -> OccurrenceRow:
        """The value of a row of ``select(series_occurrences)``, by position."""
        return cls._make(row)


class SuccessorRoot(NamedTuple):
    """The root of the occurrence a successor is copied from, as the copy reads it."""

    trashed: bool
    list_id: UUID
    due_date: date | None
    due_local: str | None
    due_zone: str | None
    due_at: datetime | None

    @classmethod
    def from_row(cls, row: Iterable[Any]) -> SuccessorRoot:
        return cls._make(row)


class SuccessorSource(NamedTuple):
    """A live task of the checklist a successor copies: its ID and its timed due value
    (all three ``None`` or none: the ``tasks`` table's check), which the copy moves."""

    id: UUID
    due_local: str | None
    due_zone: str | None
    due_at: datetime | None

    @classmethod
    def from_row(cls, row: Iterable[Any]) -> SuccessorSource:
        return cls._make(row)


__all__ = [
    "ListRow",
    "OccurrenceRow",
    "RawReminderRow",
    "RawTaskRow",
    "ReminderColumns",
    "SeriesRow",
    "ShownTask",
    "SuccessorRoot",
    "SuccessorSource",
    "TagPair",
    "TaskDetailRow",
    "TaskRow",
]
