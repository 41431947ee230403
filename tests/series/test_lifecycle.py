"""The life of a series (seed 000, "Recurrence"): one outstanding occurrence, one
successor per completion or skip, pause, resume, stop, history, reopening, and
completing a recurring checklist only on purpose.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError

from kalends.errors import Conflict, OpenDescendants
from kalends.storage.task_tables import series_occurrences, task_history, tasks
from kalends.tasks import TaskStatus

from .support import (
    World,
    history,
    history_kinds,
    intents,
    nothing_written,
    occurrence_tasks,
    occurrences,
    series_row,
    task_row,
)


def checklist_series(world: World, **options: Any) -> tuple[UUID, UUID, UUID]:
    """A daily series on a root with two items; returns (series, root, first item)."""
    world.at("2026-03-05T12:00")
    root = world.create("Morning routine")
    first = world.create("Stretch", parent=root.id)
    world.create("Coffee", parent=root.id)
    view = world.start(root.id, {"kind": "daily"}, **options)
    return view.id, root.id, first.id


def outstanding_count(world: World, series_id: UUID) -> int:
    return sum(o.status == "outstanding" for o in occurrences(world.store, series_id))


class TestOneOutstandingOccurrence:
    def test_there_is_at_most_one_outstanding_occurrence_per_series(self, world: World) -> None:
        series_id, _, _ = checklist_series(world)

        for n in range(4):
            current = world.outstanding(series_id)
            if n % 2:
                world.skip(current)
            else:
                world.complete(current)
            assert outstanding_count(world, series_id) == 1

    def test_the_database_refuses_a_second_outstanding_occurrence(self, world: World) -> None:
        series_id, _, _ = checklist_series(world)
        other = world.create("Sneaked in")

        with pytest.raises(IntegrityError), world.store.transaction() as conn:
            conn.execute(
                insert(series_occurrences).values(
                    series_id=series_id,
                    ordinal=2,
                    root_task_id=other.id,
                    occurrence_date=world.clock.now().date(),
                    status="outstanding",
                )
            )
        assert outstanding_count(world, series_id) == 1

    def test_completing_the_outstanding_occurrence_creates_one_successor(
        self, world: World
    ) -> None:
        series_id, root, _ = checklist_series(world)
        tasks_before = len(occurrence_tasks(world.store, series_id, 1))

        world.complete(root)

        rows = occurrences(world.store, series_id)
        assert [(o.ordinal, o.status) for o in rows] == [(1, "completed"), (2, "outstanding")]
        assert len(occurrence_tasks(world.store, series_id, 2)) == tasks_before
        assert series_row(world.store, series_id).emitted == 2

    def test_skipping_the_outstanding_occurrence_creates_one_successor(self, world: World) -> None:
        series_id, root, _ = checklist_series(world)

        returned = world.skip(root)

        rows = occurrences(world.store, series_id)
        assert [(o.ordinal, o.status) for o in rows] == [(1, "skipped"), (2, "outstanding")]
        assert returned[0] == rows[1].root_task_id
        assert sorted(returned) == sorted(r.id for r in occurrence_tasks(world.store, series_id, 2))


class TestPause:
    def test_pause_prevents_successors(self, world: World) -> None:
        series_id, root, _ = checklist_series(world)
        world.pause(series_id)

        world.skip(root)

        assert [o.status for o in occurrences(world.store, series_id)] == ["skipped"]
        assert world.view(series_id).outstanding_task_id is None

    def test_completing_the_outstanding_task_while_paused_records_its_completion(
        self, world: World
    ) -> None:
        series_id, root, item = checklist_series(world)
        world.pause(series_id)

        completed = world.complete(root)

        assert completed.status is TaskStatus.COMPLETED
        assert task_row(world.store, item).status == "completed"
        assert history_kinds(world.store, root)[-1] == "completed"
        assert [o.status for o in occurrences(world.store, series_id)] == ["completed"]
        assert world.view(series_id).status == "paused"

    def test_resume_emits_one_successor_if_none_is_outstanding(self, world: World) -> None:
        series_id, root, _ = checklist_series(world)
        world.pause(series_id)
        world.complete(root)
        world.at("2026-03-07T12:00")

        resumed = world.resume(series_id)

        assert resumed.status == "active"
        rows = occurrences(world.store, series_id)
        assert [(o.ordinal, o.status) for o in rows] == [(1, "completed"), (2, "outstanding")]
        assert resumed.outstanding_task_id == rows[1].root_task_id
        assert len(occurrence_tasks(world.store, series_id, 2)) == 3

    def test_resume_emits_nothing_while_an_occurrence_is_outstanding(self, world: World) -> None:
        series_id, root, _ = checklist_series(world)
        world.pause(series_id)

        resumed = world.resume(series_id)

        assert resumed.outstanding_task_id == root
        assert len(occurrences(world.store, series_id)) == 1


class TestStop:
    def test_stop_is_final(self, world: World) -> None:
        series_id, _, _ = checklist_series(world)
        stopped = world.stop(series_id)

        for change in (world.resume, world.pause, world.stop):
            with nothing_written(world.store), pytest.raises(Conflict, match="final"):
                change(series_id)
        assert stopped.status == "stopped"

    def test_stop_leaves_the_outstanding_task_as_an_ordinary_task_to_finish(
        self, world: World
    ) -> None:
        series_id, root, item = checklist_series(world)
        world.stop(series_id)
        assert world.task(root).status is TaskStatus.OPEN
        for row in occurrence_tasks(world.store, series_id, 1):
            if row.id != root:
                world.complete(row.id, complete_subtree=False)
        assert task_row(world.store, item).status == "completed"

        # An ordinary task with no open items: no complete_subtree needed.
        world.complete(root, complete_subtree=False)

        assert task_row(world.store, root).status == "completed"
        assert len(occurrences(world.store, series_id)) == 1
        assert world.view(series_id).outstanding_task_id is None

    def test_skip_is_refused_once_the_series_is_stopped(self, world: World) -> None:
        series_id, root, _ = checklist_series(world)
        world.stop(series_id)

        with nothing_written(world.store), pytest.raises(Conflict, match="outstanding"):
            world.skip(root)


class TestHistory:
    def test_history_remains_attached_to_stable_series_ids_and_ordinal_occurrence_ids(
        self, world: World
    ) -> None:
        series_id, root, item = checklist_series(world)
        world.complete(root)
        second = world.outstanding(series_id)
        world.skip(second)
        third = world.outstanding(series_id)

        with world.store.transaction(write=False) as conn:
            by_occurrence = {
                n: sorted(
                    conn.execute(
                        select(task_history.c.kind).where(
                            task_history.c.series_id == series_id, task_history.c.occurrence == n
                        )
                    ).scalars()
                )
                for n in (1, 2, 3)
            }
        # Completions of an occurrence's tasks carry its series and ordinal too.
        assert by_occurrence[1] == ["completed"] * 3 + ["series-started"]
        assert by_occurrence[2] == ["created"] * 3 + ["recurrence-skip"] * 3
        assert by_occurrence[3] == ["created"] * 3
        # The first occurrence's history stays on its own task IDs.
        assert history_kinds(world.store, root) == ["created", "series-started", "completed"]
        assert history_kinds(world.store, item) == ["created", "completed"]
        assert history_kinds(world.store, second) == ["created", "recurrence-skip"]
        assert history_kinds(world.store, third) == ["created"]
        assert [r.occurrence for r in occurrence_tasks(world.store, series_id, 3)] == [3] * 3

    def test_every_event_of_an_occurrence_after_the_series_started_carries_its_ids(
        self, world: World
    ) -> None:
        series_id, root, _ = checklist_series(world)
        world.complete(root)
        world.reopen(root)

        events = history(world.store, root)[1:]  # "created" came before the series

        assert [(e.kind, e.series_id, e.occurrence) for e in events] == [
            ("series-started", series_id, 1),
            ("completed", series_id, 1),
            ("reopened", series_id, 1),
        ]

    def test_ancestors_reopened_with_a_historical_item_record_it_under_their_ids(
        self, world: World
    ) -> None:
        series_id, root, item = checklist_series(world)
        world.complete(root)

        world.reopen(item)

        for task_id in (item, root):
            event = history(world.store, task_id)[-1]
            assert (event.kind, event.series_id, event.occurrence) == ("reopened", series_id, 1)


class TestReopeningHistoricalOccurrences:
    def test_reopening_a_historical_occurrence_records_it_as_reopened_and_keeps_its_successor(
        self, world: World
    ) -> None:
        series_id, root, _ = checklist_series(world)
        world.complete(root)
        successor = world.outstanding(series_id)

        world.reopen(root)

        rows = occurrences(world.store, series_id)
        assert [(o.ordinal, o.status) for o in rows] == [(1, "reopened"), (2, "outstanding")]
        assert world.outstanding(series_id) == successor
        assert task_row(world.store, successor).status == "open"
        assert history_kinds(world.store, root)[-1] == "reopened"

    def test_a_reopened_skipped_occurrence_is_recorded_as_reopened_too(self, world: World) -> None:
        series_id, root, _ = checklist_series(world)
        world.skip(root)

        world.reopen(root)

        assert [o.status for o in occurrences(world.store, series_id)] == [
            "reopened",
            "outstanding",
        ]

    def test_completing_a_reopened_occurrence_again_never_creates_another_successor(
        self, world: World
    ) -> None:
        series_id, root, _ = checklist_series(world)
        world.complete(root)
        world.reopen(root)

        world.complete(root)

        assert len(occurrences(world.store, series_id)) == 2
        assert series_row(world.store, series_id).emitted == 2
        assert task_row(world.store, root).status == "completed"

    def test_completing_a_reopened_occurrence_again_does_not_replay_its_reminders(
        self, world: World
    ) -> None:
        _, root, _ = checklist_series(world)
        world.schedule(
            root,
            {"reminders": [{"channel": "push", "local": "2026-03-06T08:00:00", "zone": "UTC"}]},
        )
        world.complete(root)
        world.reopen(root)
        world.complete(root)

        rows = intents(world.store, root)
        assert [(r.schedule_revision, r.status) for r in rows] == [(1, "cancelled")]

    def test_an_explicit_schedule_edit_of_a_reopened_occurrence_makes_new_reminders(
        self, world: World
    ) -> None:
        series_id, root, _ = checklist_series(world)
        reminder = {"channel": "push", "local": "2026-03-06T08:00:00", "zone": "UTC"}
        world.schedule(root, {"reminders": [reminder]})
        world.complete(root)
        world.reopen(root)

        world.schedule(root, {"reminders": [reminder | {"local": "2026-03-06T09:00:00"}]})

        rows = intents(world.store, root)
        assert [(r.schedule_revision, r.status) for r in rows] == [(1, "cancelled"), (2, "pending")]
        assert len(occurrences(world.store, series_id)) == 2


class TestCompletingARecurringChecklist:
    def test_a_recurring_checklist_needs_complete_subtree_even_when_every_item_was_completed(
        self, world: World
    ) -> None:
        series_id, root, _ = checklist_series(world)
        for row in occurrence_tasks(world.store, series_id, 1):
            if row.id != root:
                world.complete(row.id, complete_subtree=False)

        with nothing_written(world.store), pytest.raises(OpenDescendants, match="complete_subtree"):
            world.complete(root, complete_subtree=False)

        world.complete(root, complete_subtree=True)
        assert len(occurrences(world.store, series_id)) == 2

    def test_a_recurring_root_without_items_also_requires_complete_subtree(
        self, world: World
    ) -> None:
        root = world.create("Alone")
        world.start(root.id, {"kind": "daily"})

        with nothing_written(world.store), pytest.raises(OpenDescendants):
            world.complete(root.id, complete_subtree=False)

    def test_a_paused_recurring_root_also_requires_complete_subtree(self, world: World) -> None:
        series_id, root, _ = checklist_series(world)
        world.pause(series_id)

        with nothing_written(world.store), pytest.raises(OpenDescendants):
            world.complete(root, complete_subtree=False)

    def test_the_normal_completion_command_never_silently_completes_a_recurring_checklist(
        self, world: World
    ) -> None:
        series_id, root, _ = checklist_series(world)

        # Completing every item one by one leaves the checklist itself open.
        for row in occurrence_tasks(world.store, series_id, 1):
            if row.id != root:
                world.complete(row.id, complete_subtree=False)

        assert task_row(world.store, root).status == "open"
        assert [o.status for o in occurrences(world.store, series_id)] == ["outstanding"]


class TestSkip:
    def test_skip_makes_live_descendants_complete_with_recurrence_skip_history_then_one_successor(
        self, world: World
    ) -> None:
        series_id, root, item = checklist_series(world)
        done = world.create("Done already", parent=root)
        world.complete(done.id, complete_subtree=False)
        trashed = world.create("Trashed", parent=root)
        world.trash(trashed.id)
        nested = world.create("Nested", parent=item)

        world.skip(root)

        for task_id in (root, item, nested.id):
            row = task_row(world.store, task_id)
            assert row.status == "completed"
            assert history_kinds(world.store, task_id)[-1] == "recurrence-skip"
            event = history(world.store, task_id)[-1]
            assert (event.series_id, event.occurrence) == (series_id, 1)
        # Already completed: keeps its one completion. Trashed: untouched.
        assert history_kinds(world.store, done.id) == ["created", "completed"]
        assert task_row(world.store, trashed.id).status == "open"
        assert outstanding_count(world, series_id) == 1

    def test_skips_do_not_become_ordinary_completion_events(self, world: World) -> None:
        series_id, root, _ = checklist_series(world)

        world.skip(root)

        with world.store.transaction(write=False) as conn:
            kinds = set(
                conn.execute(
                    select(task_history.c.kind)
                    .join(tasks, tasks.c.id == task_history.c.task_id)
                    .where(tasks.c.series_id == series_id, tasks.c.occurrence == 1)
                ).scalars()
            )
        assert "completed" not in kinds
        assert "recurrence-skip" in kinds

    def test_skip_cancels_the_skipped_occurrences_pending_reminders(self, world: World) -> None:
        _, root, item = checklist_series(world)
        world.schedule(
            item,
            {"reminders": [{"channel": "email", "local": "2026-03-05T18:00:00", "zone": "UTC"}]},
        )

        world.skip(root)

        assert [(r.status, r.closed_reason) for r in intents(world.store, item)] == [
            ("cancelled", "recurrence-skip")
        ]

    def test_only_the_outstanding_occurrence_can_be_skipped(self, world: World) -> None:
        _, root, item = checklist_series(world)
        world.complete(root)

        for task_id in (root, item, world.create("Ordinary").id):
            with nothing_written(world.store), pytest.raises(Conflict):
                world.skip(task_id)


class TestDirectSql:
    def test_a_completion_written_by_direct_sql_outside_the_hook_advances_nothing(
        self, world: World
    ) -> None:
        # Unsupported by the seed; this pins down that it does not half-advance a series.
        series_id, root, _ = checklist_series(world)

        with world.store.transaction() as conn:
            conn.execute(update(tasks).where(tasks.c.id == root).values(status="completed"))

        assert [o.status for o in occurrences(world.store, series_id)] == ["outstanding"]
        assert series_row(world.store, series_id).emitted == 1
