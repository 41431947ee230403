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
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from uuid import UUID

from sqlalchemy import (
    Integer,
    String,
    bindparam,
    case,
    cast,
    delete,
    func,
    insert,
    literal,
    literal_column,
    select,
)
from sqlalchemy.engine import Connection

from kalends.civil import format_local, get_zone, parse_local_datetime, wall_of
from kalends.civil.zones import Resolution, local_seconds
from kalends.errors import Conflict
from kalends.reminders import Channel, IntentPlan, replace_intents
from kalends.storage.ids import ids_at
from kalends.storage.scratch import add_days, copy_map, ensure_scratch, json_pairs
from kalends.storage.task_tables import (
    sections,
    tags,
    task_history,
    task_reminders,
    task_tags,
    tasks,
)
from kalends.storage.upsert import insert_missing
from kalends.tasks.refs import new_refs
from kalends.tasks.series_rules import MAX_CHECKLIST_TASKS
from kalends.tasks.task_rows import ReminderColumns, SuccessorRoot, SuccessorSource
from kalends.tasks.tree_reads import LIVE_TREE
from kalends.tasks.values import TaskStatus


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


def day_exists(day: date, local_time: str | None, zone: str | None) -> bool:
    """Whether the series' wall time exists on ``day`` (always, for date-only series)."""
    if local_time is None or zone is None:
        return True
    tz = get_zone(zone)
    wall = local_seconds(datetime.combine(day, time.fromisoformat(local_time)))
    tz.cover(wall)
    kind, _, _ = tz.resolve(wall)
    return kind is not Resolution.GAP


# Their columns are SuccessorSource's and SuccessorRoot's, in order.
_SOURCE_ROWS = select(tasks.c.id, tasks.c.due_local, tasks.c.due_zone, tasks.c.due_at).join(
    LIVE_TREE, LIVE_TREE.c.id == tasks.c.id
)
_ROOT_ROW = select(
    tasks.c.trashed,
    tasks.c.list_id,
    tasks.c.due_date,
    tasks.c.due_local,
    tasks.c.due_zone,
    tasks.c.due_at,
).where(tasks.c.id == bindparam("root_id"))


# Every statement below names the copied IDs with IN, so that SQLite walks the map and
# looks the source rows up by key (a join alone can make it scan the whole source table).
_COPIED = select(copy_map.alias("copied").c.old_id)


def _copy_tasks(moved_list: bool) -> Any:
    """INSERT … SELECT of the new tasks: every source row joined to its map row."""
    t, m, parent = tasks.alias("t"), copy_map.alias("m"), copy_map.alias("pm")
    section: Any = t.c.section_id
    if moved_list:
        # The target list's section of the same name, or none.
        mine, theirs = sections.alias("s1"), sections.alias("s2")
        section = (
            select(theirs.c.id)
            .join(mine, mine.c.name == theirs.c.name)
            .where(mine.c.id == t.c.section_id, theirs.c.list_id == bindparam("list_id"))
            .scalar_subquery()
        )
    has_reminders = (
        select(task_reminders.c.task_id).where(task_reminders.c.task_id == t.c.id).exists()
    )
    days = bindparam("days", type_=Integer())
    shifted_due = func.coalesce(m.c.due_date, add_days(t.c.due_date, days))
    columns = {
        "id": m.c.new_id,
        "ref": m.c.ref,
        "list_id": bindparam("list_id", type_=tasks.c.list_id.type),
        "section_id": section,
        "parent_id": parent.c.new_id,
        "position": t.c.position,
        "title": t.c.title,
        "description": t.c.description,
        "status": literal(TaskStatus.OPEN.value),
        "trashed": literal(False),
        "revision": literal(1),
        "schedule_revision": case((has_reminders, 1), else_=0),
        "priority": t.c.priority,
        "planned_date": add_days(t.c.planned_date, days),
        "due_date": case((m.c.due_local.is_not(None), None), else_=shifted_due),
        "due_local": m.c.due_local,
        "due_zone": m.c.due_zone,
        "due_at": m.c.due_at,
        "series_id": bindparam("series_id", type_=tasks.c.series_id.type),
        "occurrence": bindparam("occurrence", type_=Integer()),
        "created_by": bindparam("actor_id", type_=tasks.c.created_by.type),
        "created_at": bindparam("now", type_=tasks.c.created_at.type),
        "updated_at": bindparam("now", type_=tasks.c.updated_at.type),
    }
    source = t.join(m, m.c.old_id == t.c.id).outerjoin(parent, parent.c.old_id == t.c.parent_id)
    return insert(tasks).from_select(
        list(columns),
        select(*columns.values()).select_from(source).where(t.c.id.in_(_COPIED)),
    )


_COPY_TASKS = {moved: _copy_tasks(moved) for moved in (False, True)}


def _copy_tags(by_name: bool) -> Any:
    """INSERT … SELECT of the new tasks' tag links; by name into the target list if asked."""
    m = copy_map.alias("m")
    tag: Any = task_tags.c.tag_id
    if by_name:
        mine, theirs = tags.alias("g1"), tags.alias("g2")
        tag = (
            select(theirs.c.id)
            .join(mine, mine.c.name == theirs.c.name)
            .where(mine.c.id == task_tags.c.tag_id, theirs.c.list_id == bindparam("list_id"))
            .scalar_subquery()
        )
    return insert(task_tags).from_select(
        ["task_id", "tag_id"],
        select(m.c.new_id, tag)
        .select_from(task_tags.join(m, m.c.old_id == task_tags.c.task_id))
        .where(task_tags.c.task_id.in_(_COPIED)),
    )


_COPY_TAGS = {by_name: _copy_tags(by_name) for by_name in (False, True)}

_FOREIGN_TAGS = (
    select(tags.c.name)
    .distinct()
    .select_from(
        task_tags.join(tags, tags.c.id == task_tags.c.tag_id).join(
            copy_map, copy_map.c.old_id == task_tags.c.task_id
        )
    )
    .where(task_tags.c.task_id.in_(_COPIED), tags.c.list_id != bindparam("list_id"))
)

_SOURCE_REMINDERS = (
    select(
        task_reminders.c.task_id,
        task_reminders.c.position,
        task_reminders.c.channel,
        task_reminders.c.local,
        task_reminders.c.zone,
        task_reminders.c.at,
        task_reminders.c.recipient_id,
    )
    .join(copy_map, copy_map.c.old_id == task_reminders.c.task_id)
    .where(task_reminders.c.task_id.in_(_COPIED))
    .order_by(task_reminders.c.task_id, task_reminders.c.position)
)

_CREATED_HISTORY = insert(task_history).from_select(
    ["task_id", "kind", "actor_id", "at", "payload", "series_id", "occurrence"],
    select(
        copy_map.c.new_id,
        literal("created"),
        bindparam("actor_id", type_=task_history.c.actor_id.type),
        bindparam("now", type_=task_history.c.at.type),
        json_pairs(
            literal_column("'occurrence_root'"),
            cast(bindparam("root_text"), String()),
            literal_column("'copied_from'"),
            copy_map.c.old_text,
        ),
        bindparam("series_id", type_=task_history.c.series_id.type),
        bindparam("occurrence", type_=Integer()),
    ),
)


def generate(
    conn: Connection,
    source_root: UUID,
    occurrence: Occurrence,
    actor_id: UUID,
    now: datetime,
) -> list[UUID]:
    """Copies the live checklist under ``source_root`` as the new occurrence; returns new IDs.

    The root's new ID comes first. Only what SQL cannot compute passes through Python:
    the new IDs and references, and the timed values that keep their elapsed offset.
    Everything else is copied by INSERT … SELECT joined to a scratch map of old to new IDs.
    """
    key = {"root_id": source_root}
    found = conn.execute(_ROOT_ROW, key).first()
    root = None if found is None else SuccessorRoot.from_row(found)
    if root is None or root.trashed:
        raise Conflict(
            "series: the occurrence to copy is in the trash; restore it, or stop the series",
            field="series",
        )
    rows = [SuccessorSource.from_row(row) for row in conn.execute(_SOURCE_ROWS, key)]
    if len(rows) > MAX_CHECKLIST_TASKS:
        raise ChecklistTooLarge(
            f"the recurring checklist has {len(rows)} live tasks; a series supports "
            f"at most {MAX_CHECKLIST_TASKS}",
            tasks=len(rows),
        )
    offset = timedelta(days=occurrence.day_offset)
    root_due_at: datetime | None = None
    if occurrence.root_due_local is not None and occurrence.zone is not None:
        root_due_at = wall_instant(occurrence.root_due_local, occurrence.zone)
    elif root.due_local is not None:
        assert root.due_zone is not None  # a wall time has its zone (the tasks table's check)
        root_due_at = wall_instant(parse_local_datetime(root.due_local) + offset, root.due_zone)
    # Timed values keep their elapsed offset from the root's due instant when both have one.
    shift = root_due_at - root.due_at if root_due_at is not None and root.due_at else None

    def moved(local: str, zone: str, at: datetime) -> tuple[str, datetime]:
        if shift is not None:
            new_at = at + shift
        else:
            new_at = wall_instant(parse_local_datetime(local) + offset, zone)
        return format_local(wall_of(new_at, zone)), new_at

    refs = new_refs(conn, len(rows))
    fresh: dict[UUID, UUID] = {}
    mapping: list[dict[str, Any]] = []
    series_due = (
        (format_local(occurrence.root_due_local), occurrence.zone, root_due_at)
        if occurrence.root_due_local is not None and occurrence.zone
        else None
    )
    # Time-ordered IDs: the new rows go side by side into every index keyed by them.
    for row, ref, new in zip(rows, refs, ids_at(now, len(rows)), strict=True):
        old = row.id
        fresh[old] = new
        due_date = None
        local, zone, at = row.due_local, row.due_zone, row.due_at
        if old == source_root and series_due is not None:
            # The root's due follows the series' wall clock, replacing any date-only due.
            local, zone, at = series_due
        elif local is not None:
            # A wall time has its zone and instant (the tasks table's check).
            assert zone is not None and at is not None
            local, at = moved(local, zone, at)
        elif old == source_root and root.due_date is None:
            # A date-only series dates each new occurrence by its own date.
            due_date = occurrence.day
        mapping.append(
            {
                "old_id": old,
                "new_id": new,
                "ref": ref,
                "old_text": str(old),
                "due_date": due_date,
                "due_local": local,
                "due_zone": zone,
                "due_at": at,
            }
        )
    ensure_scratch(conn)
    conn.execute(insert(copy_map), mapping)
    moved_list = root.list_id != occurrence.list_id
    common = {
        "list_id": occurrence.list_id,
        "series_id": occurrence.series_id,
        "occurrence": occurrence.ordinal,
        "actor_id": actor_id,
        "now": now,
    }
    conn.execute(_COPY_TASKS[moved_list], {**common, "days": occurrence.day_offset})
    foreign = list(conn.execute(_FOREIGN_TAGS, {"list_id": occurrence.list_id}).scalars())
    if foreign:
        insert_missing(
            conn,
            tags,
            [{"id": uuid.uuid4(), "list_id": occurrence.list_id, "name": n} for n in foreign],
            ("list_id", "name"),
        )
    conn.execute(_COPY_TAGS[bool(foreign)], {"list_id": occurrence.list_id})
    reminders: Sequence[ReminderColumns] = conn.execute(_SOURCE_REMINDERS).all()
    if reminders:
        copied: list[dict[str, Any]] = []
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
        # The occurrence's tasks are new: they have no intents to cancel.
        plans = [
            IntentPlan(
                task_id=c["task_id"],
                schedule_revision=1,
                channel=Channel(c["channel"]),
                at=c["at"],
                recipient_id=c["recipient_id"],
            )
            for c in copied
        ]
        replace_intents(conn, (), plans, now)
    conn.execute(_CREATED_HISTORY, {**common, "root_text": str(fresh[source_root])})
    conn.execute(delete(copy_map))
    new_root = fresh.pop(source_root)
    return [new_root, *fresh.values()]


__all__ = ["ChecklistTooLarge", "Occurrence", "day_exists", "generate", "wall_instant"]
