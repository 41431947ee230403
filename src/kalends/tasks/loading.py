"""Reading tasks back as values: rows with their tags and reminders.

Every read is a fixed number of statements, whatever the number of tasks: the
tasks, then their tags, then their reminders.

The rows are the driver's, typed by the protocols of what is read of them
(:class:`~kalends.tasks.task_rows.ShownTask`, ``ReminderColumns``, ``TagPair``) rather
than made into one more value each: every row is read once, here, into its
:class:`Task` or :class:`Reminder`, in the loop the page and tree reads spend their time
in (``bench/tasks.py`` (c), ``bench/api.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any
from uuid import UUID

from sqlalchemy import Select, bindparam, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import BindParameter

from kalends.storage.task_tables import (
    tags,
    task_reminders,
    task_tags,
    tasks,
)
from kalends.tasks.models import (
    TASK_COLUMNS,
    Task,
    reminder_from_row,
)
from kalends.tasks.skips import SHOWN_STATUS, SKIPPED, is_skipped
from kalends.tasks.task_rows import ReminderColumns, ShownTask, TagPair, TaskRow
from kalends.tasks.values import Reminder, TaskStatus

TaskIds = BindParameter[Any] | Select[Any]
"""Which tasks a read is of: an expanding bind of their IDs, or a subquery of them."""


def tags_of(ids: TaskIds) -> Select[Any]:
    return (
        select(task_tags.c.task_id, tags.c.name)
        .join(tags, tags.c.id == task_tags.c.tag_id)
        .where(task_tags.c.task_id.in_(ids))
        .order_by(tags.c.name)
    )


def reminders_of(ids: TaskIds) -> Select[Any]:
    return (
        select(task_reminders)
        .where(task_reminders.c.task_id.in_(ids))
        .order_by(task_reminders.c.task_id, task_reminders.c.position)
    )


# Built once for the common case of a list of IDs.
_IDS: BindParameter[Any] = bindparam("ids", expanding=True)
_TAGS_OF_IDS = tags_of(_IDS)
_REMINDERS_OF_IDS = reminders_of(_IDS)
# Every read of tasks as values brings the status they are shown with (skipped or not)
# as one more column after the tasks' own.
SHOWN = SHOWN_STATUS.label("shown_status")
_TASKS_OF_IDS = select(tasks, SHOWN).where(tasks.c.id.in_(_IDS))


def _extras(
    conn: Connection, ids: list[UUID] | Select[Any]
) -> tuple[dict[UUID, tuple[str, ...]], dict[UUID, tuple[Reminder, ...]]]:
    """Tags and reminders of the tasks whose IDs ``ids`` selects (a list or a subquery)."""
    if isinstance(ids, list):
        tag_rows = conn.execute(_TAGS_OF_IDS, {"ids": ids})
        reminder_rows = conn.execute(_REMINDERS_OF_IDS, {"ids": ids})
    else:
        tag_rows = conn.execute(tags_of(ids))
        reminder_rows = conn.execute(reminders_of(ids))
    return _by_task(tag_rows, reminder_rows)


def _by_task(
    tag_rows: Iterable[TagPair], reminder_rows: Iterable[ReminderColumns]
) -> tuple[dict[UUID, tuple[str, ...]], dict[UUID, tuple[Reminder, ...]]]:
    """Tag rows ``(task_id, name)`` and reminder rows, grouped by task in their order."""
    tag_map: dict[UUID, list[str]] = {}
    for task_id, name in tag_rows:
        tag_map.setdefault(task_id, []).append(name)
    reminder_map: dict[UUID, list[Reminder]] = {}
    for row in reminder_rows:
        reminder_map.setdefault(row.task_id, []).append(reminder_from_row(row))
    return (
        {k: tuple(v) for k, v in tag_map.items()},
        {k: tuple(v) for k, v in reminder_map.items()},
    )


def tasks_from(
    rows: Sequence[ShownTask],
    tag_rows: Iterable[TagPair],
    reminder_rows: Iterable[ReminderColumns],
) -> list[Task]:
    """Tasks from ``tasks`` rows with their tag and reminder rows."""
    return _with_extras(rows, *_by_task(tag_rows, reminder_rows))


def _with_extras(
    rows: Sequence[ShownTask],
    tag_map: dict[UUID, tuple[str, ...]],
    reminder_map: dict[UUID, tuple[Reminder, ...]],
) -> list[Task]:
    built = []
    for row in rows:
        # The tasks columns come first in every row read here; extra columns follow.
        m = dict(zip(TASK_COLUMNS, row, strict=False))
        task_id = m["id"]
        built.append(
            Task.from_mapping(
                m,
                tag_map.get(task_id, ()),
                reminder_map.get(task_id, ()),
                skipped=is_skipped(row.shown_status),
            )
        )
    return built


def build_tasks(
    conn: Connection, rows: Sequence[ShownTask], ids: list[UUID] | Select[Any]
) -> list[Task]:
    """Tasks from ``tasks`` rows, with the tags and reminders of the tasks ``ids`` selects
    (their IDs, or a subquery of them that covers them)."""
    if not rows:
        return []
    return _with_extras(rows, *_extras(conn, ids))


def task_after_write(
    conn: Connection, row: TaskRow, written: dict[str, Any], *, reminders: tuple[Reminder, ...]
) -> Task:
    """The task as a row read in this transaction plus the columns written since.

    Only the tags are read again, so a hot write path need not read the task back (nor
    whether a skip settled it, unless it was settled before this write and still is).
    """
    merged = replace(row, **written)
    tag_names = tuple(r.name for r in conn.execute(_TAGS_OF_IDS, {"ids": [row.id]}))
    skipped = (
        "status" not in written
        and merged.status == TaskStatus.COMPLETED.value
        and conn.execute(_SHOWN_OF_TASK, {"task_id": row.id}).scalar() == SKIPPED
    )
    return Task.from_row(merged, tag_names, reminders, skipped=skipped)


_SHOWN_OF_TASK = select(SHOWN_STATUS).where(tasks.c.id == bindparam("task_id"))


def load_tasks(conn: Connection, ids: Sequence[UUID]) -> list[Task]:
    """The tasks with these IDs, in the order given."""
    rows = {r.id: r for r in conn.execute(_TASKS_OF_IDS, {"ids": list(ids)})}
    built = {t.id: t for t in build_tasks(conn, list(rows.values()), list(ids))}
    return [built[i] for i in ids if i in built]
