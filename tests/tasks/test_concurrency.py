"""Concurrent writers, each on its own engine and Store over one database: revisions
decide who wins, and a checklist completion and an edit of a child never lose either.
"""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections.abc import Callable
from functools import partial
from uuid import UUID

import pytest
from sqlalchemy import func, insert, select

from kalends.clock import FakeClock
from kalends.errors import Conflict, InvalidInput, RevisionConflict
from kalends.storage.task_tables import blobs, tags
from kalends.storage.testing import StorageTarget
from kalends.storage.unit_of_work import Store
from kalends.tasks import Schedule, Task, TaskService, TaskStatus, parse_schedule

from .conftest import World
from .support import Gate, history_kinds, intents, run_in_thread, task_row

ROUNDS = 4
# Long enough for the second writer to reach the lock it waits on; far below the busy timeout.
BLOCK_SECONDS = 0.2
JOIN_SECONDS = 20


def other_service(
    storage_target: StorageTarget, fake_clock: FakeClock, *hooks: Gate
) -> TaskService:
    """A task service on a second engine and Store over the same (migrated) database."""
    return TaskService(Store(storage_target.engine(), fake_clock), hooks=hooks)


def join(*threads: threading.Thread) -> None:
    for thread in threads:
        thread.join(JOIN_SECONDS)
        assert not thread.is_alive(), "a writer hung"


Write = Callable[[World, TaskService, UUID, int, str], object]


def race(*writers: Callable[[], object]) -> list[object]:
    """Runs the writers in threads released together; their results or errors, in order."""
    barrier = threading.Barrier(len(writers))

    def released(writer: Callable[[], object]) -> Callable[[], object]:
        def run() -> object:
            barrier.wait(JOIN_SECONDS)
            return writer()

        return run

    started = [run_in_thread(released(writer)) for writer in writers]
    join(*(thread for thread, _ in started))
    return [outcome[0] for _, outcome in started]


def reminder_at(world: World, local: str) -> Schedule:
    data = {"reminders": [{"channel": "email", "local": local, "zone": "Europe/Paris"}]}
    return parse_schedule(data, world.recipient)


# Pairs of writes that race with the same expected revision; each wins in its own way.
RACES = [
    # Two renames.
    pytest.param(
        lambda w, s, t, r, n: s.rename(w.alice.id, t, r, f"title {n}"),
        lambda w, s, t, r, n: s.rename(w.bob.id, t, r, f"title {n}"),
        id="rename-vs-rename",
    ),
    # Two schedules, each with its own reminder: only the winner's intent may exist.
    pytest.param(
        lambda w, s, t, r, n: s.set_schedule(
            w.alice.id, t, r, reminder_at(w, "2026-03-10T08:00:00")
        ),
        lambda w, s, t, r, n: s.set_schedule(w.bob.id, t, r, reminder_at(w, "2026-03-11T08:00:00")),
        id="schedule-vs-schedule",
    ),
    # A completion and a trash.
    pytest.param(
        lambda w, s, t, r, n: s.complete(w.alice.id, t, r),
        lambda w, s, t, r, n: s.trash(w.bob.id, t, r),
        id="complete-vs-trash",
    ),
]


class TestRevisionRaces:
    @pytest.mark.parametrize(("first", "second"), RACES)
    def test_two_writers_with_the_same_expected_revision_exactly_one_wins(
        self,
        world: World,
        storage_target: StorageTarget,
        fake_clock: FakeClock,
        first: Write,
        second: Write,
    ) -> None:
        services = (world.tasks, other_service(storage_target, fake_clock))
        for n in range(ROUNDS):
            task = world.tasks.create(world.alice.id, world.home.id, f"Contended {n}")

            outcomes = race(
                partial(first, world, services[0], task.id, 1, f"{n}.0"),
                partial(second, world, services[1], task.id, 1, f"{n}.1"),
            )

            winners = [o for o in outcomes if isinstance(o, Task)]
            losers = [o for o in outcomes if isinstance(o, RevisionConflict)]
            assert (len(winners), len(losers)) == (1, 1), outcomes
            assert (losers[0].expected, losers[0].actual) == (1, 2)
            (winner,) = winners
            row = task_row(world.store, task.id)
            assert row.revision == 2
            assert (row.title, row.status, row.trashed, row.schedule_revision) == (
                winner.title,
                winner.status.value,
                winner.trashed,
                winner.schedule_revision,
            )
            # One history event for the one write that happened.
            assert len(history_kinds(world.store, task.id)) == 2
            # Only the winner's reminders reached the outbox.
            rows = intents(world.store, task.id)
            assert [(r.status, r.at) for r in rows] == [
                ("pending", r.time.at) for r in winner.reminders
            ]


class TestChecklistCompletionAgainstAChildEdit:
    @pytest.fixture
    def parent_and_child(self, world: World) -> tuple[Task, Task, Task]:
        parent = world.tasks.create(world.alice.id, world.home.id, "Parent")
        child = world.tasks.create(world.alice.id, world.home.id, "Child", parent=parent.id)
        other = world.tasks.create(world.alice.id, world.home.id, "Other", parent=parent.id)
        return parent, child, other

    def test_a_child_rename_that_loses_to_the_completion_is_a_conflict(
        self,
        world: World,
        storage_target: StorageTarget,
        fake_clock: FakeClock,
        parent_and_child: tuple[Task, Task, Task],
    ) -> None:
        parent, child, _ = parent_and_child
        gate = Gate()
        holder = other_service(storage_target, fake_clock, gate)

        completing, completed = run_in_thread(
            lambda: holder.complete(world.alice.id, parent.id, 1, complete_subtree=True)
        )
        assert gate.entered.wait(JOIN_SECONDS)
        # The completion has written the child and holds its transaction open.
        renaming, renamed = run_in_thread(
            lambda: world.tasks.rename(world.bob.id, child.id, 1, "Renamed")
        )
        time.sleep(BLOCK_SECONDS)
        gate.release.set()
        join(completing, renaming)

        assert isinstance(completed[0], Task)
        (conflict,) = renamed
        assert isinstance(conflict, RevisionConflict)
        assert (conflict.expected, conflict.actual) == (1, 2)
        row = task_row(world.store, child.id)
        assert (row.title, row.status, row.revision) == ("Child", "completed", 2)
        assert history_kinds(world.store, child.id) == ["created", "completed"]

    def test_a_child_edit_held_open_is_kept_and_then_completed(
        self,
        world: World,
        storage_target: StorageTarget,
        fake_clock: FakeClock,
        parent_and_child: tuple[Task, Task, Task],
    ) -> None:
        parent, child, other = parent_and_child
        gate = Gate()
        holder = other_service(storage_target, fake_clock, gate)

        # A move of the child calls the hooks, so the gate holds its transaction open.
        moving, moved = run_in_thread(
            lambda: holder.move(world.bob.id, child.id, 1, after=other.id)
        )
        assert gate.entered.wait(JOIN_SECONDS)
        completing, completed = run_in_thread(
            lambda: world.tasks.complete(world.alice.id, parent.id, 1, complete_subtree=True)
        )
        time.sleep(BLOCK_SECONDS)
        gate.release.set()
        join(moving, completing)

        assert isinstance(moved[0], Task)
        assert isinstance(completed[0], Task)
        row = task_row(world.store, child.id)
        # Both writes are there: the move and the completion, each with its revision.
        assert (row.status, row.revision) == ("completed", 3)
        assert row.position > task_row(world.store, other.id).position
        assert history_kinds(world.store, child.id) == ["created", "moved", "completed"]

    @pytest.mark.parametrize(
        "child_first",
        [
            # The child's own completion commits first; the checklist's comes after.
            True,
            # The checklist's completion commits first; the child's own then conflicts.
            False,
        ],
    )
    def test_a_child_is_completed_once_when_it_and_its_checklist_complete_together(
        self,
        world: World,
        storage_target: StorageTarget,
        fake_clock: FakeClock,
        parent_and_child: tuple[Task, Task, Task],
        child_first: bool,
    ) -> None:
        parent, child, _ = parent_and_child
        gate = Gate()
        holder = other_service(storage_target, fake_clock, gate)

        def complete_child(service: TaskService) -> Task:
            return service.complete(world.bob.id, child.id, 1)

        def complete_parent(service: TaskService) -> Task:
            return service.complete(world.alice.id, parent.id, 1, complete_subtree=True)

        held, racing = (
            (complete_child, complete_parent) if child_first else (complete_parent, complete_child)
        )

        holding, held_outcome = run_in_thread(lambda: held(holder))
        assert gate.entered.wait(JOIN_SECONDS)
        waiting, racing_outcome = run_in_thread(lambda: racing(world.tasks))
        time.sleep(BLOCK_SECONDS)
        gate.release.set()
        join(holding, waiting)

        assert isinstance(held_outcome[0], Task)
        assert task_row(world.store, parent.id).status == "completed"
        row = task_row(world.store, child.id)
        assert row.status == "completed"
        assert history_kinds(world.store, child.id).count("completed") == 1
        assert row.revision == 2
        if not child_first:
            assert isinstance(racing_outcome[0], RevisionConflict)

    def test_a_completed_checklist_never_keeps_an_open_child_reopened_meanwhile(
        self,
        world: World,
        storage_target: StorageTarget,
        fake_clock: FakeClock,
        parent_and_child: tuple[Task, Task, Task],
    ) -> None:
        parent, child, other = parent_and_child
        world.tasks.complete(world.alice.id, other.id, 1)
        done = world.tasks.complete(world.alice.id, child.id, 1)
        gate = Gate()
        holder = other_service(storage_target, fake_clock, gate)

        reopening, reopened = run_in_thread(
            lambda: holder.reopen(world.bob.id, child.id, done.revision)
        )
        assert gate.entered.wait(JOIN_SECONDS)
        completing, completed = run_in_thread(
            lambda: world.tasks.complete(world.alice.id, parent.id, 1, complete_subtree=True)
        )
        time.sleep(BLOCK_SECONDS)
        gate.release.set()
        join(reopening, completing)

        assert isinstance(reopened[0], Task)
        statuses = (task_row(world.store, parent.id).status, task_row(world.store, child.id).status)
        # Either order is fine, a completed parent over an open child is not.
        assert statuses != (TaskStatus.COMPLETED.value, TaskStatus.OPEN.value), completed


class TestSharedRowsCreatedAtOnce:
    """Content-addressed blobs and per-list tags are shared rows, created on first use.
    Another transaction creating the same row at the same moment must not make the
    operation fail."""

    @pytest.mark.parametrize(
        "kind",
        [
            # The same new bytes attached by two writers.
            "blob",
            # The same new tag used by two writers.
            "tag",
        ],
    )
    def test_a_shared_row_created_meanwhile_by_another_writer_is_reused(
        self,
        world: World,
        storage_target: StorageTarget,
        fake_clock: FakeClock,
        kind: str,
    ) -> None:
        task = world.tasks.create(world.alice.id, world.home.id, "Target")
        data = b"the same bytes"
        other = Store(storage_target.engine(), fake_clock)

        def act() -> object:
            if kind == "blob":
                return world.tasks.attach(world.bob.id, task.id, "a.txt", "text/plain", data)
            return world.tasks.tag(world.bob.id, task.id, task.revision, ["fresh"])

        # The other writer has created the row and not committed yet when this one looks.
        with other.transaction() as conn:
            if kind == "blob":
                digest = hashlib.sha256(data).hexdigest()
                conn.execute(insert(blobs).values(sha256=digest, size=len(data), data=data))
            else:
                conn.execute(
                    insert(tags).values(id=uuid.uuid4(), list_id=world.home.id, name="fresh")
                )
            acting, outcome = run_in_thread(act)
            time.sleep(BLOCK_SECONDS)
        join(acting)

        assert not isinstance(outcome[0], Exception), repr(outcome[0])
        table = blobs if kind == "blob" else tags
        with world.store.transaction(write=False) as conn:
            assert conn.execute(select(func.count()).select_from(table)).scalar_one() == 1


class TestStructureUnderConcurrentMoves:
    def test_two_reparents_that_would_close_a_cycle_never_both_succeed(
        self, world: World, storage_target: StorageTarget, fake_clock: FakeClock
    ) -> None:
        a = world.tasks.create(world.alice.id, world.home.id, "A")
        b = world.tasks.create(world.alice.id, world.home.id, "B")
        gate = Gate()
        holder = other_service(storage_target, fake_clock, gate)

        # A goes under B and holds its transaction open while B tries to go under A.
        first, first_outcome = run_in_thread(lambda: holder.reparent(world.alice.id, a.id, 1, b.id))
        assert gate.entered.wait(JOIN_SECONDS)
        second, second_outcome = run_in_thread(
            lambda: world.tasks.reparent(world.alice.id, b.id, 1, a.id)
        )
        time.sleep(BLOCK_SECONDS)
        gate.release.set()
        join(first, second)

        # Read the parent links row by row: a cycle would make recursive reads loop.
        parents = {a.id: task_row(world.store, a.id).parent_id}
        parents[b.id] = task_row(world.store, b.id).parent_id
        assert (parents[a.id], parents[b.id]) != (b.id, a.id), "A and B are each other's parent"
        outcomes = [first_outcome[0], second_outcome[0]]
        assert sum(isinstance(o, Task) for o in outcomes) == 1, outcomes

    def test_a_child_created_while_its_parent_moves_to_another_list_follows_it_or_is_refused(
        self, world: World, storage_target: StorageTarget, fake_clock: FakeClock
    ) -> None:
        root = world.tasks.create(world.alice.id, world.home.id, "Root")
        gate = Gate()
        holder = other_service(storage_target, fake_clock, gate)

        moving, moved = run_in_thread(
            lambda: holder.move_to_list(world.alice.id, root.id, 1, world.work.id)
        )
        assert gate.entered.wait(JOIN_SECONDS)
        creating, created = run_in_thread(
            lambda: world.tasks.create(world.alice.id, world.home.id, "Child", parent=root.id)
        )
        time.sleep(BLOCK_SECONDS)
        gate.release.set()
        join(moving, creating)

        assert isinstance(moved[0], Task)
        child = created[0]
        if isinstance(child, Task):
            assert task_row(world.store, child.id).list_id == world.work.id
        else:
            # Refused as bad input (the parent is in another list) or as a conflict.
            assert isinstance(child, InvalidInput | Conflict), repr(child)
