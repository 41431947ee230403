"""Helpers of the reminder-outbox tests: a small world of actors and lists, reminders set
through the public schedule API, and intent rows read or written with SQLAlchemy Core.

Every instant here is UTC and counted from :data:`FAKE_CLOCK_START` (2025-03-01T12:00Z),
so ``minutes(5)`` is 12:05Z on the store's fake clock.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from sqlalchemy import insert, select, update

from kalends.reminders.outbox import Claim
from kalends.storage.task_tables import reminder_intents, tasks
from kalends.storage.testing import FAKE_CLOCK_START
from kalends.storage.unit_of_work import Store
from kalends.tasks import Actor, Task, TaskList, parse_schedule
from tasks.conftest import World, make_world

__all__ = ["World", "make_world"]  # the task suite's world, shared

ri = reminder_intents


def minutes(n: float) -> datetime:
    """The instant ``n`` minutes after the fake clock's start."""
    return FAKE_CLOCK_START + timedelta(minutes=n)


def reminder(at: datetime, channel: str = "email", recipient: str | None = None) -> dict[str, Any]:
    """A reminder at the UTC instant ``at`` (written as a UTC wall time)."""
    data: dict[str, Any] = {
        "channel": channel,
        "local": at.strftime("%Y-%m-%dT%H:%M:%S"),
        "zone": "UTC",
    }
    if recipient is not None:
        data["recipient"] = recipient
    return data


def schedule_reminders(
    world: World, task: Task, *reminders: dict[str, Any], actor: Actor | None = None
) -> Task:
    """Replaces the task's schedule with these reminders through ``set_schedule``."""
    return world.tasks.set_schedule(
        (actor or world.alice).id,
        task.id,
        task.revision,
        parse_schedule({"reminders": list(reminders)}, world.recipient),
    )


def reminded_task(
    world: World,
    *reminders: dict[str, Any],
    title: str = "Call the plumber",
    task_list: TaskList | None = None,
    parent: Task | None = None,
) -> Task:
    """A new task in ``home`` (or ``task_list``) with these reminders set."""
    task = world.tasks.create(
        world.alice.id,
        (task_list or world.home).id,
        title,
        parent=parent.id if parent is not None else None,
    )
    return schedule_reminders(world, task, *reminders)


def intent_rows(store: Store, task_id: UUID | None = None) -> list[Any]:
    """Intent rows (all, or of one task), by instant then channel."""
    stmt = select(ri).order_by(ri.c.at, ri.c.channel, ri.c.schedule_revision)
    if task_id is not None:
        stmt = stmt.where(ri.c.task_id == task_id)
    with store.transaction(write=False) as conn:
        return list(conn.execute(stmt))


def intent_row(store: Store, intent_id: UUID) -> Any:
    with store.transaction(write=False) as conn:
        return conn.execute(select(ri).where(ri.c.id == intent_id)).one()


def intent_ids(store: Store, task_id: UUID) -> list[UUID]:
    return [r.id for r in intent_rows(store, task_id)]


def insert_intents(
    store: Store,
    task_id: UUID,
    schedule_revision: int,
    ats: Sequence[datetime],
    recipient_id: UUID,
    channel: str = "email",
) -> list[UUID]:
    """Writes pending intents directly, in one transaction; returns their IDs in order."""
    ids = [uuid.uuid4() for _ in ats]
    now = store.clock.now()
    with store.transaction() as conn:
        conn.execute(
            insert(ri),
            [
                {
                    "id": intent_id,
                    "task_id": task_id,
                    "schedule_revision": schedule_revision,
                    "channel": channel,
                    "at": at,
                    "recipient_id": recipient_id,
                    "status": "pending",
                    "attempts": 0,
                    "next_attempt_at": at,
                    "created_at": now,
                    "updated_at": now,
                }
                for intent_id, at in zip(ids, ats, strict=True)
            ],
        )
    return ids


def bump_schedule_revision(store: Store, task_id: UUID) -> None:
    """Makes the task's current schedule revision newer behind the service's back."""
    with store.transaction() as conn:
        conn.execute(
            update(tasks)
            .where(tasks.c.id == task_id)
            .values(schedule_revision=tasks.c.schedule_revision + 1)
        )


def by_id(claims: Sequence[Claim]) -> dict[UUID, Claim]:
    return {c.id: c for c in claims}
