"""Values of the task store: roles, states, schedules, and their validation (seed 000).

Planning is a date without a time or zone. A due value is a date, or an explicit
wall time and IANA zone. Priorities are 1-3. Reminders need an explicit wall time,
a zone, an ``email`` or ``push`` channel and a recipient. A wall time a person
enters inside a DST gap or overlap is refused, so nothing shifts silently.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from kalends.civil import format_local, parse_date, parse_local_datetime, resolve_user_local
from kalends.errors import InvalidInput

# A reminder's channel belongs to the reminders; the task store's schedules name it, and
# its modules import it from here (an explicit re-export).
from kalends.reminders import Channel as Channel  # noqa: PLC0414

# Issue 3 / seed 000 "Scheduling domain": titles of 1-500 characters, descriptions up to 64 KiB.
MAX_TITLE_LENGTH = 500
MAX_DESCRIPTION_BYTES = 64 * 1024
# Seed 000: priorities are 1-3.
MIN_PRIORITY, MAX_PRIORITY = 1, 3
# A schedule holds at most this many reminders.
MAX_REMINDERS = 20
MAX_COMMENT_BYTES = 64 * 1024
# Attachment bytes live in the database; this bounds one attachment.
MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024
# A page of a list's trees holds at most this many top-level tasks (with their
# descendants); the seeds name no page for tasks.
MAX_TREE_PAGE = 200
MAX_TAG_LENGTH = 100


class ListStatus(StrEnum):
    ACTIVE = "active"
    ARCHIVED = "archived"


class TaskStatus(StrEnum):
    OPEN = "open"
    COMPLETED = "completed"


# What people and the JSON see of a task's status: the stored one, or ``skipped`` for a
# task that skipping its occurrence settled (stored as ``completed``; seed 000, and
# kalends.tasks.skips).
SKIPPED = "skipped"
SHOWN_STATUSES = (TaskStatus.OPEN.value, TaskStatus.COMPLETED.value, SKIPPED)


@dataclass(frozen=True, slots=True, kw_only=True)
class TimedValue:
    """An explicit wall time in an IANA zone, with the instant it resolves to."""

    local: datetime
    zone: str
    at: datetime

    @classmethod
    def parse(cls, local: object, zone: object, field: str) -> TimedValue:
        if zone is None or zone == "":
            raise InvalidInput(
                f"{field}: a timed value needs an IANA zone beside its local time", field=field
            )
        parsed = parse_local_datetime(local, f"{field}.local")
        return cls(local=parsed, zone=str(zone), at=resolve_user_local(parsed, str(zone), field))

    def to_json(self) -> dict[str, str]:
        return {"local": format_local(self.local), "zone": self.zone}


Due = date | TimedValue


@dataclass(frozen=True, slots=True, kw_only=True)
class Reminder:
    channel: Channel
    time: TimedValue
    recipient_id: UUID


@dataclass(frozen=True, slots=True, kw_only=True)
class Schedule:
    """What ``set_schedule`` writes: planned date, due value, priority and reminders."""

    planned: date | None = None
    due: Due | None = None
    priority: int | None = None
    reminders: tuple[Reminder, ...] = ()

    def __post_init__(self) -> None:
        # A schedule built in code gets the same checks as one parsed from JSON.
        if self.planned is not None and (
            not isinstance(self.planned, date) or isinstance(self.planned, datetime)
        ):
            raise InvalidInput("planned: planning is a date without time or zone", field="planned")
        if self.due is not None and (
            not isinstance(self.due, date | TimedValue) or isinstance(self.due, datetime)
        ):
            raise InvalidInput(
                "due: a date, or a TimedValue (local time and IANA zone)", field="due"
            )
        check_priority(self.priority)
        object.__setattr__(self, "reminders", check_reminders(tuple(self.reminders)))


def check_title(title: object, field: str = "title") -> str:
    if not isinstance(title, str):
        raise InvalidInput(f"{field}: a title is text", field=field)
    trimmed = title.strip()
    if not trimmed:
        raise InvalidInput(f"{field}: a title cannot be blank", field=field)
    if len(trimmed) > MAX_TITLE_LENGTH:
        raise InvalidInput(
            f"{field}: at most {MAX_TITLE_LENGTH} characters, got {len(trimmed)}", field=field
        )
    return trimmed


def check_text(value: object, field: str, limit: int) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{field}: must be text", field=field)
    size = len(value.encode("utf-8"))
    if size > limit:
        raise InvalidInput(f"{field}: at most {limit} bytes, got {size}", field=field)
    return value


def check_priority(value: object, field: str = "priority") -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidInput(f"{field}: must be a whole number 1-3, got {value!r}", field=field)
    if not MIN_PRIORITY <= value <= MAX_PRIORITY:
        raise InvalidInput(f"{field}: must be between 1 and 3, got {value}", field=field)
    return value


def parse_due(value: object, field: str = "due") -> Due | None:
    """``None``, ``"YYYY-MM-DD"``, or ``{"local": "YYYY-MM-DDTHH:MM:SS", "zone": "Area/City"}``."""
    if value is None:
        return None
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    if isinstance(value, TimedValue):
        return value
    if isinstance(value, str):
        if "T" in value:
            raise InvalidInput(
                f"{field}: a due time needs its IANA zone: give {{'local': …, 'zone': …}}",
                field=field,
            )
        return parse_date(value, field)
    if isinstance(value, Mapping):
        extra = set(value) - {"local", "zone"}
        if extra:
            raise InvalidInput(
                f"{field}.{sorted(extra)[0]}: not a field of a due value", field=field
            )
        return TimedValue.parse(value.get("local"), value.get("zone"), field)
    raise InvalidInput(f"{field}: a date YYYY-MM-DD or {{local, zone}}, got {value!r}", field=field)


def parse_channel(value: object, field: str) -> Channel:
    if value not in ("email", "push"):
        raise InvalidInput(
            f"{field}: channel must be 'email' or 'push', got {value!r}", field=field
        )
    return Channel(str(value))


def parse_reminder(value: object, field: str, recipient_id: UUID | None) -> Reminder:
    """``{"channel": "email"|"push", "local": …, "zone": …, "recipient"?: id}``.

    The caller resolves ``recipient`` handles to IDs and passes the default recipient.
    """
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{field}: a reminder is {{channel, local, zone}}", field=field)
    extra = set(value) - {"channel", "local", "zone", "recipient"}
    if extra:
        raise InvalidInput(f"{field}.{sorted(extra)[0]}: not a field of a reminder", field=field)
    channel = parse_channel(value.get("channel"), f"{field}.channel")
    if value.get("local") is None:
        raise InvalidInput(
            f"{field}.local: a reminder needs an explicit local time and zone", field=field
        )
    time = TimedValue.parse(value.get("local"), value.get("zone"), field)
    if recipient_id is None:
        raise InvalidInput(f"{field}.recipient: a reminder needs a recipient", field=field)
    return Reminder(channel=channel, time=time, recipient_id=recipient_id)


def check_reminders(reminders: Sequence[Reminder]) -> tuple[Reminder, ...]:
    """At most :data:`MAX_REMINDERS`, never two on one channel at one instant (the outbox key)."""
    if len(reminders) > MAX_REMINDERS:
        raise InvalidInput(
            f"reminders: at most {MAX_REMINDERS}, got {len(reminders)}", field="reminders"
        )
    seen: set[tuple[Channel, datetime]] = set()
    for i, reminder in enumerate(reminders):
        key = (reminder.channel, reminder.time.at)
        if key in seen:
            raise InvalidInput(
                f"reminders[{i}]: another reminder already uses {reminder.channel} at that instant",
                field=f"reminders[{i}]",
            )
        seen.add(key)
    return tuple(reminders)


def due_to_json(due: Due | None) -> Any:
    if due is None:
        return None
    if isinstance(due, TimedValue):
        return due.to_json()
    return due.isoformat()


def parse_schedule(data: Mapping[str, Any], recipient: Callable[[object, str], UUID]) -> Schedule:
    """A schedule from JSON: ``{"planned", "due", "priority", "reminders"}``, all optional.

    ``recipient(value, field)`` turns a reminder's ``recipient`` (or ``None``, for
    the default) into an actor ID, raising a clear error for an unknown one.
    """
    if not isinstance(data, Mapping):
        raise InvalidInput("schedule: a JSON object is expected", field="schedule")
    extra = set(data) - {"planned", "due", "priority", "reminders"}
    if extra:
        raise InvalidInput(f"{sorted(extra)[0]}: not a field of a schedule", field=sorted(extra)[0])
    planned = data.get("planned")
    if planned is not None and not (
        isinstance(planned, date) and not isinstance(planned, datetime)
    ):
        if isinstance(planned, str) and "T" in planned:
            raise InvalidInput(
                "planned: planning is a date YYYY-MM-DD without time or zone", field="planned"
            )
        planned = parse_date(planned, "planned")
    raw_reminders = data.get("reminders") or []
    if not isinstance(raw_reminders, Sequence) or isinstance(raw_reminders, str):
        raise InvalidInput("reminders: a list of reminders is expected", field="reminders")
    reminders = [
        parse_reminder(
            r,
            f"reminders[{i}]",
            recipient(
                r.get("recipient") if isinstance(r, Mapping) else None, f"reminders[{i}].recipient"
            ),
        )
        for i, r in enumerate(raw_reminders)
    ]
    return Schedule(
        planned=planned,
        due=parse_due(data.get("due")),
        priority=check_priority(data.get("priority")),
        reminders=check_reminders(reminders),
    )
