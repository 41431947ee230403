"""Which task is the open occurrence of a live series: asked by completion, reparenting and
every change that grows a checklist."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import bindparam, select
from sqlalchemy.engine import Connection

from kalends.storage.task_tables import series_occurrences, task_series
from kalends.tasks.series_rules import MAX_CHECKLIST_TASKS
from kalends.tasks.successors import ChecklistTooLarge
from kalends.tasks.tree import ancestor_ids, subtree_ids

_LIVE_OCCURRENCE = (
    select(series_occurrences.c.ordinal)
    .join(task_series, task_series.c.id == series_occurrences.c.series_id)
    .where(
        series_occurrences.c.root_task_id == bindparam("task_id"),
        series_occurrences.c.status == "outstanding",
        task_series.c.status.in_(("active", "paused")),
    )
)


def is_recurring_root(conn: Connection, task_id: UUID) -> bool:
    """Whether the task is the outstanding occurrence of an active or paused series."""
    return conn.execute(_LIVE_OCCURRENCE, {"task_id": task_id}).first() is not None


def check_checklist_room(conn: Connection, task_id: UUID, adding: int, field: str) -> None:
    """Refuses a checklist change that leaves the outstanding occurrence of a live series
    (the one ``task_id`` belongs to, if any) with more than :data:`MAX_CHECKLIST_TASKS` live
    tasks once ``adding`` more are counted: seed 000 bounds a series' live checklist to 500
    tasks, so it never grows past what its next completion may copy. Raises
    :class:`ChecklistTooLarge`; the caller's transaction then writes nothing."""
    ancestors = ancestor_ids(conn, task_id)
    root_id = ancestors[-1] if ancestors else task_id
    if not is_recurring_root(conn, root_id):
        return
    total = len(subtree_ids(conn, root_id, live_only=True)) + adding
    if total > MAX_CHECKLIST_TASKS:
        raise ChecklistTooLarge(
            f"{field}: the checklist of a recurring series holds at most "
            f"{MAX_CHECKLIST_TASKS} live tasks; this would make it {total}",
            field=field,
            tasks=total,
            limit=MAX_CHECKLIST_TASKS,
        )
