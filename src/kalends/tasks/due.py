"""The open tasks with a due value that an actor sees now, with that actor's reminders:
what a calendar of the actor's tasks shows.

Only tasks of the lists the actor is a member of now, and of active lists; trashed and
completed tasks are not due. A reminder is the actor's own when they are its recipient.

A calendar app polls this every few minutes for thousands of tasks, so the rows are
named tuples, and the task IDs are read as the driver gives them and turned into UUIDs
the short way (SQLAlchemy's own conversion was a third of the read).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, datetime
from typing import Any, NamedTuple
from uuid import UUID

from sqlalchemy import and_, or_, select, type_coerce
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.types import NullType

from kalends.storage.task_tables import list_members, lists, task_reminders, tasks
from kalends.tasks.values import ListStatus, TaskStatus

__all__ = ["DueReminder", "DueTask", "due_tasks"]

_T = tasks.c
# Read as the driver gives it: 32 hex digits on SQLite, a UUID on PostgreSQL.
_RAW = NullType()


class DueReminder(NamedTuple):
    """One of the actor's reminders of a task: its instant, and its wall time in its own
    zone (``local``, naive)."""

    at: datetime
    local: datetime


class DueTask(NamedTuple):
    """An open task with a due value: a date (``due_date``), or an instant (``due_at``)
    written in ``zone``; ``reminders``: the actor's own, in their order."""

    id: UUID
    ref: str
    title: str
    description: str
    list_name: str
    due_date: date | None
    due_at: datetime | None
    zone: str | None
    updated_at: datetime
    reminders: tuple[DueReminder, ...]
    list_id: UUID
    # The due wall time in ``zone`` (naive), beside ``due_at``.
    due_local: datetime | None


def _uuid(raw: Any) -> UUID:
    if isinstance(raw, UUID):
        return raw
    # SQLite's 32 hex digits are the UUID's integer.
    return UUID(int=int(raw, 16))


def _shown(actor_id: UUID, through: date | None, before: datetime | None) -> ColumnElement[bool]:
    """Whether a task (joined with its list and the actor's membership) is due for them,
    by the bounds when there are some."""
    dated = _T.due_date.is_not(None) if through is None else _T.due_date <= through
    timed = _T.due_at.is_not(None) if before is None else _T.due_at < before
    return and_(
        list_members.c.actor_id == actor_id,
        lists.c.status == ListStatus.ACTIVE.value,
        _T.status == TaskStatus.OPEN.value,
        _T.trashed.is_(False),
        or_(dated, timed),
    )


def due_tasks(
    conn: Connection,
    actor_id: UUID,
    *,
    through: date | None = None,
    before: datetime | None = None,
) -> list[DueTask]:
    """The open tasks with a due value in the actor's active lists, by task ID: every one,
    or, with bounds, those due on a date up to ``through`` or at an instant before
    ``before`` (both bounds apply together: a bound left out lets that kind through)."""
    shown = _shown(actor_id, through, before)
    joined = tasks.join(list_members, list_members.c.list_id == _T.list_id).join(
        lists, lists.c.id == _T.list_id
    )
    raw_id = type_coerce(_T.id, _RAW)
    reminders: dict[Any, list[DueReminder]] = defaultdict(list)
    for task_id, at, local in conn.execute(
        select(raw_id, task_reminders.c.at, task_reminders.c.local)
        .select_from(joined.join(task_reminders, task_reminders.c.task_id == _T.id))
        .where(shown, task_reminders.c.recipient_id == actor_id)
        .order_by(task_reminders.c.task_id, task_reminders.c.position)
    ):
        # Written as YYYY-MM-DDTHH:MM:SS, checked when it was set.
        reminders[task_id].append(DueReminder(at, datetime.fromisoformat(local)))
    rows = conn.execute(
        select(
            raw_id,
            _T.ref,
            _T.title,
            _T.description,
            lists.c.name,
            _T.due_date,
            _T.due_at,
            _T.due_zone,
            _T.updated_at,
            type_coerce(_T.list_id, _RAW),
            _T.due_local,
        )
        .select_from(joined)
        .where(shown)
        .order_by(_T.id)
    ).all()
    none: tuple[DueReminder, ...] = ()
    return [
        DueTask(
            _uuid(raw),
            ref,
            title,
            description or "",
            list_name,
            due_date if due_at is None else None,
            due_at,
            zone if due_at is not None else None,
            updated_at,
            tuple(reminders[raw]) if raw in reminders else none,
            _uuid(list_raw),
            None if due_at is None else datetime.fromisoformat(local),
        )
        for (
            raw,
            ref,
            title,
            description,
            list_name,
            due_date,
            due_at,
            zone,
            updated_at,
            list_raw,
            local,
        ) in rows
    ]
