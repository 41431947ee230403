"""Which task is the open occurrence of a live series: asked by completion and reparenting."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import bindparam, select
from sqlalchemy.engine import Connection

from kalends.storage.task_tables import series_occurrences, task_series

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
