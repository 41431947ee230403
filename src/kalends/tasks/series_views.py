"""A series as it is shown: its status names and its view, with the date of the
occurrence that would follow now.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.engine import Connection

from kalends.civil import wall_of
from kalends.storage.task_tables import series_occurrences, task_series
from kalends.tasks.series_rules import (
    SeriesKind,
    SeriesRule,
    successor_date,
)
from kalends.tasks.successors import day_exists
from kalends.tasks.task_rows import OccurrenceRow, SeriesRow


class SeriesStatus:
    ACTIVE = "active"
    PAUSED = "paused"
    STOPPED = "stopped"
    ENDED = "ended"


@dataclass(frozen=True, slots=True, kw_only=True)
class SeriesView:
    """A series as ``series show`` presents it.

    ``next_date`` is the date the next occurrence would get were the outstanding one
    settled now, by the injected clock, as completing or skipping it computes it (a
    calendar rule catches up to the latest eligible date up to today): ``None`` for a
    completion-relative rule, and when no occurrence will follow.
    """

    id: UUID
    list_id: UUID
    rule: SeriesRule
    local_time: str | None
    zone: str | None
    anchor_date: date
    end_date: date | None
    count: int | None
    emitted: int
    status: str
    revision: int
    outstanding_task_id: UUID | None
    outstanding_ordinal: int | None
    next_date: date | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "list_id": str(self.list_id),
            "rule": self.rule.to_json(),
            "time": self.local_time,
            "zone": self.zone,
            "anchor_date": self.anchor_date.isoformat(),
            "end_date": self.end_date.isoformat() if self.end_date else None,
            "count": self.count,
            "emitted": self.emitted,
            "status": self.status,
            "revision": self.revision,
            "outstanding_task_id": str(self.outstanding_task_id)
            if self.outstanding_task_id
            else None,
            "outstanding_ordinal": self.outstanding_ordinal,
            "next_date": self.next_date.isoformat() if self.next_date else None,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SeriesView:
        outstanding = d["outstanding_task_id"]
        return cls(
            id=UUID(str(d["id"])),
            list_id=UUID(str(d["list_id"])),
            rule=SeriesRule.parse(d["rule"]),
            local_time=d["time"],
            zone=d["zone"],
            anchor_date=date.fromisoformat(d["anchor_date"]),
            end_date=date.fromisoformat(d["end_date"]) if d["end_date"] else None,
            count=d["count"],
            emitted=int(d["emitted"]),
            status=d["status"],
            revision=int(d["revision"]),
            outstanding_task_id=UUID(str(outstanding)) if outstanding else None,
            outstanding_ordinal=d["outstanding_ordinal"],
            next_date=date.fromisoformat(d["next_date"]) if d["next_date"] else None,
        )


def today_in(now: datetime, zone: str | None) -> date:
    return wall_of(now, zone or "UTC").date()


def read_series(conn: Connection, series_id: UUID) -> SeriesRow:
    """The series ``series_id`` (one that exists)."""
    return SeriesRow.from_row(
        conn.execute(select(task_series).where(task_series.c.id == series_id)).one()
    )


def outstanding_occurrence(conn: Connection, series_id: UUID) -> OccurrenceRow | None:
    """The series' outstanding occurrence, if it has one (at most one)."""
    row = conn.execute(
        select(series_occurrences).where(
            series_occurrences.c.series_id == series_id,
            series_occurrences.c.status == "outstanding",
        )
    ).first()
    return None if row is None else OccurrenceRow.from_row(row)


def series_view(conn: Connection, series_id: UUID, now: datetime) -> SeriesView:
    """The series as of ``now``: its ``next_date`` is the date the next occurrence would
    get if the outstanding one were settled at ``now`` (or, with none outstanding, if the
    series resumed then), by the same computation
    :func:`~kalends.tasks.series_emission.emit` makes, catch-up included. A
    completion-relative series has none until it is settled."""
    row = read_series(conn, series_id)
    outstanding = outstanding_occurrence(conn, series_id)
    rule = SeriesRule.parse(row.rule)
    upcoming = None
    live = row.status in (SeriesStatus.ACTIVE, SeriesStatus.PAUSED)
    counted_out = row.max_count is not None and row.emitted >= row.max_count
    if live and not counted_out and rule.kind is not SeriesKind.COMPLETION_RELATIVE:
        # The occurrence a successor follows: the outstanding one, else the last one.
        previous = (
            outstanding.occurrence_date
            if outstanding is not None
            else conn.execute(
                select(series_occurrences.c.occurrence_date)
                .where(series_occurrences.c.series_id == series_id)
                .order_by(series_occurrences.c.ordinal.desc())
                .limit(1)
            ).scalar_one()
        )
        upcoming = successor_date(
            rule,
            row.anchor_date,
            previous,
            today_in(now, row.zone),
            lambda d: day_exists(d, row.local_time, row.zone),
            row.end_date,
        )
        if upcoming is not None and row.end_date is not None and upcoming > row.end_date:
            upcoming = None
    return SeriesView(
        id=row.id,
        list_id=row.list_id,
        rule=rule,
        local_time=row.local_time,
        zone=row.zone,
        anchor_date=row.anchor_date,
        end_date=row.end_date,
        count=row.max_count,
        emitted=row.emitted,
        status=row.status,
        revision=row.revision,
        outstanding_task_id=outstanding.root_task_id if outstanding else None,
        outstanding_ordinal=outstanding.ordinal if outstanding else None,
        next_date=upcoming,
    )
