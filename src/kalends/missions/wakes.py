"""Durable wakes: the row that makes a scheduler look at a schedule, and its timings.

A schedule that needs a scheduler (running, or with a pending passage to start,
observe or interrupt) has one wake row. Controls arm it (due now) in their own
transaction; a scheduler claims it under a lease and, after each look, sets when
to look again or deletes it when nothing is left to do.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from sqlalchemy import bindparam
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from kalends.storage.mission_tables import schedule_wakes
from kalends.storage.prepared import Prepared
from kalends.storage.wake import notify

__all__ = [
    "ERROR_BACKOFF",
    "EVENT_DEBOUNCE",
    "MAX_SLEEP",
    "MISSIONS_CHANNEL",
    "PENDING_FALLBACK",
    "WAKE_LEASE",
    "arm",
    "error_delay",
    "fallback_delay",
]

MISSIONS_CHANNEL = "kalends_missions"
"""The notification channel that wakes sleeping schedulers."""

# Seed 002 "Daily scheduler and civil time": sleep until min(nextDueAt, now + 1 h); the
# hourly ceiling bounds clock-change detection; never poll per minute.
MAX_SLEEP = timedelta(hours=1)
# Seed 002 "Daily scheduler and civil time": a terminal event wakes after a 3 s debounce;
# without one, 30 s -> 2 min -> 5 min (capped) only while a passage is pending.
EVENT_DEBOUNCE = timedelta(seconds=3)
PENDING_FALLBACK = (timedelta(seconds=30), timedelta(minutes=2), timedelta(minutes=5))
# Seed 002 "Daily write-ahead passage start and recovery": a failed wake retries with a
# capped backoff of 30 s, 2 min, 5 min, 15 min, 1 h.
ERROR_BACKOFF = (
    timedelta(seconds=30),
    timedelta(minutes=2),
    timedelta(minutes=5),
    timedelta(minutes=15),
    timedelta(hours=1),
)
# kalends decision: a scheduler holds the wakes it owns for 60 seconds at a time and
# renews them together every 20 seconds; a dead scheduler's wakes are taken over after.
WAKE_LEASE = timedelta(seconds=60)


def fallback_delay(polls: int) -> timedelta:
    return PENDING_FALLBACK[min(polls, len(PENDING_FALLBACK) - 1)]


def error_delay(failures: int) -> timedelta:
    return ERROR_BACKOFF[min(max(failures, 1), len(ERROR_BACKOFF)) - 1]


# What arming writes into a new wake.
_ARMED = (
    "schedule_id",
    "due_at",
    "owner",
    "lease_token",
    "orphaned",
    "armed",
    "failures",
    "polls",
)


def _arm_statement(dialect: Any) -> Any:
    insert = dialect.insert(schedule_wakes).values({name: bindparam(name) for name in _ARMED})
    return insert.on_conflict_do_update(
        index_elements=[schedule_wakes.c.schedule_id],
        set_={"due_at": insert.excluded.due_at, "polls": 0, "armed": schedule_wakes.c.armed + 1},
    )


# Built once per dialect and run on the driver: every control arms a wake.
_ARM = {
    "postgresql": Prepared(_arm_statement(postgresql)),
    "sqlite": Prepared(_arm_statement(sqlite)),
}


def arm(conn: Connection, schedule_id: UUID, now: datetime) -> None:
    """Make the schedule's wake due now (creating it), keeping its owner and lastError;
    wakes the schedulers when the transaction commits. ``armed`` counts these, so a
    scheduler that looked before the control never overwrites the fresh wake."""
    values: dict[str, Any] = {
        "schedule_id": schedule_id,
        "due_at": now,
        "owner": None,
        "lease_token": None,
        "orphaned": False,
        "armed": 1,
        "failures": 0,
        "polls": 0,
    }
    _ARM[conn.dialect.name].rowcount(conn, values)
    notify(conn, MISSIONS_CHANNEL)
