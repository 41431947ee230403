"""Settling a series' outstanding occurrence and emitting its successor.

Settling is a compare-and-swap from ``outstanding``, so a duplicate hook call or a
racing completion can never advance a series twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time
from uuid import UUID

from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from kalends.storage.task_tables import series_occurrences, task_series
from kalends.tasks.series_rules import (
    SeriesRule,
    successor_date,
)
from kalends.tasks.series_views import SeriesStatus, read_series, today_in
from kalends.tasks.successors import Occurrence, day_exists, generate


@dataclass(frozen=True, slots=True)
class Outstanding:
    """A series' outstanding occurrence, with the status of its series."""

    series_id: UUID
    ordinal: int
    root_task_id: UUID
    occurrence_date: date
    series_status: str


def outstanding_of(
    conn: Connection, root_id: UUID, *, live_series_only: bool = False
) -> Outstanding | None:
    row = conn.execute(
        select(series_occurrences, task_series.c.status.label("series_status"))
        .join(task_series, task_series.c.id == series_occurrences.c.series_id)
        .where(
            series_occurrences.c.root_task_id == root_id,
            series_occurrences.c.status == "outstanding",
        )
    ).first()
    if row is None:
        return None
    if live_series_only and row.series_status not in (SeriesStatus.ACTIVE, SeriesStatus.PAUSED):
        return None
    return Outstanding(
        row.series_id, row.ordinal, row.root_task_id, row.occurrence_date, row.series_status
    )


def settle(
    conn: Connection, occurrence: Outstanding, status: str, actor_id: UUID, now: datetime
) -> list[UUID]:
    """Settles the outstanding occurrence once; an active series then emits its successor."""
    result = conn.execute(
        update(series_occurrences)
        .where(
            series_occurrences.c.series_id == occurrence.series_id,
            series_occurrences.c.ordinal == occurrence.ordinal,
            series_occurrences.c.status == "outstanding",
        )
        .values(status=status, settled_at=now)
    )
    if result.rowcount == 0:  # already settled: a duplicate call never advances twice
        return []
    if occurrence.series_status != SeriesStatus.ACTIVE:
        return []
    return emit(
        conn,
        occurrence.series_id,
        occurrence.root_task_id,
        occurrence.occurrence_date,
        actor_id,
        now,
    )


def emit(
    conn: Connection,
    series_id: UUID,
    source_root: UUID,
    previous: date,
    actor_id: UUID,
    now: datetime,
) -> list[UUID]:
    series = read_series(conn, series_id)
    rule = SeriesRule.parse(series.rule)
    if series.max_count is not None and series.emitted >= series.max_count:
        end_series(conn, series_id, now)
        return []

    def exists(day: date) -> bool:
        return day_exists(day, series.local_time, series.zone)

    today = today_in(now, series.zone)
    day = successor_date(rule, series.anchor_date, previous, today, exists, series.end_date)
    if day is None or (series.end_date is not None and day > series.end_date):
        end_series(conn, series_id, now)
        return []
    root_due_local = (
        datetime.combine(day, time.fromisoformat(series.local_time)) if series.local_time else None
    )
    occurrence = Occurrence(
        series_id=series_id,
        ordinal=series.emitted + 1,
        day=day,
        day_offset=(day - previous).days,
        root_due_local=root_due_local,
        zone=series.zone,
        list_id=series.list_id,
    )
    new_ids = generate(conn, source_root, occurrence, actor_id, now)
    conn.execute(
        series_occurrences.insert().values(
            series_id=series_id,
            ordinal=occurrence.ordinal,
            root_task_id=new_ids[0] if new_ids else None,
            occurrence_date=day,
            status="outstanding",
        )
    )
    conn.execute(
        update(task_series)
        .where(task_series.c.id == series_id)
        .values(emitted=occurrence.ordinal, updated_at=now)
    )
    return new_ids


def end_series(conn: Connection, series_id: UUID, now: datetime) -> None:
    conn.execute(
        update(task_series)
        .where(task_series.c.id == series_id)
        .values(status=SeriesStatus.ENDED, revision=task_series.c.revision + 1, updated_at=now)
    )
