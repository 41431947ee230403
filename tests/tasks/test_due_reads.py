"""TaskService.due: the open tasks an actor sees that are due by a day or an instant, over
every active list they are a member of, in one read (what the Now page shows)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pytest

from kalends.errors import NotFound
from kalends.tasks import Task, parse_schedule

from .conftest import World

THROUGH = date(2026, 3, 6)
BEFORE = datetime(2026, 3, 7, 5, 0, tzinfo=UTC)


def _due(world: World, list_id: Any, title: str, due: Any) -> Task:
    made = world.tasks.create(world.alice.id, list_id, title)
    return world.tasks.set_schedule(
        world.alice.id, made.id, made.revision, parse_schedule({"due": due}, world.recipient)
    )


def _titles(found: list[Any]) -> list[str]:
    return sorted(t.title for t in found)


class TestBounds:
    def test_dates_through_the_day_and_instants_before_the_bound_are_due(
        self, world: World
    ) -> None:
        _due(world, world.home.id, "Rent", "2026-03-01")
        _due(world, world.home.id, "Bins", "2026-03-06")
        _due(world, world.home.id, "Later date", "2026-03-07")
        timed = _due(
            world,
            world.home.id,
            "Call",
            {"local": "2026-03-06T23:30:00", "zone": "America/New_York"},
        )
        _due(
            world,
            world.home.id,
            "Later time",
            {"local": "2026-03-07T05:00:00", "zone": "UTC"},
        )
        world.tasks.create(world.alice.id, world.home.id, "Undated")

        found = world.tasks.due(world.alice.id, through=THROUGH, before=BEFORE)

        assert _titles(found) == ["Bins", "Call", "Rent"]
        call = next(t for t in found if t.title == "Call")
        assert (call.id, call.list_id, call.list_name) == (timed.id, world.home.id, "Home")
        assert call.due_at == datetime(2026, 3, 7, 4, 30, tzinfo=UTC)
        assert call.due_local == datetime(2026, 3, 6, 23, 30)
        assert call.zone == "America/New_York"
        rent = next(t for t in found if t.title == "Rent")
        assert (rent.due_date, rent.due_at, rent.due_local) == (date(2026, 3, 1), None, None)

    def test_done_trashed_and_archived_tasks_are_not_due(self, world: World) -> None:
        done = _due(world, world.home.id, "Done", "2026-03-01")
        world.tasks.complete(world.alice.id, done.id, done.revision)
        trashed = _due(world, world.home.id, "Trashed", "2026-03-01")
        world.tasks.trash(world.alice.id, trashed.id, trashed.revision)
        _due(world, world.work.id, "In an archived list", "2026-03-01")
        world.services.directory.archive(world.alice.id, world.work.id)
        _due(world, world.home.id, "Open", "2026-03-01")

        found = world.tasks.due(world.alice.id, through=THROUGH, before=BEFORE)

        assert _titles(found) == ["Open"]


class TestWhoSeesWhat:
    def test_each_actor_sees_the_lists_they_are_a_member_of_and_no_other(
        self, world: World
    ) -> None:
        _due(world, world.home.id, "Home task", "2026-03-01")
        _due(world, world.work.id, "Work task", "2026-03-01")
        _due(world, world.private.id, "Private task", "2026-03-01")

        def seen(actor: Any) -> list[str]:
            return _titles(world.tasks.due(actor, through=THROUGH, before=BEFORE))

        assert seen(world.alice.id) == ["Home task", "Private task", "Work task"]
        assert seen(world.bob.id) == ["Home task", "Work task"]
        assert seen(world.carol.id) == ["Home task"]
        assert seen(world.dave.id) == []

    def test_an_unknown_actor_is_refused(self, world: World) -> None:
        with pytest.raises(NotFound):
            world.tasks.due("nobody", through=THROUGH, before=BEFORE)
