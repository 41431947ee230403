"""Recurring task series (seed 000, "Recurrence"): start, skip, pause, resume, stop,
and the ``after_task_update`` hook that turns a settled occurrence into its successor.

At most one occurrence of a series is outstanding, which a partial unique index
enforces. Settling an occurrence is a compare-and-swap from ``outstanding``, so a
duplicate hook call or a racing completion can never advance a series twice.
Everything happens inside the user's own transaction.

"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import date, time
from typing import Any, Unpack
from uuid import UUID

from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from kalends.civil import check_zone_name, get_zone, parse_local_datetime
from kalends.errors import Conflict, InvalidInput, NotFound, RevisionConflict
from kalends.identity import ActorRef, Role, parse_uuid, resolve_actor
from kalends.keywords import takes
from kalends.storage.task_tables import series_occurrences, task_series, tasks
from kalends.tasks import history
from kalends.tasks.access import task_with_role
from kalends.tasks.history import Event
from kalends.tasks.keywords import RepeatKeywords
from kalends.tasks.series_emission import emit, outstanding_of, settle
from kalends.tasks.series_rules import (
    MAX_CHECKLIST_TASKS,
    SeriesRule,
)
from kalends.tasks.series_views import (
    SeriesStatus,
    SeriesView,
    outstanding_occurrence,
    read_series,
    series_view,
    today_in,
)
from kalends.tasks.steps import ServiceBase, TaskChange, TaskRef, cancel_intents, cas
from kalends.tasks.successors import ChecklistTooLarge
from kalends.tasks.task_rows import OccurrenceRow, TaskRow
from kalends.tasks.tree import subtree_ids
from kalends.tasks.values import TaskStatus


def _task_day(row: TaskRow, zone: str | None) -> date | None:
    if row.due_date is not None:
        return row.due_date
    if row.due_local is not None:
        return parse_local_datetime(row.due_local).date()
    return row.planned_date


class SeriesService(ServiceBase):
    """Recurring series over the task store; install :meth:`after_task_update` as a hook."""

    # --- commands ------------------------------------------------------------------------

    @takes(RepeatKeywords)
    def start_series(
        self,
        actor: ActorRef,
        root_task: TaskRef,
        expected_revision: int,
        rule: SeriesRule | dict[str, Any],
        **timing: Unpack[RepeatKeywords],
    ) -> SeriesView:
        """Makes the unfinished root task and its live checklist the first occurrence."""
        time_of_day, zone = timing.get("time_of_day"), timing.get("zone")
        end_date, count = timing.get("end_date"), timing.get("count")
        parsed = rule if isinstance(rule, SeriesRule) else SeriesRule.parse(rule)
        local_time = _check_time(time_of_day)
        if zone is not None:
            check_zone_name(zone)
            get_zone(zone)
        if local_time is not None and zone is None:
            raise InvalidInput("zone: a series with a time needs its IANA zone", field="zone")
        if count is not None and (
            not isinstance(count, int) or isinstance(count, bool) or count < 1
        ):
            raise InvalidInput(f"count: a whole number ≥ 1, got {count!r}", field="count")

        def run(conn: Connection) -> SeriesView:
            actor_id, row, now = self._writable(conn, actor, root_task, expected_revision)
            if row.parent_id is not None:
                raise InvalidInput(
                    "task: a series starts on a root task, not a subtask", field="task"
                )
            if row.status != TaskStatus.OPEN.value:
                raise Conflict("task: a series starts on an unfinished task", field="task")
            if row.series_id is not None:
                raise Conflict("task: the task already belongs to a series", field="task")
            ids = subtree_ids(conn, row.id, live_only=True)
            if len(ids) > MAX_CHECKLIST_TASKS:
                raise ChecklistTooLarge(
                    f"the checklist has {len(ids)} live tasks; a series supports at most "
                    f"{MAX_CHECKLIST_TASKS}",
                    tasks=len(ids),
                )
            anchor = _task_day(row, zone) or today_in(now, zone)
            if end_date is not None and end_date < anchor:
                raise InvalidInput(
                    "end_date: the series would end before it starts", field="end_date"
                )
            series_id = uuid.uuid4()
            conn.execute(
                task_series.insert().values(
                    id=series_id,
                    list_id=row.list_id,
                    first_task_id=row.id,
                    rule=parsed.to_json(),
                    local_time=local_time,
                    zone=zone,
                    anchor_date=anchor,
                    end_date=end_date,
                    max_count=count,
                    emitted=1,
                    status=SeriesStatus.ACTIVE,
                    revision=1,
                    created_by=actor_id,
                    created_at=now,
                    updated_at=now,
                )
            )
            conn.execute(
                series_occurrences.insert().values(
                    series_id=series_id,
                    ordinal=1,
                    root_task_id=row.id,
                    occurrence_date=anchor,
                    status="outstanding",
                )
            )
            cas(conn, row, expected_revision, now, {"series_id": series_id, "occurrence": 1})
            others = [i for i in ids if i != row.id]
            if others:
                conn.execute(
                    update(tasks)
                    .where(tasks.c.id.in_(others))
                    .values(series_id=series_id, occurrence=1)
                )
            history.record(
                conn,
                actor_id,
                now,
                [
                    Event(
                        row.id,
                        "series-started",
                        {"rule": parsed.to_json(), "time": local_time, "zone": zone},
                        series_id=series_id,
                        occurrence=1,
                    )
                ],
            )
            return series_view(conn, series_id, now)

        return self.store.run(run)

    def skip(self, actor: ActorRef, task: TaskRef, expected_revision: int) -> list[UUID]:
        """Skips the outstanding occurrence whole; returns the successor's task IDs (if any).

        Its live tasks become complete with ``recurrence-skip`` history, not ordinary
        completion events; then one successor is generated.
        """

        def run(conn: Connection) -> list[UUID]:
            actor_id, row, now = self._writable(conn, actor, task, expected_revision)
            occurrence = outstanding_of(conn, row.id)
            if occurrence is None or row.status != TaskStatus.OPEN.value:
                raise Conflict(
                    "task: only the outstanding occurrence of a series can be skipped", field="task"
                )
            ids = subtree_ids(conn, row.id, live_only=True)
            open_ids = list(
                conn.execute(
                    select(tasks.c.id).where(
                        tasks.c.id.in_(ids), tasks.c.status == TaskStatus.OPEN.value
                    )
                ).scalars()
            )
            done = {"status": TaskStatus.COMPLETED.value, "completed_at": now}
            cas(conn, row, expected_revision, now, done)
            others = [i for i in open_ids if i != row.id]
            if others:
                conn.execute(
                    update(tasks)
                    .where(tasks.c.id.in_(others))
                    .values(**done, revision=tasks.c.revision + 1, updated_at=now)
                )
            cancel_intents(conn, open_ids, now, "recurrence-skip")
            history.record(
                conn,
                actor_id,
                now,
                [
                    Event(
                        i,
                        "recurrence-skip",
                        {"occurrence_root": str(row.id)},
                        series_id=occurrence.series_id,
                        occurrence=occurrence.ordinal,
                    )
                    for i in open_ids
                ],
            )
            return settle(conn, occurrence, "skipped", actor_id, now)

        return self.store.run(run)

    def pause(self, actor: ActorRef, series: UUID | str, expected_revision: int) -> SeriesView:
        """Pauses: completing the outstanding occurrence then records it without a successor."""
        return self._set_status(actor, series, expected_revision, SeriesStatus.PAUSED)

    def resume(self, actor: ActorRef, series: UUID | str, expected_revision: int) -> SeriesView:
        """Resumes, emitting one successor if no occurrence is outstanding."""
        return self._set_status(actor, series, expected_revision, SeriesStatus.ACTIVE)

    def stop(self, actor: ActorRef, series: UUID | str, expected_revision: int) -> SeriesView:
        """Stops for good; the outstanding task stays as an ordinary task to finish."""
        return self._set_status(actor, series, expected_revision, SeriesStatus.STOPPED)

    def get(self, actor: ActorRef, series_or_task: UUID | str) -> SeriesView:
        """A series by its ID, or the series of a task (by ID or reference)."""

        def run(conn: Connection) -> SeriesView:
            actor_id = resolve_actor(conn, actor)
            series_id = _find_series(conn, actor_id, series_or_task)
            return series_view(conn, series_id, self.store.clock.now())

        return self.store.run(run, write=False)

    def _set_status(
        self, actor: ActorRef, series: UUID | str, expected_revision: int, status: str
    ) -> SeriesView:
        def run(conn: Connection) -> SeriesView:
            actor_id = resolve_actor(conn, actor)
            series_id = _find_series(conn, actor_id, series, write=True)
            row = read_series(conn, series_id)
            if row.revision != expected_revision:
                raise RevisionConflict(
                    f"the series changed: expected revision {expected_revision}, "
                    f"it is {row.revision}",
                    expected=expected_revision,
                    actual=row.revision,
                )
            if row.status in (SeriesStatus.STOPPED, SeriesStatus.ENDED):
                raise Conflict(f"series: the series is {row.status}; that is final", field="series")
            if row.status == status:
                raise Conflict(f"series: the series is already {status}", field="series")
            now = self.store.clock.now()
            result = conn.execute(
                update(task_series)
                .where(task_series.c.id == series_id, task_series.c.revision == expected_revision)
                .values(status=status, revision=task_series.c.revision + 1, updated_at=now)
            )
            if result.rowcount == 0:
                raise RevisionConflict("the series changed meanwhile", expected=expected_revision)
            outstanding = outstanding_occurrence(conn, series_id)
            if status == SeriesStatus.STOPPED and outstanding is not None:
                conn.execute(
                    update(series_occurrences)
                    .where(
                        series_occurrences.c.series_id == series_id,
                        series_occurrences.c.ordinal == outstanding.ordinal,
                    )
                    .values(status="released", settled_at=now)
                )
            kind = {"active": "series-resumed", "paused": "series-paused"}.get(
                status, "series-stopped"
            )
            last = OccurrenceRow.from_row(
                conn.execute(
                    select(series_occurrences)
                    .where(series_occurrences.c.series_id == series_id)
                    .order_by(series_occurrences.c.ordinal.desc())
                    .limit(1)
                ).one()
            )
            history.record(
                conn,
                actor_id,
                now,
                [Event(last.root_task_id, kind, {}, series_id=series_id, occurrence=last.ordinal)],
            )
            if status == SeriesStatus.ACTIVE and outstanding is None:
                emit(conn, series_id, last.root_task_id, last.occurrence_date, actor_id, now)
            return series_view(conn, series_id, now)

        return self.store.run(run)

    # --- the hook ------------------------------------------------------------------------

    def after_task_update(
        self, conn: Connection, task_ids: Sequence[UUID], change: TaskChange
    ) -> None:
        """Reacts to task transitions inside their transaction (seed 000, "Recurrence")."""
        if change.kind == "completed":
            occurrence = outstanding_of(conn, change.root_id)
            if occurrence is not None:
                settle(conn, occurrence, "completed", change.actor_id, change.at)
        elif change.kind == "reopened":
            conn.execute(
                update(series_occurrences)
                .where(
                    # The reopened task, or an ancestor reopened with it, may be a root.
                    series_occurrences.c.root_task_id.in_(list(task_ids)),
                    series_occurrences.c.status.in_(("completed", "skipped")),
                )
                .values(status="reopened")
            )
        elif change.kind == "reparented":
            if outstanding_of(conn, change.root_id, live_series_only=True) is not None:
                raise Conflict(
                    "task: this is the open occurrence of a recurring series; "
                    "stop the series first",
                    field="task",
                )
        elif change.kind == "moved-list":
            new_list = conn.execute(
                select(tasks.c.list_id).where(tasks.c.id == change.root_id)
            ).scalar_one()
            # Only the outstanding occurrence carries its series along; a historical
            # one moves alone.
            series_ids = select(series_occurrences.c.series_id).where(
                series_occurrences.c.root_task_id == change.root_id,
                series_occurrences.c.status == "outstanding",
            )
            conn.execute(
                update(task_series).where(task_series.c.id.in_(series_ids)).values(list_id=new_list)
            )


def _find_series(conn: Connection, actor_id: UUID, ref: UUID | str, *, write: bool = False) -> UUID:
    as_id = parse_uuid(ref, "series")
    if as_id is not None:
        found = conn.execute(
            select(task_series.c.id, task_series.c.first_task_id).where(task_series.c.id == as_id)
        ).first()
        if found is not None:
            series_id: UUID
            first_task_id: UUID
            series_id, first_task_id = found
            minimum = Role.EDITOR if write else Role.VIEWER
            try:
                task_with_role(conn, actor_id, first_task_id, minimum, write=write)
            except NotFound:
                # Of a list the actor has no role on: told as an unknown ID is.
                raise NotFound(f"series: no series or task {ref!s}", field="series") from None
            return series_id
    try:
        row = task_with_role(
            conn, actor_id, ref, Role.EDITOR if write else Role.VIEWER, write=write
        )
    except NotFound as exc:
        raise NotFound(f"series: no series or task {ref!s}", field="series") from exc
    if row.series_id is None:
        raise NotFound("series: the task belongs to no series", field="series")
    return row.series_id


def _check_time(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        parsed = time.fromisoformat(value)
    except (TypeError, ValueError):
        parsed = None
    if parsed is None or len(value) not in (5, 8) or parsed.tzinfo is not None:
        raise InvalidInput(f"time: HH:MM or HH:MM:SS, got {value!r}", field="time")
    return parsed.isoformat(timespec="seconds")


__all__ = ["SeriesService", "SeriesStatus", "SeriesView"]
