"""One transaction per advance (seed 000, "Recurrence"): the hook runs inside the
completion's transaction, cascades included; whatever fails rolls back every copy,
intent, occurrence link and history event; duplicate hook calls and racing
completions never advance a series twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from uuid import UUID

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Connection

from kalends.bootstrap import Services, build
from kalends.errors import Conflict
from kalends.storage.task_tables import tasks
from kalends.storage.testing import StorageTarget
from kalends.storage.unit_of_work import Store
from kalends.tasks import Task, TaskChange, TaskService

from .support import (
    World,
    nothing_written,
    occurrence_tasks,
    occurrences,
    race,
    series_row,
)

ROUNDS = 3


class HookFailed(Exception):
    """Raised by a hook installed after the series hook."""


def failing_hook(conn: Connection, task_ids: Sequence[UUID], change: TaskChange) -> None:
    raise HookFailed(change.kind)


@dataclass(slots=True)
class Recorder:
    """A hook that records what it was told and what it could see in the transaction."""

    calls: list[tuple[tuple[UUID, ...], TaskChange, dict[UUID, str], bool]] = field(
        default_factory=list
    )

    def __call__(self, conn: Connection, task_ids: Sequence[UUID], change: TaskChange) -> None:
        rows = conn.execute(select(tasks.c.id, tasks.c.status).where(tasks.c.id.in_(task_ids)))
        statuses = {row.id: row.status for row in rows}
        self.calls.append((tuple(task_ids), change, statuses, conn.in_transaction()))


def started(world: World, items: int = 2) -> tuple[UUID, UUID, list[UUID]]:
    """A daily series on a root with ``items`` items; returns (series, root, items)."""
    world.at("2026-03-05T12:00")
    root = world.create("Checklist")
    made = [world.create(f"Item {n}", parent=root.id).id for n in range(items)]
    world.schedule(
        made[0],
        {"reminders": [{"channel": "email", "local": "2026-03-05T18:00:00", "zone": "UTC"}]},
    )
    view = world.start(root.id, {"kind": "daily"})
    return view.id, root.id, made


def second_services(world: World, target: StorageTarget) -> Services:
    """The services on a second engine and Store over the same (migrated) database."""
    return build(Store(target.engine(), world.clock))


class TestInsideTheTransaction:
    def test_core_completion_calls_after_task_update_inside_its_transaction_including_cascades(
        self, world: World
    ) -> None:
        series_id, root, items = started(world)
        recorder = Recorder()
        service = TaskService(world.store, hooks=[world.series.after_task_update, recorder])

        service.complete(world.alice.id, root, world.task(root).revision, complete_subtree=True)

        ((ids, change, statuses, in_transaction),) = recorder.calls
        assert set(ids) == {root, *items}
        assert (change.kind, change.root_id, change.complete_subtree) == ("completed", root, True)
        assert in_transaction
        assert set(statuses.values()) == {"completed"}
        # The series hook ran first, in the same transaction, and its successor is there.
        assert len(occurrences(world.store, series_id)) == 2

    def test_every_copy_intent_occurrence_link_and_history_event_rolls_back_with_the_completion(
        self, world: World
    ) -> None:
        _, root, _ = started(world)
        service = TaskService(world.store, hooks=[world.series.after_task_update, failing_hook])
        revision = world.task(root).revision

        with nothing_written(world.store), pytest.raises(HookFailed):
            service.complete(world.alice.id, root, revision, complete_subtree=True)


class TestNeverTwice:
    def test_duplicate_hook_calls_cannot_advance_a_completed_occurrence_twice(
        self, world: World
    ) -> None:
        series_id, root, items = started(world)
        revision = world.task(root).revision

        with world.store.transaction() as conn:
            done = world.tasks.complete(world.alice.id, root, revision, complete_subtree=True)
            change = TaskChange("completed", root, world.alice.id, world.clock.now(), True)
            world.series.after_task_update(conn, [root, *items], change)
            world.series.after_task_update(conn, [root, *items], change)

        assert done.status.value == "completed"
        rows = occurrences(world.store, series_id)
        assert [(o.ordinal, o.status) for o in rows] == [(1, "completed"), (2, "outstanding")]
        assert series_row(world.store, series_id).emitted == 2
        assert len(occurrence_tasks(world.store, series_id, 2)) == 3

    def test_a_duplicate_hook_call_in_a_later_transaction_or_after_a_skip_advances_nothing(
        self, world: World
    ) -> None:
        series_id, root, _ = started(world)
        world.skip(root)
        change = TaskChange("completed", root, world.alice.id, world.clock.now(), True)

        with world.store.transaction() as conn:
            world.series.after_task_update(conn, [root], change)

        assert [o.status for o in occurrences(world.store, series_id)] == [
            "skipped",
            "outstanding",
        ]

    @pytest.mark.parametrize(
        "second",
        [
            # Both writers complete the occurrence.
            "complete",
            # One completes it, the other skips it.
            "skip",
        ],
    )
    def test_two_racing_settlements_of_one_occurrence_advance_the_series_once(
        self,
        world: World,
        series_target: StorageTarget,
        second: str,
    ) -> None:
        other = second_services(world, series_target)
        world.at("2026-03-05T12:00")
        root = world.create("Contended")
        world.create("Item", parent=root.id)
        series_id = world.start(root.id, {"kind": "daily"}).id

        for n in range(ROUNDS):
            current = world.outstanding(series_id)
            revision = world.task(current).revision

            def complete(services: Services, task_id: UUID, revision: int) -> object:
                return services.tasks.complete(
                    world.alice.id, task_id, revision, complete_subtree=True
                )

            def skip(services: Services, task_id: UUID, revision: int) -> object:
                return services.series.skip(world.alice.id, task_id, revision)

            outcomes = race(
                partial(complete, world.services, current, revision),
                partial(complete if second == "complete" else skip, other, current, revision),
            )

            winners = [o for o in outcomes if isinstance(o, Task | list)]
            # The loser sees a changed revision, or (on PostgreSQL, reading between the
            # winner's statements) an occurrence that is no longer outstanding.
            losers = [o for o in outcomes if isinstance(o, Conflict)]
            assert (len(winners), len(losers)) == (1, 1), outcomes
            rows = occurrences(world.store, series_id)
            assert len(rows) == n + 2
            assert [o.status for o in rows].count("outstanding") == 1
            assert series_row(world.store, series_id).emitted == n + 2
            assert len(occurrence_tasks(world.store, series_id, n + 2)) == 2
