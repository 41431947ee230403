"""The coming passages of the running schedules in an actor's workspaces: what a
calendar of the actor's schedules shows.

A paused, stopped or deleted schedule has none. The slots are those the preview shows
(:func:`~kalends.missions.document.preview_slots`: the policy, the end bounds and the
quota), from the given instant on: a slot missed before it is the scheduler's to catch
up, not a coming passage.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import NamedTuple
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.engine import Connection

from kalends.civil import Slot
from kalends.missions.document import Phase, State, preview_slots
from kalends.missions.rows import ScheduleRow
from kalends.missions.stored_documents import doc_of
from kalends.storage.mission_tables import schedules, workspace_members, workspaces

__all__ = ["ComingPassage", "coming_passages"]

_SCHEDULE_COLUMNS = len(ScheduleRow._fields)
# The slots asked for first; a schedule with more before ``until`` is asked again for
# four times as many (most schedules run at most a few times a day).
_FIRST_ASK = 40


class ComingPassage(NamedTuple):
    """A coming passage: its schedule, the slot's instant and the zone it is written in;
    ``updated_at``: when the schedule last changed. A named tuple: a feed holds
    thousands."""

    schedule_id: UUID
    title: str
    workspace_name: str
    at: datetime
    zone: str
    updated_at: datetime


def coming_passages(
    conn: Connection, actor_id: UUID, now: datetime, until: datetime, per_schedule: int
) -> list[ComingPassage]:
    """The passages after ``now`` and not after ``until`` of the running schedules in the
    workspaces the actor is a member of, at most ``per_schedule`` of each; by schedule ID,
    then instant."""
    rows = conn.execute(
        select(schedules, workspaces.c.name.label("workspace_name"))
        .join(workspace_members, workspace_members.c.workspace_id == schedules.c.workspace_id)
        .join(workspaces, workspaces.c.id == schedules.c.workspace_id)
        .where(
            workspace_members.c.actor_id == actor_id,
            schedules.c.phase == Phase.LIVE.value,
            schedules.c.state == State.RUNNING.value,
        )
        .order_by(schedules.c.id)
    ).all()
    found: list[ComingPassage] = []
    for r in rows:
        row = ScheduleRow._make(tuple(r)[:_SCHEDULE_COLUMNS])
        if row.next_due_at is not None and row.next_due_at > until:
            continue  # its next slot is past the horizon: nothing to compute
        made = (row.id, row.title, r.workspace_name)
        found.extend(
            ComingPassage(*made, slot.at, slot.zone, row.updated_at)
            for slot in _slots(row, now, until, per_schedule)
            if now < slot.at <= until
        )
    return found


def _slots(row: ScheduleRow, now: datetime, until: datetime, most: int) -> list[Slot]:
    """At most ``most`` of the schedule's slots after ``now``, enough to pass ``until``."""
    doc = doc_of(row)
    body = doc.body
    if body.first_play_at is not None:
        body = replace(body, high_water=max(body.high_water or now, now))
    count = min(_FIRST_ASK, most)
    while True:
        slots = preview_slots(doc.config, body, now, count)
        if len(slots) < count or slots[-1].at > until or count >= most:
            return slots
        count = min(4 * count, most)
