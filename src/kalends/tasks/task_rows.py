"""The rows the role checks read (:mod:`kalends.tasks.access`), as typed immutable values.

Each is a :class:`~typing.NamedTuple` made by position from the row the statement
gives, in the statement's column order (a test holds each to its statement): as cheap
as the row itself, and read by name as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime
from typing import Any, NamedTuple
from uuid import UUID


class TaskRow(NamedTuple):
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
    def from_row(cls, row: Iterable[Any]) -> TaskRow:
        """The value of a row of the role check's statement, by position."""
        return cls._make(row)


class TaskDetailRow(NamedTuple):
    """A task as the detail's role check reads it: :class:`TaskRow`'s columns, then its
    list's revision, the status it is shown with, its section's name and how many live
    children it has."""

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
    list_revision: int
    shown_status: str
    section_name: str | None
    live_children: int

    @classmethod
    def from_row(cls, row: Iterable[Any]) -> TaskDetailRow:
        """The value of a row of the detail's statement, by position."""
        return cls._make(row)


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


__all__ = ["ListRow", "TaskDetailRow", "TaskRow"]
