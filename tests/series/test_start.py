"""Starting a series (seed 000, "Recurrence"): unfinished root tasks with bounded
nested checklists, the first occurrence bound to the existing task.
"""

from __future__ import annotations

from datetime import date

import pytest

from kalends.errors import Conflict, InvalidInput, TaskTrashed
from kalends.tasks.series_rules import MAX_CHECKLIST_TASKS
from kalends.tasks.successors import ChecklistTooLarge

from .support import (
    World,
    history,
    insert_checklist,
    nothing_written,
    occurrence_tasks,
    occurrences,
    task_row,
)


class TestStartSeriesOnUnfinishedRoots:
    def test_start_series_supports_an_unfinished_root_task_and_its_nested_checklist(
        self, world: World
    ) -> None:
        root = world.create("Weekly review")
        child = world.create("Inbox", parent=root.id)
        grandchild = world.create("Email", parent=child.id)
        done = world.create("Already done", parent=root.id)
        world.complete(done.id)

        view = world.start(root.id, {"kind": "daily"})

        assert (view.status, view.emitted, view.outstanding_ordinal) == ("active", 1, 1)
        for task_id in (root.id, child.id, grandchild.id, done.id):
            row = task_row(world.store, task_id)
            assert (row.series_id, row.occurrence) == (view.id, 1)

    def test_start_series_binds_the_first_occurrence_to_the_existing_task(
        self, world: World
    ) -> None:
        root = world.create("Water plants")
        world.schedule(root.id, {"due": "2026-03-10"})

        view = world.start(root.id, {"kind": "daily"})

        (first,) = occurrences(world.store, view.id)
        assert (first.ordinal, first.root_task_id, first.status) == (1, root.id, "outstanding")
        # The anchor is the task's own day; no new task was made.
        assert first.occurrence_date == date(2026, 3, 10)
        assert view.outstanding_task_id == root.id
        assert [r.id for r in occurrence_tasks(world.store, view.id, 1)] == [root.id]
        started = history(world.store, root.id)[-1]
        assert (started.kind, started.series_id, started.occurrence) == (
            "series-started",
            view.id,
            1,
        )

    def test_start_series_refuses_a_subtask(self, world: World) -> None:
        root = world.create("Root")
        child = world.create("Child", parent=root.id)

        with nothing_written(world.store), pytest.raises(InvalidInput, match="root task"):
            world.start(child.id, {"kind": "daily"})

    def test_start_series_refuses_a_finished_task(self, world: World) -> None:
        root = world.create("Done")
        world.complete(root.id)

        with nothing_written(world.store), pytest.raises(Conflict, match="unfinished"):
            world.start(root.id, {"kind": "daily"})

    def test_start_series_refuses_a_trashed_task(self, world: World) -> None:
        root = world.create("Trashed")
        world.trash(root.id)

        with nothing_written(world.store), pytest.raises(TaskTrashed):
            world.start(root.id, {"kind": "daily"})

    def test_start_series_refuses_a_task_that_already_belongs_to_a_series(
        self, world: World
    ) -> None:
        root = world.create("Root")
        world.start(root.id, {"kind": "daily"})

        with nothing_written(world.store), pytest.raises(Conflict, match="already belongs"):
            world.start(root.id, {"kind": "daily"})

    def test_a_series_with_a_wall_time_needs_its_iana_zone(self, world: World) -> None:
        root = world.create("Root")

        with nothing_written(world.store), pytest.raises(InvalidInput, match="zone"):
            world.start(root.id, {"kind": "daily"}, time_of_day="09:00")


class TestChecklistBoundAtStart:
    def test_a_live_checklist_of_500_tasks_with_deep_nesting_can_start_a_series(
        self, world: World
    ) -> None:
        root = world.create("Big")
        insert_checklist(world, root.id, MAX_CHECKLIST_TASKS - 1, depth=60)

        view = world.start(root.id, {"kind": "daily"})

        assert len(occurrence_tasks(world.store, view.id, 1)) == MAX_CHECKLIST_TASKS

    def test_a_live_checklist_of_501_tasks_is_refused_with_nothing_written(
        self, world: World
    ) -> None:
        root = world.create("Too big")
        insert_checklist(world, root.id, MAX_CHECKLIST_TASKS)

        with nothing_written(world.store), pytest.raises(ChecklistTooLarge) as refused:
            world.start(root.id, {"kind": "daily"})
        assert refused.value.details["tasks"] == MAX_CHECKLIST_TASKS + 1

    def test_trashed_items_do_not_count_towards_the_500_task_bound(self, world: World) -> None:
        root = world.create("Big")
        extra = world.create("Trashed branch", parent=root.id)
        insert_checklist(world, extra.id, 10)
        insert_checklist(world, root.id, MAX_CHECKLIST_TASKS - 1)
        world.trash(extra.id)

        view = world.start(root.id, {"kind": "daily"})

        assert view.status == "active"
