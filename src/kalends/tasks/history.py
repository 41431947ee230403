"""The append-only history of each task, written in the operation's own transaction."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import bindparam, insert, select
from sqlalchemy.engine import Connection

from kalends.storage.prepared import inserting
from kalends.storage.task_tables import task_history, tasks
from kalends.tasks.models import HistoryEvent


@dataclass(frozen=True, slots=True)
class Event:
    task_id: UUID
    kind: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    series_id: UUID | None = None
    occurrence: int | None = None


def record(conn: Connection, actor_id: UUID | None, at: datetime, events: Iterable[Event]) -> None:
    """Appends ``events`` in one statement."""
    rows = [
        {
            "task_id": e.task_id,
            "kind": e.kind,
            "actor_id": actor_id,
            "at": at,
            "payload": dict(e.payload),
            "series_id": e.series_id,
            "occurrence": e.occurrence,
        }
        for e in events
    ]
    if rows:
        _APPEND.many(conn, rows)


# Run on the driver: SQLAlchemy's own executemany converted each row's parameters one by
# one (the same instant and actor again for each of a checklist's tasks).
_APPEND = inserting(
    task_history, ("task_id", "kind", "actor_id", "at", "payload", "series_id", "occurrence")
)


def record_same(
    conn: Connection,
    actor_id: UUID | None,
    at: datetime,
    task_ids: Sequence[UUID],
    kind: str,
    payload: Mapping[str, Any],
    *,
    series_id: UUID | None = None,
    occurrence: int | None = None,
) -> None:
    """Appends one identical event to many tasks in one INSERT … SELECT.

    Only the IDs are bound per task; the rest is bound once, which keeps a
    500-task cascade cheap.
    """
    conn.execute(
        _SAME_EVENT,
        {
            "ids": list(task_ids),
            "kind": kind,
            "actor_id": actor_id,
            "at": at,
            "payload": dict(payload),
            "series_id": series_id,
            "occurrence": occurrence,
        },
    )


_SAME_EVENT = insert(task_history).from_select(
    ["task_id", "kind", "actor_id", "at", "payload", "series_id", "occurrence"],
    select(
        tasks.c.id,
        bindparam("kind", type_=task_history.c.kind.type),
        bindparam("actor_id", type_=task_history.c.actor_id.type),
        bindparam("at", type_=task_history.c.at.type),
        bindparam("payload", type_=task_history.c.payload.type),
        bindparam("series_id", type_=task_history.c.series_id.type),
        bindparam("occurrence", type_=task_history.c.occurrence.type),
    ).where(tasks.c.id.in_(bindparam("ids", expanding=True))),
)


def read(conn: Connection, task_id: UUID) -> list[HistoryEvent]:
    rows = conn.execute(
        select(task_history).where(task_history.c.task_id == task_id).order_by(task_history.c.id)
    )
    return [
        HistoryEvent(
            id=r.id,
            task_id=r.task_id,
            kind=r.kind,
            actor_id=r.actor_id,
            at=r.at,
            payload=r.payload,
            series_id=r.series_id,
            occurrence=r.occurrence,
        )
        for r in rows
    ]
