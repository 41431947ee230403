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


# kalends: each schedule's last slots, kept while its document is unchanged (see
# _slots); a process keeps at most this many schedules' (some 50 bytes a slot).
MAX_KEPT = 4096
_kept: dict[UUID, tuple[str | None, str | None, int, datetime, int, list[Slot]]] = {}


def _slots(row: ScheduleRow, now: datetime, until: datetime, most: int) -> list[Slot]:
    """At most ``most`` of the schedule's slots after ``now``, enough to pass ``until``.

    The slots depend on the document and on the instant they follow (the later of the
    high-water mark and ``now``) alone, and are the same for every instant before the
    first of them: those of an unchanged document are kept and given again while that
    holds and they still reach past ``until`` (or hold all there are, or ``most``). A
    document that changed, or a first slot that passed, asks the rule again.
    """
    doc = doc_of(row)
    body = doc.body
    played = body.first_play_at is not None
    after = max(body.high_water or now, now)
    kept = _kept.get(row.id) if played else None
    if kept is not None:
        config, stored_body, kept_most, since, count, slots = kept
        if (
            config == row.config
            and stored_body == row.body
            and kept_most == most
            and since <= after
            and (not slots or after < slots[0].at)
            and (len(slots) < count or slots[-1].at > until or count >= most)
        ):
            return slots
    if played:
        body = replace(body, high_water=after)
    count = min(_FIRST_ASK, most)
    while True:
        slots = preview_slots(doc.config, body, now, count)
        if len(slots) < count or slots[-1].at > until or count >= most:
            break
        count = min(4 * count, most)
    if played:
        if len(_kept) >= MAX_KEPT:
            _kept.clear()
        _kept[row.id] = (row.config, row.body, most, after, count, slots)
    return slots
