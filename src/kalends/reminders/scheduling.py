"""What a person is told when a schedule they set holds a reminder whose time has passed.

Such a reminder is accepted (the schedule is the person's), but it cannot come when they
meant it to: within :data:`~kalends.reminders.limits.EXPIRY` of its time the worker sends
it at once; later than that it is never sent, and the outbox closes it as ``expired``.
Both edges (the CLI and the HTTP API) add these warnings to their answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from kalends.reminders.channels import Channel
from kalends.reminders.eligibility import TASK_OPEN
from kalends.reminders.limits import EXPIRY
from kalends.reminders.local_times import when_text

__all__ = ["PAST_REMINDER", "ScheduleWarning", "ScheduledTask", "past_reminders"]

PAST_REMINDER = "reminder-in-the-past"


class ReminderTime(Protocol):
    """When a reminder comes: its instant and the zone it was set in."""

    @property
    def at(self) -> datetime: ...

    @property
    def zone(self) -> str: ...


class ScheduledReminder(Protocol):
    """One reminder of a schedule: its channel and time."""

    @property
    def channel(self) -> Channel: ...

    @property
    def time(self) -> ReminderTime: ...


class ScheduledTask(Protocol):
    """A task as just scheduled (a :class:`kalends.tasks.Task`): its stored status and
    its reminders."""

    @property
    def status(self) -> str: ...

    @property
    def reminders(self) -> Sequence[ScheduledReminder]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduleWarning:
    """Something about a schedule that was written, but not as its writer likely meant."""

    code: str
    field: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "field": self.field, "message": self.message}


def past_reminders(task: ScheduledTask, now: datetime) -> list[ScheduleWarning]:
    """A warning for each reminder of ``task`` (as just scheduled) whose time is not after
    ``now``. A settled task makes no reminder intents, so it gets none."""
    if task.status != TASK_OPEN:
        return []
    found: list[ScheduleWarning] = []
    for i, reminder in enumerate(task.reminders):
        at = reminder.time.at
        if at > now:
            continue
        said = f"reminders[{i}]: the {reminder.channel.value} reminder at "
        said += when_text(at, reminder.time.zone)
        if now - at >= EXPIRY:
            said += " is more than a day past: it will never be sent (it is closed as expired)"
        else:
            said += " is already past: it is sent at once, not at that time"
        found.append(ScheduleWarning(code=PAST_REMINDER, field=f"reminders[{i}]", message=said))
    return found
