"""What the task store returns: frozen values built from rows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any
from uuid import UUID

from kalends.civil import format_local, parse_local_datetime
from kalends.identity import Role
from kalends.tasks.task_rows import ReminderColumns, TaskRow
from kalends.tasks.values import (
    SKIPPED,
    Channel,
    Due,
    ListStatus,
    Reminder,
    TaskStatus,
    TimedValue,
    due_to_json,
)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


# Reading ``to_json()`` back (``from_json``): a server's answer becomes the value local
# mode has. Only what the JSON holds is restored: a timed due value's instant is
# resolved again from its wall time and zone.


def _instant(value: Any) -> datetime:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _maybe_instant(value: Any) -> datetime | None:
    return None if value is None else _instant(value)


def _maybe_uuid(value: Any) -> UUID | None:
    return None if value is None else UUID(str(value))


def _maybe_date(value: Any) -> date | None:
    return None if value is None else date.fromisoformat(str(value))


def _due_from_json(value: Any) -> Due | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return TimedValue.parse(value["local"], value["zone"], "due")
    return date.fromisoformat(str(value))


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskList:
    id: UUID
    name: str
    status: ListStatus
    revision: int
    role: Role | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "name": self.name,
            "status": self.status.value,
            "revision": self.revision,
            "role": self.role.value if self.role else None,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TaskList:
        role = d.get("role")
        return cls(
            id=UUID(str(d["id"])),
            name=d["name"],
            status=ListStatus(d["status"]),
            revision=int(d["revision"]),
            role=Role(role) if role else None,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Section:
    id: UUID
    list_id: UUID
    name: str
    position: int

    def to_json(self) -> dict[str, Any]:
        return {"id": str(self.id), "name": self.name, "position": self.position}

    @classmethod
    def from_json(cls, d: Mapping[str, Any], *, list_id: UUID | str) -> Section:
        """The JSON names no list: the caller says which list it read the section from."""
        return cls(
            id=UUID(str(d["id"])),
            list_id=UUID(str(list_id)),
            name=d["name"],
            position=int(d["position"]),
        )


_STATUSES = {s.value: s for s in TaskStatus}
# The columns of the tasks table that a Task is made of, in table order.
TASK_COLUMNS = (
    "id",
    "ref",
    "list_id",
    "section_id",
    "parent_id",
    "position",
    "title",
    "description",
    "status",
    "completed_at",
    "trashed",
    "trashed_at",
    "revision",
    "schedule_revision",
    "priority",
    "planned_date",
    "due_date",
    "due_local",
    "due_zone",
    "due_at",
    "series_id",
    "occurrence",
    "created_by",
    "created_at",
    "updated_at",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    """One task as stored; ``tags`` and ``reminders`` are filled where the read asks for them.

    ``status`` is the stored state: a task settled by skipping its occurrence is
    ``completed`` there (seed 000), and ``skipped`` says so; people and the JSON see its
    status as ``skipped`` (:attr:`shown_status`).
    """

    id: UUID
    ref: str
    list_id: UUID
    section_id: UUID | None
    parent_id: UUID | None
    position: int
    title: str
    description: str
    status: TaskStatus
    completed_at: datetime | None
    trashed: bool
    revision: int
    schedule_revision: int
    priority: int | None
    planned: date | None
    due: Due | None
    series_id: UUID | None
    occurrence: int | None
    created_at: datetime
    updated_at: datetime
    tags: tuple[str, ...] = ()
    reminders: tuple[Reminder, ...] = ()
    skipped: bool = False

    @property
    def shown_status(self) -> str:
        """``open``, ``completed`` or ``skipped``: the status people and the JSON see."""
        return SKIPPED if self.skipped else self.status.value

    @classmethod
    def from_row(
        cls,
        row: TaskRow,
        tags: tuple[str, ...] = (),
        reminders: tuple[Reminder, ...] = (),
        *,
        skipped: bool = False,
    ) -> Task:
        """From a task's row as the role check reads it, with its columns written since
        (:func:`~kalends.tasks.loading.task_after_write`)."""
        return cls.from_mapping(
            {name: getattr(row, name) for name in TASK_COLUMNS}, tags, reminders, skipped=skipped
        )

    @classmethod
    def from_mapping(
        cls,
        m: Mapping[str, Any],
        tags: tuple[str, ...] = (),
        reminders: tuple[Reminder, ...] = (),
        *,
        skipped: bool = False,
    ) -> Task:
        """From the ``tasks`` columns by name; reads of many tasks zip rows into dicts,
        which is several times cheaper than a row's attribute lookups."""
        due_local = m["due_local"]
        due: Due | None = m["due_date"]
        if due_local is not None:
            due = TimedValue(
                local=parse_local_datetime(due_local), zone=m["due_zone"], at=m["due_at"]
            )
        return cls(
            id=m["id"],
            ref=m["ref"],
            list_id=m["list_id"],
            section_id=m["section_id"],
            parent_id=m["parent_id"],
            position=m["position"],
            title=m["title"],
            description=m["description"],
            status=_STATUSES[m["status"]],
            completed_at=m["completed_at"],
            trashed=bool(m["trashed"]),
            revision=m["revision"],
            schedule_revision=m["schedule_revision"],
            priority=m["priority"],
            planned=m["planned_date"],
            due=due,
            series_id=m["series_id"],
            occurrence=m["occurrence"],
            created_at=m["created_at"],
            updated_at=m["updated_at"],
            tags=tags,
            reminders=reminders,
            skipped=skipped,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "ref": self.ref,
            "list_id": str(self.list_id),
            "section_id": str(self.section_id) if self.section_id else None,
            "parent_id": str(self.parent_id) if self.parent_id else None,
            "position": self.position,
            "title": self.title,
            "description": self.description,
            "status": self.shown_status,
            "completed_at": _iso(self.completed_at),
            "trashed": self.trashed,
            "revision": self.revision,
            "schedule_revision": self.schedule_revision,
            "priority": self.priority,
            "planned": self.planned.isoformat() if self.planned else None,
            "due": due_to_json(self.due),
            "series_id": str(self.series_id) if self.series_id else None,
            "occurrence": self.occurrence,
            "created_at": _iso(self.created_at),
            "updated_at": _iso(self.updated_at),
            "tags": list(self.tags),
            "reminders": [reminder_to_json(r) for r in self.reminders],
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Task:
        """From :meth:`to_json` (keys beside a task's, as a detail's, are left alone)."""
        # A task a skip settled is shown "skipped" and stored "completed".
        skipped = d["status"] == SKIPPED
        return cls(
            id=UUID(str(d["id"])),
            ref=d["ref"],
            list_id=UUID(str(d["list_id"])),
            section_id=_maybe_uuid(d["section_id"]),
            parent_id=_maybe_uuid(d["parent_id"]),
            position=int(d["position"]),
            title=d["title"],
            description=d["description"],
            status=TaskStatus.COMPLETED if skipped else TaskStatus(d["status"]),
            completed_at=_maybe_instant(d["completed_at"]),
            trashed=bool(d["trashed"]),
            revision=int(d["revision"]),
            schedule_revision=int(d["schedule_revision"]),
            priority=d["priority"],
            planned=_maybe_date(d["planned"]),
            due=_due_from_json(d["due"]),
            series_id=_maybe_uuid(d["series_id"]),
            occurrence=d["occurrence"],
            created_at=_instant(d["created_at"]),
            updated_at=_instant(d["updated_at"]),
            tags=tuple(d["tags"]),
            reminders=tuple(reminder_from_json(r) for r in d["reminders"]),
            skipped=skipped,
        )


def reminder_to_json(reminder: Reminder) -> dict[str, Any]:
    return {
        "channel": reminder.channel.value,
        "local": format_local(reminder.time.local),
        "zone": reminder.time.zone,
        "at": _iso(reminder.time.at),
        "recipient_id": str(reminder.recipient_id),
    }


def reminder_from_json(d: Mapping[str, Any]) -> Reminder:
    """From :func:`reminder_to_json`: the instant is the one stored, not resolved again."""
    return Reminder(
        channel=Channel(d["channel"]),
        time=TimedValue(
            local=parse_local_datetime(d["local"]), zone=d["zone"], at=_instant(d["at"])
        ),
        recipient_id=UUID(str(d["recipient_id"])),
    )


def reminder_from_row(row: ReminderColumns) -> Reminder:
    return Reminder(
        channel=Channel(row.channel),
        time=TimedValue(local=parse_local_datetime(row.local), zone=row.zone, at=row.at),
        recipient_id=row.recipient_id,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class TreeNode:
    """A task and its visible children, in sibling order."""

    task: Task
    children: tuple[TreeNode, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {**self.task.to_json(), "children": [c.to_json() for c in self.children]}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TreeNode:
        return cls(task=Task.from_json(d), children=tuple(cls.from_json(c) for c in d["children"]))

    def walk(self) -> list[Task]:
        found = [self.task]
        for child in self.children:
            found.extend(child.walk())
        return found


@dataclass(frozen=True, slots=True, kw_only=True)
class TreePage:
    """Some of a list's trees, and the cursor of the next page (``None`` on the last)."""

    trees: tuple[TreeNode, ...]
    next_after: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Comment:
    id: UUID
    task_id: UUID
    author_id: UUID
    body: str
    created_at: datetime

    @classmethod
    def from_row(cls, row: Any) -> Comment:
        """From a row of ``select(comments)``."""
        return cls(
            id=row.id,
            task_id=row.task_id,
            author_id=row.author_id,
            body=row.body,
            created_at=row.created_at,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "task_id": str(self.task_id),
            "author_id": str(self.author_id),
            "body": self.body,
            "created_at": _iso(self.created_at),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Comment:
        return cls(
            id=UUID(str(d["id"])),
            task_id=UUID(str(d["task_id"])),
            author_id=UUID(str(d["author_id"])),
            body=d["body"],
            created_at=_instant(d["created_at"]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Attachment:
    id: UUID
    task_id: UUID
    author_id: UUID
    name: str
    media_type: str
    size: int
    sha256: str
    created_at: datetime

    @classmethod
    def from_row(cls, row: Any) -> Attachment:
        """From a row of ``select(attachments)``."""
        return cls(
            id=row.id,
            task_id=row.task_id,
            author_id=row.author_id,
            name=row.name,
            media_type=row.media_type,
            size=row.size,
            sha256=row.sha256,
            created_at=row.created_at,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "task_id": str(self.task_id),
            "author_id": str(self.author_id),
            "name": self.name,
            "media_type": self.media_type,
            "size": self.size,
            "sha256": self.sha256,
            "created_at": _iso(self.created_at),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Attachment:
        return cls(
            id=UUID(str(d["id"])),
            task_id=UUID(str(d["task_id"])),
            author_id=UUID(str(d["author_id"])),
            name=d["name"],
            media_type=d["media_type"],
            size=int(d["size"]),
            sha256=d["sha256"],
            created_at=_instant(d["created_at"]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryEvent:
    id: int
    task_id: UUID
    kind: str
    actor_id: UUID | None
    at: datetime
    payload: Mapping[str, Any] = field(default_factory=dict)
    series_id: UUID | None = None
    occurrence: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "task_id": str(self.task_id),
            "kind": self.kind,
            "actor_id": str(self.actor_id) if self.actor_id else None,
            "at": _iso(self.at),
            "payload": dict(self.payload),
            "series_id": str(self.series_id) if self.series_id else None,
            "occurrence": self.occurrence,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> HistoryEvent:
        return cls(
            id=int(d["id"]),
            task_id=UUID(str(d["task_id"])),
            kind=d["kind"],
            actor_id=_maybe_uuid(d["actor_id"]),
            at=_instant(d["at"]),
            payload=dict(d["payload"]),
            series_id=_maybe_uuid(d["series_id"]),
            occurrence=d["occurrence"],
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskDetail:
    """A task with its comments, attachments and list context, for ``show``."""

    task: Task
    list: TaskList
    section: str | None
    comments: tuple[Comment, ...]
    attachments: tuple[Attachment, ...]
    children: int

    def to_json(self) -> dict[str, Any]:
        return {
            **self.task.to_json(),
            "list": self.list.to_json(),
            "section": self.section,
            "comments": [c.to_json() for c in self.comments],
            "attachments": [a.to_json() for a in self.attachments],
            "children": self.children,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TaskDetail:
        return cls(
            task=Task.from_json(d),
            list=TaskList.from_json(d["list"]),
            section=d["section"],
            comments=tuple(Comment.from_json(c) for c in d["comments"]),
            attachments=tuple(Attachment.from_json(a) for a in d["attachments"]),
            children=int(d["children"]),
        )
