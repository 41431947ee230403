"""What an actor's calendar feed shows, read in one transaction: the open tasks with a
due value in the lists the actor is a member of now, with the actor's own reminders
(:func:`kalends.tasks.due_tasks`), and the coming passages of the running schedules in
the actor's workspaces (:func:`kalends.missions.coming_passages`).

A list the actor left, an archived list, a trashed or completed task, a workspace the
actor is no member of and a paused, stopped or deleted schedule show nothing. Passages
are those of the next :data:`PASSAGE_HORIZON`, at most
:data:`MAX_PASSAGES_PER_SCHEDULE` of each schedule.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.engine import Connection

from kalends.missions import ComingPassage, coming_passages
from kalends.storage.identity_tables import actors
from kalends.tasks import DueTask, due_tasks

__all__ = ["MAX_PASSAGES_PER_SCHEDULE", "PASSAGE_HORIZON", "Contents", "read_contents"]

# The passages a feed shows: those of the next 30 days (issue 21).
PASSAGE_HORIZON = timedelta(days=30)
# kalends: a schedule that runs often (every few minutes) shows only its next passages.
MAX_PASSAGES_PER_SCHEDULE = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class Contents:
    """Everything a feed shows, in a stable order (tasks by ID, passages by schedule and
    instant), so that the same data renders the same text."""

    handle: str
    tasks: tuple[DueTask, ...]
    passages: tuple[ComingPassage, ...]


def read_contents(conn: Connection, actor_id: UUID, now: datetime) -> Contents:
    """What the feed of ``actor_id`` shows at ``now``."""
    handle = conn.execute(select(actors.c.handle).where(actors.c.id == actor_id)).scalar_one()
    until = now + PASSAGE_HORIZON
    return Contents(
        handle=handle,
        tasks=tuple(due_tasks(conn, actor_id)),
        passages=tuple(coming_passages(conn, actor_id, now, until, MAX_PASSAGES_PER_SCHEDULE)),
    )
