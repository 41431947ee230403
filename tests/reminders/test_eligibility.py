"""``reminder_eligible`` (seed 000, "Reminder outbox"): workers call it immediately before
delivery; it checks the current schedule revision, an open task that is not in the trash
(nor under a trashed ancestor), an active list and the recipient's current access.

Every test runs on SQLite and PostgreSQL (the ``store`` fixture) on the fake clock.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any
from uuid import UUID

import pytest

from kalends.bootstrap import build
from kalends.clock import FakeClock
from kalends.errors import NotFound
from kalends.reminders.eligibility import Verdict, eligibility, reminder_eligible
from kalends.reminders.outbox import Outbox
from kalends.storage.testing import nothing_written
from kalends.storage.unit_of_work import Store
from kalends.tasks import Role, Task, parse_schedule

from .outbox_support import (
    World,
    bump_schedule_revision,
    insert_intents,
    intent_ids,
    make_world,
    minutes,
    reminded_task,
    reminder,
    schedule_reminders,
)


@pytest.fixture
def world(store: Store) -> World:
    return make_world(build(store))


def reason_of(store: Store, intent_id: UUID) -> str | None:
    with store.transaction(write=False) as conn:
        return reminder_eligible(conn, intent_id)


def verdicts_of(store: Store, ids: Sequence[UUID]) -> dict[UUID, Verdict]:
    with store.transaction(write=False) as conn:
        return eligibility(conn, ids)


def only_intent(world: World, task: Task) -> UUID:
    (intent_id,) = intent_ids(world.store, task.id)
    return intent_id


def current(world: World, task: Task) -> Task:
    return world.tasks.get(world.alice.id, task.id).task


class TestEligible:
    def test_an_open_task_in_an_active_list_for_a_member_is_eligible_for_every_role(
        self, world: World
    ) -> None:
        task = reminded_task(
            world,
            reminder(minutes(1)),  # alice, the owner
            reminder(minutes(2), recipient="bob"),  # an editor
            reminder(minutes(3), recipient="carol"),  # a viewer
        )
        ids = intent_ids(world.store, task.id)

        with nothing_written(world.store):
            assert [reason_of(world.store, i) for i in ids] == [None, None, None]
            verdicts = verdicts_of(world.store, ids)

        assert all(v.eligible for v in verdicts.values())
        assert [verdicts[i].recipient for i in ids] == ["alice", "bob", "carol"]

    def test_the_verdict_carries_what_a_message_about_the_reminder_needs(
        self, world: World
    ) -> None:
        made = {}
        for title, due in [
            ("Timed", {"local": "2025-03-02T09:30:00", "zone": "Europe/Paris"}),
            ("Dated", "2025-03-04"),
            ("Undated", None),
        ]:
            task = world.tasks.create(world.alice.id, world.home.id, title)
            data: dict[str, Any] = {"reminders": [reminder(minutes(1), recipient="bob")]}
            if due is not None:
                data["due"] = due
            made[title] = world.tasks.set_schedule(
                world.alice.id, task.id, task.revision, parse_schedule(data, world.recipient)
            )
        ids = {title: only_intent(world, task) for title, task in made.items()}

        verdicts = verdicts_of(world.store, list(ids.values()))

        timed = verdicts[ids["Timed"]]
        assert timed == Verdict(
            intent_id=ids["Timed"],
            reason=None,
            task_id=made["Timed"].id,
            task_ref=made["Timed"].ref,
            task_title="Timed",
            due_text="2025-03-02 09:30 Europe/Paris",
            list_name="Home",
            recipient_id=world.bob.id,
            recipient="bob",
            recipient_name="Bob",
            recipient_email="bob@example.com",
            zone="UTC",  # the reminder's own zone, in which its recipient reads its time
        )
        assert verdicts[ids["Dated"]].due_text == "2025-03-04"
        assert verdicts[ids["Undated"]].due_text is None


class TestNotEligible:
    def test_a_completed_task_is_not_eligible(self, world: World) -> None:
        task = reminded_task(world, reminder(minutes(1)))
        intent_id = only_intent(world, task)

        world.tasks.complete(world.alice.id, task.id, current(world, task).revision)

        assert reason_of(world.store, intent_id) == "task-completed"

    def test_a_trashed_task_is_not_eligible(self, world: World) -> None:
        task = reminded_task(world, reminder(minutes(1)))
        intent_id = only_intent(world, task)

        world.tasks.trash(world.alice.id, task.id, current(world, task).revision)

        assert reason_of(world.store, intent_id) == "task-trashed"

    def test_a_task_under_a_trashed_parent_or_grandparent_is_not_eligible(
        self, world: World
    ) -> None:
        grandparent = world.tasks.create(world.alice.id, world.home.id, "Move house")
        parent = world.tasks.create(world.alice.id, world.home.id, "Pack", parent=grandparent.id)
        child = reminded_task(world, reminder(minutes(1)), title="Buy boxes", parent=parent)
        bystander = reminded_task(world, reminder(minutes(2)), title="Elsewhere")
        intent_id, other = only_intent(world, child), only_intent(world, bystander)
        alice = world.alice.id

        for trashed in (parent, grandparent):
            world.tasks.trash(alice, trashed.id, current(world, trashed).revision)
            # Judged together or one by one, the verdicts are the same.
            assert verdicts_of(world.store, [intent_id, other]) == {
                **verdicts_of(world.store, [intent_id]),
                **verdicts_of(world.store, [other]),
            }
            assert reason_of(world.store, intent_id) == "task-trashed", trashed.title
            assert reason_of(world.store, other) is None
            assert current(world, child).trashed is False  # only its ancestor is

            world.tasks.restore(alice, trashed.id, current(world, trashed).revision)
            assert reason_of(world.store, intent_id) is None  # it judges the present

    def test_a_task_in_an_archived_list_is_not_eligible(self, world: World) -> None:
        task = reminded_task(world, reminder(minutes(1)))
        intent_id = only_intent(world, task)
        directory = world.services.directory

        directory.archive(world.alice.id, world.home.id)
        assert reason_of(world.store, intent_id) == "list-archived"

        directory.archive(world.alice.id, world.home.id, archived=False)
        assert reason_of(world.store, intent_id) is None

    def test_a_recipient_whose_membership_was_revoked_is_not_eligible(self, world: World) -> None:
        task = reminded_task(world, reminder(minutes(1)), reminder(minutes(2), recipient="carol"))
        for_alice, for_carol = intent_ids(world.store, task.id)
        directory = world.services.directory
        assert reason_of(world.store, for_carol) is None

        directory.share(world.alice.id, world.home.id, world.carol.id, None)
        assert reason_of(world.store, for_carol) == "recipient-not-a-member"
        assert reason_of(world.store, for_alice) is None

        directory.share(world.alice.id, world.home.id, world.carol.id, Role.VIEWER)
        assert reason_of(world.store, for_carol) is None

    def test_a_recipient_who_was_never_a_member_is_not_eligible(self, world: World) -> None:
        task = reminded_task(world, reminder(minutes(1)))
        # set_schedule refuses a recipient outside the list, so write the row directly.
        (for_dave,) = insert_intents(
            world.store, task.id, task.schedule_revision, [minutes(2)], world.dave.id
        )

        assert reason_of(world.store, for_dave) == "recipient-not-a-member"

    def test_a_task_moved_to_a_list_the_recipient_cannot_read_is_not_eligible(
        self, world: World
    ) -> None:
        task = reminded_task(world, reminder(minutes(1)), reminder(minutes(2), recipient="carol"))
        for_alice, for_carol = intent_ids(world.store, task.id)

        world.tasks.move_to_list(
            world.alice.id, task.id, current(world, task).revision, world.work.id
        )

        assert reason_of(world.store, for_carol) == "recipient-not-a-member"
        assert reason_of(world.store, for_alice) is None

    def test_an_intent_of_an_older_schedule_revision_is_stale(self, world: World) -> None:
        task = reminded_task(world, reminder(minutes(1)))
        old = only_intent(world, task)

        schedule_reminders(world, current(world, task), reminder(minutes(1)))
        new = next(i for i in intent_ids(world.store, task.id) if i != old)
        assert reason_of(world.store, old) == "stale-schedule"
        assert reason_of(world.store, new) is None

        bump_schedule_revision(world.store, task.id)
        assert reason_of(world.store, new) == "stale-schedule"


class TestLookups:
    def test_an_unknown_intent_is_not_found_and_left_out_of_a_batch(self, world: World) -> None:
        task = reminded_task(world, reminder(minutes(1)))
        known = only_intent(world, task)
        unknown = uuid.uuid4()

        with pytest.raises(NotFound):
            reason_of(world.store, unknown)
        assert set(verdicts_of(world.store, [unknown, known])) == {known}
        assert verdicts_of(world.store, []) == {}

    def test_a_batch_judges_each_intent_on_its_own(self, world: World) -> None:
        alice = world.alice.id
        fine = reminded_task(world, reminder(minutes(1)), title="Fine")
        done = reminded_task(world, reminder(minutes(1)), title="Done")
        parent = world.tasks.create(alice, world.home.id, "Parent")
        hidden = reminded_task(world, reminder(minutes(1)), title="Hidden", parent=parent)
        archived = reminded_task(world, reminder(minutes(1)), task_list=world.work)
        revoked = reminded_task(world, reminder(minutes(1), recipient="carol"), title="Carol")
        moved_on = reminded_task(world, reminder(minutes(1)), task_list=world.private)
        ids = {
            "fine": only_intent(world, fine),
            "done": only_intent(world, done),
            "hidden": only_intent(world, hidden),
            "archived": only_intent(world, archived),
            "revoked": only_intent(world, revoked),
            "stale": only_intent(world, moved_on),
        }
        (ids["never-member"],) = insert_intents(
            world.store, fine.id, 1, [minutes(5)], world.dave.id
        )
        world.tasks.complete(alice, done.id, current(world, done).revision)
        world.tasks.trash(alice, parent.id, current(world, parent).revision)
        world.services.directory.archive(alice, world.work.id)
        world.services.directory.share(alice, world.home.id, world.carol.id, None)
        schedule_reminders(world, current(world, moved_on), reminder(minutes(9)))

        with nothing_written(world.store):
            verdicts = verdicts_of(world.store, list(ids.values()))

        assert {name: verdicts[i].reason for name, i in ids.items()} == {
            "fine": None,
            "done": "task-completed",
            "hidden": "task-trashed",
            "archived": "list-archived",
            "revoked": "recipient-not-a-member",
            "stale": "stale-schedule",
            "never-member": "recipient-not-a-member",
        }

    def test_outbox_verdicts_judge_the_claims_as_things_stand_now(
        self, world: World, fake_clock: FakeClock
    ) -> None:
        reminded_task(world, reminder(minutes(1)), task_list=world.work)
        reminded_task(world, reminder(minutes(1)), task_list=world.private)
        fake_clock.advance(minutes(1) - fake_clock.now())
        outbox = Outbox(world.store)
        claims = outbox.claim("worker-1")
        assert len(claims) == 2
        assert all(v.eligible for v in outbox.verdicts(claims).values())

        world.services.directory.archive(world.alice.id, world.work.id)

        verdicts = outbox.verdicts(claims)
        assert sorted((v.list_name, v.reason) for v in verdicts.values()) == [
            ("Private", None),
            ("Work", "list-archived"),
        ]
        assert set(verdicts) == {c.id for c in claims}
        assert outbox.verdicts([]) == {}
