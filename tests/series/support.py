"""Helpers of the recurring-series suite: a small world, table snapshots, row readers,
bulk checklists written with Core inserts, and threads released together.
"""

from __future__ import annotations

import secrets
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo

from sqlalchemy import func, insert, select

from kalends.bootstrap import Services
from kalends.clock import FakeClock
from kalends.storage.task_tables import (
    reminder_intents,
    series_occurrences,
    task_history,
    task_series,
    tasks,
)
from kalends.storage.testing import Snapshot, nothing_written, snapshot
from kalends.storage.unit_of_work import Store
from kalends.tasks import Actor, Role, Task, TaskList, TaskService, parse_schedule
from kalends.tasks.refs import ALPHABET, REF_LENGTH
from kalends.tasks.series import SeriesService, SeriesView

JOIN_SECONDS = 20


def utc(text: str) -> datetime:
    """An instant written ``YYYY-MM-DDTHH:MM`` in UTC."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def instant(local: str, zone: str, *, fold: int = 0) -> datetime:
    """The UTC instant of a wall time, by the standard library (an independent oracle)."""
    wall = datetime.fromisoformat(local).replace(tzinfo=ZoneInfo(zone), fold=fold)
    return wall.astimezone(UTC)


def local_exists(local: str, zone: str) -> bool:
    """Whether the wall time exists in the zone: it survives a round trip through UTC."""
    wall = datetime.fromisoformat(local)
    back = wall.replace(tzinfo=ZoneInfo(zone)).astimezone(UTC).astimezone(ZoneInfo(zone))
    return back.replace(tzinfo=None) == wall


@dataclass(frozen=True, slots=True)
class World:
    """Who is who.

    ``home``: alice owns it, bob edits it, carol views it; sections "Kitchen", "Garden".
    ``work``: alice owns it, bob views it; section "Kitchen".
    Every helper acts as alice with the task's or series' current revision.
    """

    services: Services
    clock: FakeClock
    alice: Actor
    bob: Actor
    carol: Actor
    home: TaskList
    work: TaskList

    @property
    def store(self) -> Store:
        return self.services.store

    @property
    def tasks(self) -> TaskService:
        return self.services.tasks

    @property
    def series(self) -> SeriesService:
        return self.services.series

    def at(self, text: str) -> None:
        """Moves the fake clock to a UTC instant ``YYYY-MM-DDTHH:MM``."""
        self.clock.set(utc(text))

    def task(self, task_id: UUID) -> Task:
        return self.tasks.get(self.alice.id, task_id).task

    def create(
        self,
        title: str,
        *,
        parent: UUID | None = None,
        list_id: UUID | None = None,
        **options: Any,
    ) -> Task:
        if list_id is None:
            list_id = self.task(parent).list_id if parent is not None else self.home.id
        return self.tasks.create(self.alice.id, list_id, title, parent=parent, **options)

    def schedule(self, task_id: UUID, data: Mapping[str, Any]) -> Task:
        schedule = parse_schedule(dict(data), self.recipient)
        return self.tasks.set_schedule(
            self.alice.id, task_id, self.task(task_id).revision, schedule
        )

    def recipient(self, value: object, field: str) -> UUID:
        return self.alice.id

    def start(self, task_id: UUID, rule: Mapping[str, Any], **options: Any) -> SeriesView:
        return self.series.start_series(
            self.alice.id, task_id, self.task(task_id).revision, dict(rule), **options
        )

    def complete(self, task_id: UUID, *, complete_subtree: bool = True) -> Task:
        return self.tasks.complete(
            self.alice.id, task_id, self.task(task_id).revision, complete_subtree=complete_subtree
        )

    def reopen(self, task_id: UUID) -> Task:
        return self.tasks.reopen(self.alice.id, task_id, self.task(task_id).revision)

    def trash(self, task_id: UUID) -> Task:
        return self.tasks.trash(self.alice.id, task_id, self.task(task_id).revision)

    def skip(self, task_id: UUID) -> list[UUID]:
        return self.series.skip(self.alice.id, task_id, self.task(task_id).revision)

    def view(self, series_id: UUID) -> SeriesView:
        return self.series.get(self.alice.id, series_id)

    def pause(self, series_id: UUID) -> SeriesView:
        return self.series.pause(self.alice.id, series_id, self.view(series_id).revision)

    def resume(self, series_id: UUID) -> SeriesView:
        return self.series.resume(self.alice.id, series_id, self.view(series_id).revision)

    def stop(self, series_id: UUID) -> SeriesView:
        return self.series.stop(self.alice.id, series_id, self.view(series_id).revision)

    def outstanding(self, series_id: UUID) -> UUID:
        found = self.view(series_id).outstanding_task_id
        assert found is not None, "the series has no outstanding occurrence"
        return found


def make_world(services: Services, clock: FakeClock, name: str) -> World:
    """A fresh cast and fresh lists; ``name`` keeps the handles unique in a shared database."""
    directory = services.directory
    # One transaction (each call a savepoint in it): the same rows, fewer commits.
    with services.store.transaction():
        alice = directory.add_actor(f"alice-{name}", "Alice", "alice@example.com")
        bob = directory.add_actor(f"bob-{name}", "Bob", "bob@example.com")
        carol = directory.add_actor(f"carol-{name}", "Carol")
        home = directory.create_list(alice.id, "Home")
        directory.share(alice.id, home.id, bob.id, Role.EDITOR)
        directory.share(alice.id, home.id, carol.id, Role.VIEWER)
        directory.add_section(alice.id, home.id, "Kitchen")
        directory.add_section(alice.id, home.id, "Garden")
        work = directory.create_list(alice.id, "Work")
        directory.share(alice.id, work.id, bob.id, Role.VIEWER)
        directory.add_section(alice.id, work.id, "Kitchen")
    return World(services, clock, alice, bob, carol, home, work)


# --- reading rows -------------------------------------------------------------------------


def occurrences(store: Store, series_id: UUID) -> list[Any]:
    """The series' occurrence rows, by ordinal."""
    with store.transaction(write=False) as conn:
        return list(
            conn.execute(
                select(series_occurrences)
                .where(series_occurrences.c.series_id == series_id)
                .order_by(series_occurrences.c.ordinal)
            )
        )


def series_row(store: Store, series_id: UUID) -> Any:
    with store.transaction(write=False) as conn:
        return conn.execute(select(task_series).where(task_series.c.id == series_id)).one()


def task_row(store: Store, task_id: UUID) -> Any:
    with store.transaction(write=False) as conn:
        return conn.execute(select(tasks).where(tasks.c.id == task_id)).one()


def occurrence_tasks(store: Store, series_id: UUID, ordinal: int) -> list[Any]:
    """The task rows of one occurrence, by position (parents before children is not promised)."""
    with store.transaction(write=False) as conn:
        return list(
            conn.execute(
                select(tasks)
                .where(tasks.c.series_id == series_id, tasks.c.occurrence == ordinal)
                .order_by(tasks.c.position, tasks.c.title)
            )
        )


def history(store: Store, task_id: UUID) -> list[Any]:
    with store.transaction(write=False) as conn:
        return list(
            conn.execute(
                select(task_history)
                .where(task_history.c.task_id == task_id)
                .order_by(task_history.c.id)
            )
        )


def history_kinds(store: Store, task_id: UUID) -> list[str]:
    return [row.kind for row in history(store, task_id)]


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


def count_rows(store: Store, table: Any) -> int:
    with store.transaction(write=False) as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


# --- big checklists -----------------------------------------------------------------------


def insert_checklist(world: World, root_id: UUID, count: int, *, depth: int = 40) -> list[UUID]:
    """Adds ``count`` open descendants under ``root_id`` with Core inserts: a chain ``depth``
    deep, the rest as leaves spread over the chain. Returns the new IDs."""
    root = task_row(world.store, root_id)
    now = world.clock.now()
    refs = _unused_refs(world, count)
    rows: list[dict[str, Any]] = []
    chain = [root_id]
    for n, ref in enumerate(sorted(refs)):
        task_id = uuid.uuid4()
        parent = chain[-1] if n < depth else chain[n % len(chain)]
        rows.append(
            {
                "id": task_id,
                "ref": ref,
                "list_id": root.list_id,
                "parent_id": parent,
                "position": (n + 1) * 1024,
                "title": f"Item {n}",
                "description": "",
                "status": "open",
                "trashed": False,
                "revision": 1,
                "schedule_revision": 0,
                "series_id": root.series_id,
                "occurrence": root.occurrence,
                "created_by": world.alice.id,
                "created_at": now,
                "updated_at": now,
            }
        )
        if n < depth:
            chain.append(task_id)
    with world.store.transaction() as conn:
        conn.execute(insert(tasks), rows)
    return [row["id"] for row in rows]


def _unused_refs(world: World, count: int) -> set[str]:
    """``count`` random task references no task of the database holds (the tests before
    this one on the same database leave theirs: a drawn one was taken once in a CI run)."""
    refs: set[str] = set()
    while len(refs) < count:
        while len(refs) < count:
            refs.add("".join(secrets.choice(ALPHABET) for _ in range(REF_LENGTH)))
        with world.store.transaction(write=False) as conn:
            refs -= set(conn.execute(select(tasks.c.ref).where(tasks.c.ref.in_(refs))).scalars())
    return refs


# --- threads --------------------------------------------------------------------------------


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


def race(*writers: Callable[[], object]) -> list[object]:
    """Runs the writers in threads released together; their results or errors, in order."""
    barrier = threading.Barrier(len(writers))

    def released(writer: Callable[[], object]) -> Callable[[], object]:
        def run() -> object:
            barrier.wait(JOIN_SECONDS)
            return writer()

        return run

    started = [run_in_thread(released(writer)) for writer in writers]
    for thread, _ in started:
        thread.join(JOIN_SECONDS)
        assert not thread.is_alive(), "a writer hung"
    return [outcome[0] for _, outcome in started]


def dates(rows: Sequence[Any]) -> list[date]:
    return [row.occurrence_date for row in rows]


# Re-exported: the suites import the shared snapshot helpers from here.
__all__ = ["Snapshot", "nothing_written", "snapshot"]
