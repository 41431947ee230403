"""Schedules and transitions: set_schedule, complete, reopen (seed 000)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any
from uuid import UUID

from sqlalchemy import bindparam, delete, func, insert, select, update
from sqlalchemy.engine import Connection

from kalends.civil import format_local
from kalends.errors import Conflict, Forbidden, OpenDescendants
from kalends.identity import ActorRef
from kalends.reminders import IntentPlan, cancel_intents, replace_intents
from kalends.storage.task_tables import list_members, task_reminders, tasks
from kalends.storage.unit_of_work import for_update
from kalends.tasks import history
from kalends.tasks.access import Delegation
from kalends.tasks.history import Event
from kalends.tasks.loading import load_tasks, task_after_write
from kalends.tasks.models import Task, reminder_from_row, reminder_to_json
from kalends.tasks.series_state import is_recurring_root
from kalends.tasks.steps import ServiceBase, TaskChange, TaskRef, cas
from kalends.tasks.task_rows import TaskRow
from kalends.tasks.tree import ancestor_ids
from kalends.tasks.values import Reminder, Schedule, TaskStatus, TimedValue, due_to_json

_MEMBERS_AMONG = select(list_members.c.actor_id).where(
    list_members.c.list_id == bindparam("list_id"),
    list_members.c.actor_id.in_(bindparam("ids", expanding=True)),
)
_DELETE_REMINDERS = delete(task_reminders).where(task_reminders.c.task_id == bindparam("task_id"))


def _live_subtree() -> Any:
    tree = (
        select(tasks.c.id)
        .where(tasks.c.id == bindparam("root_id"))
        .cte("live_subtree", recursive=True)
    )
    return tree.union_all(
        select(tasks.c.id)
        .join(tree, tasks.c.parent_id == tree.c.id)
        .where(tasks.c.trashed.is_(False))
    )


_LIVE = _live_subtree()
_LIVE_DESCENDANTS = select(_LIVE.c.id).where(_LIVE.c.id != bindparam("root_id")).scalar_subquery()
_OPEN_DESCENDANTS = select(func.count()).where(
    tasks.c.id.in_(select(_LIVE.c.id).where(_LIVE.c.id != bindparam("root_id"))),
    tasks.c.status == TaskStatus.OPEN.value,
)
_COMPLETE_DESCENDANTS = (
    update(tasks)
    .where(
        tasks.c.id.in_(select(_LIVE.c.id).where(_LIVE.c.id != bindparam("root_id"))),
        tasks.c.status == TaskStatus.OPEN.value,
    )
    .values(
        status=TaskStatus.COMPLETED.value,
        completed_at=bindparam("now"),
        revision=tasks.c.revision + 1,
        updated_at=bindparam("now"),
    )
    .returning(tasks.c.id)
)
_LOCK_SUBTREE = for_update(select(tasks.c.id).where(tasks.c.id.in_(select(_LIVE.c.id))))
_LIVE_SUBTREE = select(_LIVE.c.id)
_REMINDERS = select(task_reminders).where(task_reminders.c.task_id == bindparam("task_id"))


def _reminders_of(conn: Connection, task_id: UUID) -> tuple[Reminder, ...]:
    rows = conn.execute(_REMINDERS.order_by(task_reminders.c.position), {"task_id": task_id})
    return tuple(reminder_from_row(r) for r in rows)


class Transitions(ServiceBase):
    """Schedule writes and the completion transitions, each calling the hooks."""

    # --- schedule ----------------------------------------------------------------------------

    def set_schedule(
        self, actor: ActorRef, task: TaskRef, expected_task_revision: int, schedule: Schedule
    ) -> Task:
        """Writes planned date, due value, priority and reminders (seed 000, "Scheduling domain").

        Bumps the task revision and the schedule revision, appends history, cancels the
        pending and leased intents of the old schedule revision and creates the new ones,
        all in one transaction. Reminder recipients must be members of the list.
        """

        def run(conn: Connection) -> Task:
            actor_id, row, now = self._writable(conn, actor, task, expected_task_revision)
            recipients = {r.recipient_id for r in schedule.reminders}
            if recipients:
                members = set(
                    conn.execute(
                        _MEMBERS_AMONG, {"list_id": row.list_id, "ids": list(recipients)}
                    ).scalars()
                )
                if recipients - members:
                    raise Forbidden(
                        "reminders: every recipient must be a member of the task's list"
                    )
            schedule_revision = row.schedule_revision + 1
            due = schedule.due
            timed = due if isinstance(due, TimedValue) else None
            values = {
                "schedule_revision": schedule_revision,
                "planned_date": schedule.planned,
                "priority": schedule.priority,
                "due_date": due if isinstance(due, date) else None,
                "due_local": format_local(timed.local) if timed else None,
                "due_zone": timed.zone if timed else None,
                "due_at": timed.at if timed else None,
            }
            cas(conn, row, expected_task_revision, now, values)
            conn.execute(_DELETE_REMINDERS, {"task_id": row.id})
            if schedule.reminders:
                conn.execute(
                    insert(task_reminders),
                    [
                        {
                            "task_id": row.id,
                            "position": i,
                            "channel": r.channel.value,
                            "local": format_local(r.time.local),
                            "zone": r.time.zone,
                            "at": r.time.at,
                            "recipient_id": r.recipient_id,
                        }
                        for i, r in enumerate(schedule.reminders)
                    ],
                )
            # A settled task gets no intents; its old ones are cancelled all the same.
            open_task = row.status == TaskStatus.OPEN.value
            plans = [
                IntentPlan(
                    task_id=row.id,
                    schedule_revision=schedule_revision,
                    channel=r.channel,
                    at=r.time.at,
                    recipient_id=r.recipient_id,
                )
                for r in (schedule.reminders if open_task else ())
            ]
            replace_intents(conn, [row.id], plans, now, "schedule-changed")
            payload = {
                "schedule_revision": schedule_revision,
                "planned": schedule.planned.isoformat() if schedule.planned else None,
                "due": due_to_json(due),
                "priority": schedule.priority,
                "reminders": [reminder_to_json(r) for r in schedule.reminders],
            }
            history.record(conn, actor_id, now, [Event(row.id, "schedule-set", payload)])
            # The row read at the start plus what was written: no need to read it back.
            return task_after_write(
                conn,
                row,
                values | {"revision": expected_task_revision + 1, "updated_at": now},
                reminders=schedule.reminders,
            )

        return self.store.run(run)

    # --- transitions -------------------------------------------------------------------------

    def complete(
        self,
        actor: ActorRef,
        task: TaskRef,
        expected_revision: int,
        *,
        complete_subtree: bool = False,
    ) -> Task:
        """Completes a task. With open live descendants it needs ``complete_subtree=True``,
        which completes them all in the same transaction; a recurring occurrence root
        always needs it (seed 000, "Recurrence").
        """

        def run(conn: Connection) -> Task:
            actor_id, row, now = self._writable(conn, actor, task, expected_revision)
            return self._complete_row(conn, actor_id, row, expected_revision, now, complete_subtree)

        return self.store.run(run)

    def complete_delegated(
        self,
        delegation: Delegation,
        task: TaskRef,
        expected_revision: int,
        *,
        complete_subtree: bool = False,
    ) -> Task:
        """:meth:`complete` by a delegate, on a task of its checklist only (the
        delegation's refusal for any other, with nothing written); the history names the
        delegate as the actor."""

        def run(conn: Connection) -> Task:
            row, now = self._delegated(conn, delegation, task, expected_revision)
            return self._complete_row(
                conn, delegation.actor_id, row, expected_revision, now, complete_subtree
            )

        return self.store.run(run)

    def _complete_row(
        self,
        conn: Connection,
        actor_id: UUID,
        row: TaskRow,
        expected_revision: int,
        now: datetime,
        complete_subtree: bool,
    ) -> Task:
        """Completes the task of ``row`` (read, and the actor allowed, by the caller)."""
        if row.status == TaskStatus.COMPLETED.value:
            raise Conflict("task: the task is already completed", field="task")
        recurring_root = row.series_id is not None and is_recurring_root(conn, row.id)
        if not complete_subtree:
            open_count = conn.execute(_OPEN_DESCENDANTS, {"root_id": row.id}).scalar_one()
            if open_count or recurring_root:
                raise OpenDescendants.of(open_count, recurring=recurring_root)
        if conn.dialect.name == "postgresql":
            # Lock the checklist first, so an item reopened meanwhile is seen open below.
            conn.execute(_LOCK_SUBTREE, {"root_id": row.id})
        done = {"status": TaskStatus.COMPLETED.value, "completed_at": now}
        cas(conn, row, expected_revision, now, done)
        # One set-based statement completes the open live descendants and names them.
        open_ids = list(
            conn.execute(_COMPLETE_DESCENDANTS, {"root_id": row.id, "now": now}).scalars()
        )
        changed = [row.id, *open_ids]
        subtree = conn.execute(_LIVE_SUBTREE, {"root_id": row.id}).scalars().all()
        cancel_intents(conn, subtree, now, "task-completed")
        history.record(
            conn,
            actor_id,
            now,
            [
                Event(
                    row.id,
                    "completed",
                    {"complete_subtree": complete_subtree},
                    series_id=row.series_id,
                    occurrence=row.occurrence,
                )
            ],
        )
        if open_ids:
            history.record_same(
                conn,
                actor_id,
                now,
                open_ids,
                "completed",
                {"cascade_from": str(row.id)},
                series_id=row.series_id,
                occurrence=row.occurrence,
            )
        change = TaskChange("completed", row.id, actor_id, now, complete_subtree)
        self._notify(conn, changed, change)
        written = done | {"revision": expected_revision + 1, "updated_at": now}
        return task_after_write(conn, row, written, reminders=_reminders_of(conn, row.id))

    def reopen(self, actor: ActorRef, task: TaskRef, expected_revision: int) -> Task:
        """Reopens a completed task and its completed ancestors. Reminders are not replayed."""

        def run(conn: Connection) -> Task:
            actor_id, row, now = self._writable(conn, actor, task, expected_revision)
            if row.status != TaskStatus.COMPLETED.value:
                raise Conflict("task: the task is not completed", field="task")
            opened = {"status": TaskStatus.OPEN.value, "completed_at": None}
            cas(conn, row, expected_revision, now, opened)
            ancestors = ancestor_ids(conn, row.id)
            closed = (
                list(
                    conn.execute(
                        select(tasks.c.id).where(
                            tasks.c.id.in_(ancestors),
                            tasks.c.status == TaskStatus.COMPLETED.value,
                        )
                    ).scalars()
                )
                if ancestors
                else []
            )
            if closed:
                conn.execute(
                    update(tasks)
                    .where(tasks.c.id.in_(closed))
                    .values(**opened, revision=tasks.c.revision + 1, updated_at=now)
                )
            cascade = {"cascade_from": str(row.id)}
            history.record(
                conn,
                actor_id,
                now,
                [Event(row.id, "reopened", {}, series_id=row.series_id, occurrence=row.occurrence)]
                + [
                    Event(
                        i, "reopened", cascade, series_id=row.series_id, occurrence=row.occurrence
                    )
                    for i in closed
                ],
            )
            changed = [row.id, *closed]
            self._notify(conn, changed, TaskChange("reopened", row.id, actor_id, now))
            return load_tasks(conn, [row.id])[0]

        return self.store.run(run)
