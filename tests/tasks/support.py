"""Helpers of the task-store suite: table snapshots, intent rows, hook recorders."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.engine import Connection

from kalends.storage.task_tables import reminder_intents, task_history, tasks
from kalends.storage.testing import Snapshot, nothing_written, snapshot
from kalends.storage.unit_of_work import Store
from kalends.tasks import TaskChange


def intents(store: Store, task_id: UUID) -> list[Any]:
    """The task's reminder-intent rows, oldest schedule revision first."""
    with store.transaction(write=False) as conn:
        return list(
            conn.execute(
                select(reminder_intents)
                .where(reminder_intents.c.task_id == task_id)
                .order_by(
                    reminder_intents.c.schedule_revision,
                    reminder_intents.c.at,
                    reminder_intents.c.channel,
                )
            )
        )


def history_kinds(store: Store, task_id: UUID) -> list[str]:
    with store.transaction(write=False) as conn:
        return list(
            conn.execute(
                select(task_history.c.kind)
                .where(task_history.c.task_id == task_id)
                .order_by(task_history.c.id)
            ).scalars()
        )


def task_row(store: Store, task_id: UUID) -> Any:
    with store.transaction(write=False) as conn:
        return conn.execute(select(tasks).where(tasks.c.id == task_id)).one()


@dataclass(frozen=True, slots=True)
class HookCall:
    task_ids: tuple[UUID, ...]
    change: TaskChange
    # The rows of those tasks as the hook saw them, inside the operation's transaction.
    statuses: dict[UUID, str]
    in_transaction: bool


@dataclass(slots=True)
class Recorder:
    """An ``after_task_update`` hook that records its calls and what it could see."""

    calls: list[HookCall] = field(default_factory=list)

    def __call__(self, conn: Connection, task_ids: Sequence[UUID], change: TaskChange) -> None:
        rows = conn.execute(select(tasks.c.id, tasks.c.status).where(tasks.c.id.in_(task_ids)))
        self.calls.append(
            HookCall(
                task_ids=tuple(task_ids),
                change=change,
                statuses={row.id: row.status for row in rows},
                in_transaction=conn.in_transaction(),
            )
        )


class HookFailed(Exception):
    """Raised by a failing hook."""


def failing_hook(conn: Connection, task_ids: Sequence[UUID], change: TaskChange) -> None:
    raise HookFailed(change.kind)


@dataclass(slots=True)
class Gate:
    """A hook that holds its transaction open until released: lets a test interleave writers."""

    entered: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    timeout: float = 10.0

    def __call__(self, conn: Connection, task_ids: Sequence[UUID], change: TaskChange) -> None:
        self.entered.set()
        assert self.release.wait(self.timeout), "the gate was never released"


def run_in_thread(fn: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    """Starts ``fn`` in a thread; the list receives its result or the exception it raised."""
    outcome: list[object] = []

    def target() -> None:
        try:
            outcome.append(fn())
        except Exception as exc:
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, outcome


# Re-exported: the suites import the shared snapshot helpers from here.
__all__ = ["Snapshot", "nothing_written", "snapshot"]
