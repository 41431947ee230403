"""A reminder's time as its recipient reads it: the wall time in the reminder's own zone.

An intent stores only its instant (UTC). The wall time and zone it was set with live in
the task's reminders (``task_reminders``: one per channel and instant of the current
schedule); an intent of an older schedule falls back on the task's due zone, and one
with neither is shown in UTC, saying so. kalends keeps no zone per person: the zone a
reminder was set in, for its recipient, is the one they are shown. JSON keeps the
instant in UTC (``at``) and adds the wall time and zone beside it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.sql.elements import ColumnElement

from kalends.civil import format_local, wall_of
from kalends.storage.task_tables import reminder_intents, task_reminders, tasks

__all__ = ["intent_zone", "local_text", "when_text"]


def intent_zone() -> ColumnElement[Any]:
    """The zone of the intent row of the statement (``reminder_intents`` joined to its
    ``tasks`` row): its reminder's own, else the task's due zone, else NULL."""
    r, ri = task_reminders, reminder_intents
    own = (
        select(r.c.zone)
        .where(
            r.c.task_id == ri.c.task_id,
            r.c.channel == ri.c.channel,
            r.c.at == ri.c.at,
            r.c.recipient_id == ri.c.recipient_id,
        )
        .limit(1)
        .scalar_subquery()
    )
    return func.coalesce(own, tasks.c.due_zone)


def local_text(at: datetime, zone: str | None) -> str | None:
    """``at`` as a wall time ``YYYY-MM-DDTHH:MM:SS`` in ``zone`` (``None`` without one)."""
    return None if zone is None else format_local(wall_of(at, zone))


def when_text(at: datetime | None, zone: str | None) -> str:
    """``at`` as a person reads it: ``2040-01-02 08:00 Europe/Paris`` (seconds only when
    not zero), or ``2040-01-02 07:00 UTC`` without a zone; empty for ``None``."""
    if at is None:
        return ""
    wall = wall_of(at, zone) if zone is not None else at
    shown = f"{wall:%Y-%m-%d %H:%M:%S}" if wall.second else f"{wall:%Y-%m-%d %H:%M}"
    return f"{shown} {zone or 'UTC'}"
