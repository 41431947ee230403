"""set_schedule: planned date, due value, priority and reminders, written with the
task's revision, its schedule revision, its history and its reminder intents.
"""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime
from typing import Any

import pytest
from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError

from kalends.errors import InvalidInput
from kalends.storage.task_tables import reminder_intents, task_reminders
from kalends.tasks import Channel, Reminder, Schedule, Task, TimedValue, parse_schedule

from .conftest import World
from .support import intents, nothing_written, task_row


def schedule(world: World, data: dict[str, Any]) -> Schedule:
    return parse_schedule(data, world.recipient)


def reminder(local: str, zone: str = "Europe/Paris", channel: str = "email", **extra: str) -> Any:
    return {"channel": channel, "local": local, "zone": zone, **extra}


@pytest.fixture
def task(world: World) -> Task:
    return world.tasks.create(world.alice.id, world.home.id, "Scheduled")


class TestScheduleValues:
    def test_planned_date_due_date_and_priority_are_written_with_both_revisions_bumped(
        self, world: World, task: Task
    ) -> None:
        written = world.tasks.set_schedule(
            world.bob.id,
            task.id,
            task.revision,
            schedule(world, {"planned": "2026-03-09", "due": "2026-03-10", "priority": 2}),
        )

        assert written.planned == date(2026, 3, 9)
        assert written.due == date(2026, 3, 10)
        assert written.priority == 2
        assert (written.revision, written.schedule_revision) == (2, 1)
        assert world.tasks.get(world.alice.id, task.id).task == written
        event = world.tasks.history(world.alice.id, task.id)[-1]
        assert event.kind == "schedule-set"
        assert event.payload == {
            "schedule_revision": 1,
            "planned": "2026-03-09",
            "due": "2026-03-10",
            "priority": 2,
            "reminders": [],
        }

    @pytest.mark.parametrize(
        ("local", "zone", "instant"),
        [
            # New York is on daylight time (UTC-4) after 8 March 2026.
            ("2026-03-10T09:00:00", "America/New_York", datetime(2026, 3, 10, 13, tzinfo=UTC)),
            # ... and on standard time (UTC-5) before it.
            ("2026-03-07T09:00:00", "America/New_York", datetime(2026, 3, 7, 14, tzinfo=UTC)),
            # A zone ahead of UTC lands on the previous UTC day.
            ("2026-03-10T07:00:00", "Asia/Tokyo", datetime(2026, 3, 9, 22, tzinfo=UTC)),
            # Just after the spring-forward gap.
            ("2026-03-08T03:00:00", "America/New_York", datetime(2026, 3, 8, 7, tzinfo=UTC)),
        ],
    )
    def test_a_timed_due_keeps_its_wall_time_and_zone_and_resolves_its_instant(
        self, world: World, task: Task, local: str, zone: str, instant: datetime
    ) -> None:
        written = world.tasks.set_schedule(
            world.alice.id, task.id, 1, schedule(world, {"due": {"local": local, "zone": zone}})
        )

        read = world.tasks.get(world.alice.id, task.id).task.due
        assert isinstance(read, TimedValue)
        assert read == written.due
        assert (read.local.isoformat(), read.zone, read.at) == (local, zone, instant)

    def test_a_second_schedule_replaces_the_first_entirely(self, world: World, task: Task) -> None:
        first = world.tasks.set_schedule(
            world.alice.id,
            task.id,
            1,
            schedule(
                world,
                {
                    "planned": "2026-03-09",
                    "due": {"local": "2026-03-10T09:00:00", "zone": "Europe/Paris"},
                    "priority": 1,
                    "reminders": [reminder("2026-03-10T08:00:00")],
                },
            ),
        )

        cleared = world.tasks.set_schedule(world.alice.id, task.id, first.revision, Schedule())

        assert (cleared.planned, cleared.due, cleared.priority, cleared.reminders) == (
            None,
            None,
            None,
            (),
        )
        assert (cleared.revision, cleared.schedule_revision) == (3, 2)
        row = task_row(world.store, task.id)
        assert (row.due_local, row.due_zone, row.due_at, row.due_date) == (None, None, None, None)


class TestReminders:
    def test_reminders_are_stored_in_order_with_their_recipients(
        self, world: World, task: Task
    ) -> None:
        written = world.tasks.set_schedule(
            world.alice.id,
            task.id,
            1,
            schedule(
                world,
                {
                    "reminders": [
                        reminder("2026-03-10T08:00:00", recipient="carol"),
                        reminder("2026-03-10T08:00:00", channel="push"),
                        reminder("2026-03-09T20:00:00", "America/New_York", recipient="bob"),
                    ]
                },
            ),
        )

        got = world.tasks.get(world.alice.id, task.id).task.reminders
        assert got == written.reminders
        assert [(r.channel, r.recipient_id, r.time.at) for r in got] == [
            (Channel.EMAIL, world.carol.id, datetime(2026, 3, 10, 7, tzinfo=UTC)),
            (Channel.PUSH, world.alice.id, datetime(2026, 3, 10, 7, tzinfo=UTC)),
            (Channel.EMAIL, world.bob.id, datetime(2026, 3, 10, 0, tzinfo=UTC)),
        ]

    def test_a_schedule_creates_one_pending_intent_per_reminder(
        self, world: World, task: Task
    ) -> None:
        world.tasks.set_schedule(
            world.alice.id,
            task.id,
            1,
            schedule(
                world,
                {
                    "reminders": [
                        reminder("2026-03-10T08:00:00"),
                        reminder("2026-03-10T08:00:00", channel="push"),
                    ]
                },
            ),
        )

        rows = intents(world.store, task.id)
        assert [(r.schedule_revision, r.channel, r.status, r.attempts) for r in rows] == [
            (1, "email", "pending", 0),
            (1, "push", "pending", 0),
        ]
        assert {r.at for r in rows} == {datetime(2026, 3, 10, 7, tzinfo=UTC)}
        assert all(r.next_attempt_at == r.at for r in rows)
        assert all(r.recipient_id == world.alice.id for r in rows)

    def test_a_new_schedule_cancels_pending_and_leased_intents_and_adds_new_ones(
        self, world: World, task: Task
    ) -> None:
        first = world.tasks.set_schedule(
            world.alice.id,
            task.id,
            1,
            schedule(
                world,
                {
                    "reminders": [
                        reminder("2026-03-10T08:00:00"),
                        reminder("2026-03-10T09:00:00"),
                        reminder("2026-03-10T10:00:00"),
                    ]
                },
            ),
        )
        pending, leased, delivered = intents(world.store, task.id)
        with world.store.transaction() as conn:
            conn.execute(
                update(reminder_intents)
                .where(reminder_intents.c.id == leased.id)
                .values(status="leased", lease_token="tok-1", lease_owner="worker")
            )
            conn.execute(
                update(reminder_intents)
                .where(reminder_intents.c.id == delivered.id)
                .values(status="delivered")
            )

        second = world.tasks.set_schedule(
            world.alice.id,
            task.id,
            first.revision,
            schedule(world, {"reminders": [reminder("2026-03-11T08:00:00", channel="push")]}),
        )

        assert second.schedule_revision == 2
        rows = {r.id: r for r in intents(world.store, task.id)}
        assert (rows[pending.id].status, rows[pending.id].closed_reason) == (
            "cancelled",
            "schedule-changed",
        )
        assert (rows[leased.id].status, rows[leased.id].lease_token) == ("cancelled", None)
        # Delivered is history: a schedule change does not touch it.
        assert rows[delivered.id].status == "delivered"
        fresh = [r for r in rows.values() if r.schedule_revision == 2]
        assert [(r.channel, r.status, r.at) for r in fresh] == [
            ("push", "pending", datetime(2026, 3, 11, 7, tzinfo=UTC))
        ]
        with world.store.transaction(write=False) as conn:
            stored = list(
                conn.execute(
                    select(task_reminders.c.channel, task_reminders.c.local).where(
                        task_reminders.c.task_id == task.id
                    )
                )
            )
        assert [tuple(r) for r in stored] == [("push", "2026-03-11T08:00:00")]

    def test_the_outbox_refuses_a_second_intent_for_the_same_key(
        self, world: World, task: Task
    ) -> None:
        world.tasks.set_schedule(
            world.alice.id,
            task.id,
            1,
            schedule(world, {"reminders": [reminder("2026-03-10T08:00:00")]}),
        )
        (existing,) = intents(world.store, task.id)
        copy = {
            c.name: getattr(existing, c.name)
            for c in reminder_intents.columns
            if c.name not in ("id", "lease_token")
        }

        with pytest.raises(IntegrityError), world.store.transaction() as conn:
            conn.execute(insert(reminder_intents).values(**copy, id=uuid.uuid4()))

    def test_a_completed_task_can_be_rescheduled_without_new_intents(
        self, world: World, task: Task
    ) -> None:
        done = world.tasks.complete(world.alice.id, task.id, task.revision)

        written = world.tasks.set_schedule(
            world.alice.id,
            task.id,
            done.revision,
            schedule(world, {"reminders": [reminder("2026-03-10T08:00:00")]}),
        )

        assert len(written.reminders) == 1
        assert intents(world.store, task.id) == []


class TestSchedulesBuiltInCode:
    """A ``Schedule`` made directly in Python skips ``parse_schedule``; it is checked
    when it is built, so nothing invalid reaches the service."""

    @pytest.mark.parametrize(
        "priority",
        [
            # Below the range.
            0,
            # Above the range.
            4,
        ],
    )
    def test_an_out_of_range_priority_is_invalid_input(
        self, world: World, task: Task, priority: int
    ) -> None:
        with nothing_written(world.store), pytest.raises(InvalidInput) as info:
            world.tasks.set_schedule(
                world.alice.id, task.id, task.revision, Schedule(priority=priority)
            )
        assert info.value.field == "priority"

    def test_duplicate_reminders_are_invalid_input(self, world: World, task: Task) -> None:
        again = Reminder(
            channel=Channel.EMAIL,
            time=TimedValue.parse("2026-03-10T09:00:00", "Europe/Paris", "test"),
            recipient_id=world.alice.id,
        )

        with nothing_written(world.store), pytest.raises(InvalidInput):
            world.tasks.set_schedule(
                world.alice.id, task.id, task.revision, Schedule(reminders=(again, again))
            )

    def test_a_naive_datetime_is_not_a_due_date(self, world: World, task: Task) -> None:
        with nothing_written(world.store), pytest.raises(InvalidInput) as info:
            naive = Schedule(due=datetime(2026, 3, 10, 9, 0))
            world.tasks.set_schedule(world.alice.id, task.id, task.revision, naive)
        assert info.value.field == "due"


class TestTheScheduleChange:
    """``TaskChanges.schedule``: what the HTTP API and the command line (in either mode)
    call; the schedule made of the task as it is, in one transaction."""

    def test_a_schedule_is_made_of_the_task_as_it_is_with_its_recipients(
        self, world: World, task: Task
    ) -> None:
        seen: list[Task | None] = []

        def edit(current: Task | None) -> dict[str, Any]:
            seen.append(current)
            return {
                "priority": 2,
                "reminders": [
                    reminder("2026-03-10T08:00:00"),
                    reminder("2026-03-10T08:00:00", channel="push", recipient="carol"),
                ],
            }

        scheduled = world.services.changes.schedule(world.bob.id, task.ref, 1, edit)

        assert seen == [task]
        assert scheduled.task == world.tasks.get(world.alice.id, task.id).task
        assert scheduled.task.priority == 2
        # Nobody named: the acting actor is reminded.
        assert [r.recipient_id for r in scheduled.task.reminders] == [world.bob.id, world.carol.id]
        assert scheduled.warnings == ()

    def test_without_the_current_task_the_edit_is_given_none(
        self, world: World, task: Task
    ) -> None:
        seen: list[Task | None] = []

        def edit(current: Task | None) -> dict[str, Any]:
            seen.append(current)
            return {"priority": 1}

        scheduled = world.services.changes.schedule("alice", task.ref, 1, edit, from_current=False)
        assert seen == [None] and scheduled.task.priority == 1

    def test_a_reminder_already_past_is_written_with_a_warning(
        self, world: World, task: Task
    ) -> None:
        # The fake clock stands on 1 March 2025.
        past = {"reminders": [reminder("2025-02-01T08:00:00"), reminder("2026-03-10T08:00:00")]}
        scheduled = world.services.changes.schedule(
            world.alice.id, task.id, 1, lambda _current: past
        )
        assert len(scheduled.task.reminders) == 2
        assert [(w["code"], w["field"]) for w in scheduled.warnings] == [
            ("reminder-in-the-past", "reminders[0]")
        ]

    @pytest.mark.parametrize("who", ["ghost", str(uuid.UUID(int=42))])
    def test_an_unknown_recipient_is_invalid_input_and_writes_nothing(
        self, world: World, task: Task, who: str
    ) -> None:
        data = {"reminders": [reminder("2026-03-10T08:00:00", recipient=who)]}
        with nothing_written(world.store), pytest.raises(InvalidInput) as info:
            world.services.changes.schedule(world.alice.id, task.id, 1, lambda _current: data)
        assert info.value.field == "reminders[0].recipient"
        assert info.value.message == f"reminders[0].recipient: no actor {who!r}"
