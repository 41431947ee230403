"""Moving and editing occurrences (seed 000, "Recurrence"): no reparenting of a live
occurrence, cross-list moves that carry the series along, and historical
occurrences that may be reopened and rescheduled without advancing anything.
"""

from __future__ import annotations

from datetime import date
from uuid import UUID

import pytest
from sqlalchemy import select

from kalends.errors import Conflict, Forbidden
from kalends.storage.task_tables import sections, tags, task_tags
from kalends.tasks import TaskStatus

from .support import (
    World,
    history_kinds,
    intents,
    nothing_written,
    occurrence_tasks,
    occurrences,
    series_row,
    snapshot,
    task_row,
)


def series_with_item(world: World) -> tuple[UUID, UUID, UUID]:
    """A daily series on a root in "Kitchen" tagged "chores", with one item tagged "soap"
    in "Garden"; returns (series, root, item)."""
    world.at("2026-03-05T12:00")
    root = world.create("Clean", section="Kitchen", tags=["chores"])
    item = world.create("Wipe", parent=root.id, section="Garden", tags=["soap"])
    view = world.start(root.id, {"kind": "daily"})
    return view.id, root.id, item.id


def list_of_metadata(world: World, task_id: UUID) -> tuple[set[UUID], UUID | None]:
    """The lists of a task's tags, and of its section."""
    with world.store.transaction(write=False) as conn:
        tag_lists = set(
            conn.execute(
                select(tags.c.list_id)
                .join(task_tags, task_tags.c.tag_id == tags.c.id)
                .where(task_tags.c.task_id == task_id)
            ).scalars()
        )
        section_list = conn.execute(
            select(sections.c.list_id).where(
                sections.c.id == task_row(world.store, task_id).section_id
            )
        ).scalar()
    return tag_lists, section_list


class TestReparenting:
    @pytest.mark.parametrize(
        "paused",
        [
            # An active series.
            False,
            # A paused one.
            True,
        ],
    )
    def test_reparenting_an_active_or_paused_occurrence_under_another_task_is_rejected(
        self, world: World, paused: bool
    ) -> None:
        series_id, root, _ = series_with_item(world)
        if paused:
            world.pause(series_id)
        holder = world.create("Holder")
        revision = world.task(root).revision

        with nothing_written(world.store), pytest.raises(Conflict, match="stop the series first"):
            world.tasks.reparent(world.alice.id, root, revision, holder.id)

    def test_a_stopped_series_occurrence_can_be_reparented(self, world: World) -> None:
        series_id, root, _ = series_with_item(world)
        world.stop(series_id)
        holder = world.create("Holder")

        moved = world.tasks.reparent(world.alice.id, root, world.task(root).revision, holder.id)

        assert moved.parent_id == holder.id

    def test_a_historical_occurrence_can_be_reparented(self, world: World) -> None:
        series_id, root, _ = series_with_item(world)
        world.complete(root)
        holder = world.create("Archive")

        moved = world.tasks.reparent(world.alice.id, root, world.task(root).revision, holder.id)

        assert moved.parent_id == holder.id
        assert len(occurrences(world.store, series_id)) == 2


class TestCrossListMoves:
    def test_future_occurrences_are_made_in_the_moved_list_with_its_current_tags_and_sections(
        self, world: World
    ) -> None:
        series_id, root, _ = series_with_item(world)
        world.tasks.move_to_list(world.alice.id, root, world.task(root).revision, world.work.id)

        world.complete(root)

        assert world.view(series_id).list_id == world.work.id
        new = {r.title: r for r in occurrence_tasks(world.store, series_id, 2)}
        assert {r.list_id for r in new.values()} == {world.work.id}
        root_detail = world.tasks.get(world.alice.id, new["Clean"].id)
        assert (root_detail.section, root_detail.task.tags) == ("Kitchen", ("chores",))
        # "Garden" is not a section of Work: the moved item lost it, and so does its copy.
        item_detail = world.tasks.get(world.alice.id, new["Wipe"].id)
        assert (item_detail.section, item_detail.task.tags) == (None, ("soap",))
        for row in new.values():
            tag_lists, section_list = list_of_metadata(world, row.id)
            assert tag_lists <= {world.work.id}
            assert section_list in (None, world.work.id)

    def test_a_cross_list_move_needs_editor_rights_on_the_target_list(self, world: World) -> None:
        _, root, _ = series_with_item(world)
        revision = world.task(root).revision

        with nothing_written(world.store), pytest.raises(Forbidden):
            world.tasks.move_to_list(world.bob.id, root, revision, world.work.id)

    def test_moving_a_historical_occurrence_leaves_the_series_and_its_metadata_consistent(
        self, world: World
    ) -> None:
        series_id, root, _ = series_with_item(world)
        world.complete(root)
        outstanding = world.outstanding(series_id)
        world.tasks.move_to_list(world.alice.id, root, world.task(root).revision, world.work.id)

        world.complete(outstanding)

        # Every task's tags and section belong to the task's own list.
        for row in occurrence_tasks(world.store, series_id, 3):
            tag_lists, section_list = list_of_metadata(world, row.id)
            assert tag_lists <= {row.list_id}
            assert section_list in (None, row.list_id)
        # And the series stays where its outstanding occurrence was.
        assert world.view(series_id).list_id == world.home.id


class TestHistoricalMovesAndResume:
    def test_resuming_after_the_last_settled_occurrence_moved_lists_keeps_metadata_consistent(
        self, world: World
    ) -> None:
        series_id, root, _ = series_with_item(world)
        world.pause(series_id)
        world.complete(root)
        world.tasks.move_to_list(world.alice.id, root, world.task(root).revision, world.work.id)

        world.resume(series_id)

        for row in occurrence_tasks(world.store, series_id, 2):
            tag_lists, section_list = list_of_metadata(world, row.id)
            assert tag_lists <= {row.list_id}
            assert section_list in (None, row.list_id)


class TestHistoricalOccurrences:
    def test_reopening_a_historical_item_reopens_its_ancestors_without_generating_or_replaying(
        self, world: World
    ) -> None:
        series_id, root, item = series_with_item(world)
        nested = world.create("Corners", parent=item)
        world.schedule(
            nested.id,
            {"reminders": [{"channel": "email", "local": "2026-03-05T18:00:00", "zone": "UTC"}]},
        )
        world.complete(root)
        emitted = series_row(world.store, series_id).emitted

        world.reopen(nested.id)

        for task_id in (nested.id, item, root):
            assert world.task(task_id).status is TaskStatus.OPEN
            assert history_kinds(world.store, task_id)[-1] == "reopened"
        assert series_row(world.store, series_id).emitted == emitted
        assert len(occurrences(world.store, series_id)) == 2
        assert [r.status for r in intents(world.store, nested.id)] == ["cancelled"]

    def test_reopening_a_historical_descendant_records_its_occurrence_as_reopened(
        self, world: World
    ) -> None:
        series_id, root, item = series_with_item(world)
        world.complete(root)

        world.reopen(item)

        assert [o.status for o in occurrences(world.store, series_id)] == [
            "reopened",
            "outstanding",
        ]

    def test_explicit_schedule_edits_can_reschedule_historical_tasks(self, world: World) -> None:
        series_id, root, item = series_with_item(world)
        world.complete(root)

        edited = world.schedule(item, {"due": "2026-04-01", "priority": 2})

        assert (edited.due, edited.priority, edited.status) == (
            date(2026, 4, 1),
            2,
            TaskStatus.COMPLETED,
        )
        assert history_kinds(world.store, item)[-1] == "schedule-set"
        assert len(occurrences(world.store, series_id)) == 2

    def test_completing_the_historical_checklist_again_never_advances_the_series_a_second_time(
        self, world: World
    ) -> None:
        series_id, root, item = series_with_item(world)
        world.complete(root)
        successor = world.outstanding(series_id)
        world.reopen(item)

        world.complete(root)
        world.reopen(root)
        world.complete(root, complete_subtree=True)

        rows = occurrences(world.store, series_id)
        assert [o.ordinal for o in rows] == [1, 2]
        assert world.outstanding(series_id) == successor
        assert series_row(world.store, series_id).emitted == 2


class TestTrashedOccurrences:
    def test_resuming_after_the_last_occurrence_was_trashed_refuses_cleanly_or_emits_a_live_one(
        self, world: World
    ) -> None:
        series_id, root, _ = series_with_item(world)
        world.pause(series_id)
        world.complete(root)
        world.trash(root)
        before = snapshot(world.store)

        try:
            world.resume(series_id)
        except Conflict:
            assert snapshot(world.store) == before
            return
        successor = world.outstanding(series_id)
        assert not world.task(successor).trashed
        assert world.task(successor).status is TaskStatus.OPEN
