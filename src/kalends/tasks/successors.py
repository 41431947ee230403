"""Generating a series' successor occurrence: a fresh copy of the live checklist.

Fresh UUIDs and collision-checked references, new parent links, the same sibling
order, titles, descriptions, tags and sections; everything open; priority and
schedules kept. Date-only planned and due values move by the occurrence's
calendar-day offset. The root's due follows the series' wall clock; timed child
dues and reminders keep their elapsed offset from the root's due instant and are
shown in their own zone. Comments, attachments, history and trashed items are not
copied. All of it is written by set-based inserts in the caller's transaction.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from types import SimpleNamespace
from typing import Any
from uuid import UUID

from sqlalchemy import insert, select
from sqlalchemy.engine import Connection

from kalends.civil import format_local, get_zone, parse_local_datetime
from kalends.civil.zones import Resolution, local_seconds, to_naive_datetime
from kalends.errors import Conflict
from kalends.storage.task_tables import (
    reminder_intents,
    sections,
    tags,
    task_history,
    task_reminders,
    task_tags,
    tasks,
)
from kalends.storage.upsert import insert_missing
from kalends.tasks.models import TASK_COLUMNS
from kalends.tasks.reads import LIVE_TREE, SUBTREE_REMINDERS, SUBTREE_ROWS
from kalends.tasks.refs import new_refs
from kalends.tasks.series_rules import MAX_CHECKLIST_TASKS
from kalends.tasks.values import TaskStatus


def _section_map(conn: Connection, list_id: UUID) -> dict[UUID, UUID]:
    """Section IDs of any list to the target list's section of the same name."""
    target = {
        r.name: r.id for r in conn.execute(select(sections).where(sections.c.list_id == list_id))
    }
    return {
        r.id: target[r.name]
        for r in conn.execute(select(sections).where(sections.c.name.in_(list(target))))
        if r.name in target
    }


def _tag_links(
    conn: Connection, key: dict[str, UUID], fresh: dict[UUID, UUID], list_id: UUID
) -> list[dict[str, UUID]]:
    """The new tasks' tag links, with tags of the target list by name (created if missing)."""
    found = list(
        conn.execute(
            select(task_tags.c.task_id, tags.c.name, tags.c.list_id, tags.c.id)
            .join(tags, tags.c.id == task_tags.c.tag_id)
            .where(task_tags.c.task_id.in_(select(LIVE_TREE.c.id))),
            key,
        )
    )
    foreign = sorted({name for _, name, owner, _ in found if owner != list_id})
    by_name: dict[str, UUID] = {}
    if foreign:
        insert_missing(
            conn,
            tags,
            [{"id": uuid.uuid4(), "list_id": list_id, "name": n} for n in foreign],
            ("list_id", "name"),
        )
        by_name = {
            r.name: r.id
            for r in conn.execute(
                select(tags.c.name, tags.c.id).where(
                    tags.c.list_id == list_id, tags.c.name.in_(foreign)
                )
            )
        }
    return [
        {"task_id": fresh[t], "tag_id": tag_id if owner == list_id else by_name[name]}
        for t, name, owner, tag_id in found
    ]


def _parents_first(rows: dict[UUID, Any], root: UUID) -> list[UUID]:
    """The IDs in breadth-first order, so every parent is inserted before its items."""
    children: dict[UUID, list[UUID]] = {}
    for task_id, row in rows.items():
        if task_id != root:
            children.setdefault(row.parent_id, []).append(task_id)
    ordered = [root]
    for task_id in ordered:
        ordered.extend(children.get(task_id, ()))
    return ordered


class ChecklistTooLarge(Conflict):
    """The recurring checklist holds more live tasks than a series supports (500)."""

    code = "checklist-too-large"


@dataclass(frozen=True, slots=True)
class Occurrence:
    """Where a successor goes: its series, ordinal, date and the root's new due wall time."""

    series_id: UUID
    ordinal: int
    day: date
    day_offset: int
    root_due_local: datetime | None
    zone: str | None
    list_id: UUID


def wall_instant(local: datetime, zone: str) -> datetime:
    """A generated wall time's instant: overlaps take the earlier; gaps end at their end."""
    tz = get_zone(zone)
    wall = local_seconds(local)
    tz.cover(wall)
    _, at, _ = tz.resolve(wall)
    return datetime.fromtimestamp(at, UTC)


def wall_of(instant: datetime, zone: str) -> datetime:
    """The wall time ``zone`` shows at ``instant``."""
    tz = get_zone(zone)
    second = int(instant.timestamp())
    tz.cover(second)
    return to_naive_datetime(second + tz.offset_at(second))


def day_exists(day: date, local_time: str | None, zone: str | None) -> bool:
    """Whether the series' wall time exists on ``day`` (always, for date-only series)."""
    if local_time is None or zone is None:
        return True
    tz = get_zone(zone)
    wall = local_seconds(datetime.combine(day, time.fromisoformat(local_time)))
    tz.cover(wall)
    kind, _, _ = tz.resolve(wall)
    return kind is not Resolution.GAP


def generate(
    conn: Connection,
    source_root: UUID,
    occurrence: Occurrence,
    actor_id: UUID,
    now: datetime,
) -> list[UUID]:
    """Copies the live checklist under ``source_root`` as the new occurrence; returns new IDs."""
    key = {"root_id": source_root}
    # One recursive walk; rows zipped into namespaces (a row's attribute lookups cost more).
    rows = {
        n.id: n
        for n in (
            SimpleNamespace(**dict(zip(TASK_COLUMNS, r, strict=True)))
            for r in conn.execute(SUBTREE_ROWS, key)
        )
    }
    if source_root not in rows or rows[source_root].trashed:
        raise Conflict(
            "series: the occurrence to copy is in the trash; restore it, or stop the series",
            field="series",
        )
    ids = _parents_first(rows, source_root)
    if len(ids) > MAX_CHECKLIST_TASKS:
        raise ChecklistTooLarge(
            f"the recurring checklist has {len(ids)} live tasks; a series supports "
            f"at most {MAX_CHECKLIST_TASKS}",
            tasks=len(ids),
        )
    fresh = {old: uuid.uuid4() for old in ids}
    refs = dict(zip(ids, new_refs(conn, len(ids)), strict=True))
    root = rows[source_root]
    offset = timedelta(days=occurrence.day_offset)
    root_due_at: datetime | None = None
    if occurrence.root_due_local is not None and occurrence.zone is not None:
        root_due_at = wall_instant(occurrence.root_due_local, occurrence.zone)
    elif root.due_local is not None:
        root_due_at = wall_instant(parse_local_datetime(root.due_local) + offset, root.due_zone)
    # Timed values keep their elapsed offset from the root's due instant when both have one.
    shift = root_due_at - root.due_at if root_due_at is not None and root.due_at else None

    def moved(local: str, zone: str, at: datetime) -> tuple[str, datetime]:
        if shift is not None:
            new_at = at + shift
        else:
            new_at = wall_instant(parse_local_datetime(local) + offset, zone)
        return format_local(wall_of(new_at, zone)), new_at

    reminders = list(conn.execute(SUBTREE_REMINDERS, key))
    with_reminders = {r.task_id for r in reminders}
    # A source occurrence moved to another list since: its sections map by name.
    moved_list = root.list_id != occurrence.list_id
    sections_map = _section_map(conn, occurrence.list_id) if moved_list else {}
    task_rows: list[dict[str, Any]] = []
    for old in ids:
        r = rows[old]
        due_local, due_zone, due_at = r.due_local, r.due_zone, r.due_at
        due_date = r.due_date + offset if r.due_date else None
        if old == source_root and occurrence.root_due_local is not None and occurrence.zone:
            # The root's due follows the series' wall clock, replacing any date-only due.
            due_local = format_local(occurrence.root_due_local)
            due_zone, due_at, due_date = occurrence.zone, root_due_at, None
        elif due_local is not None:
            due_local, due_at = moved(due_local, due_zone, due_at)
        elif old == source_root and due_date is None:
            # A date-only series dates each new occurrence by its own date.
            due_date = occurrence.day
        task_rows.append(
            {
                "id": fresh[old],
                "ref": refs[old],
                "list_id": occurrence.list_id,
                "section_id": sections_map.get(r.section_id) if moved_list else r.section_id,
                "parent_id": fresh[r.parent_id] if old != source_root else None,
                "position": r.position,
                "title": r.title,
                "description": r.description,
                "status": TaskStatus.OPEN.value,
                "trashed": False,
                "revision": 1,
                "schedule_revision": 1 if old in with_reminders else 0,
                "priority": r.priority,
                "planned_date": r.planned_date + offset if r.planned_date else None,
                "due_date": due_date,
                "due_local": due_local,
                "due_zone": due_zone,
                "due_at": due_at,
                "series_id": occurrence.series_id,
                "occurrence": occurrence.ordinal,
                "created_by": actor_id,
                "created_at": now,
                "updated_at": now,
            }
        )
    conn.execute(insert(tasks), task_rows)
    tag_rows = _tag_links(conn, key, fresh, occurrence.list_id)
    if tag_rows:
        conn.execute(insert(task_tags), tag_rows)
    if reminders:
        copied = []
        for reminder in reminders:
            local, at = moved(reminder.local, reminder.zone, reminder.at)
            copied.append(
                {
                    "task_id": fresh[reminder.task_id],
                    "position": reminder.position,
                    "channel": reminder.channel,
                    "local": local,
                    "zone": reminder.zone,
                    "at": at,
                    "recipient_id": reminder.recipient_id,
                }
            )
        conn.execute(insert(task_reminders), copied)
        conn.execute(
            insert(reminder_intents),
            [
                {
                    "id": uuid.uuid4(),
                    "task_id": c["task_id"],
                    "schedule_revision": 1,
                    "channel": c["channel"],
                    "at": c["at"],
                    "recipient_id": c["recipient_id"],
                    "status": "pending",
                    "attempts": 0,
                    "next_attempt_at": c["at"],
                    "created_at": now,
                    "updated_at": now,
                }
                for c in copied
            ],
        )
    root_text = str(fresh[source_root])
    conn.execute(
        insert(task_history),
        [
            {
                "task_id": fresh[old],
                "kind": "created",
                "actor_id": actor_id,
                "at": now,
                "payload": {"occurrence_root": root_text, "copied_from": str(old)},
                "series_id": occurrence.series_id,
                "occurrence": occurrence.ordinal,
            }
            for old in ids
        ],
    )
    new_ids = [fresh[old] for old in ids]
    return new_ids


__all__ = ["ChecklistTooLarge", "Occurrence", "day_exists", "generate", "wall_instant", "wall_of"]
