"""Reminder intents as the task store writes them: one enum of states, and the two writes
(:func:`replace_intents`, :func:`cancel_intents`) that own the ``reminder_intents`` table
on the task store's behalf."""

from __future__ import annotations

import re
from datetime import timedelta
from uuid import UUID

import pytest
from sqlalchemy import CheckConstraint

import kalends.reminders.intents as intents_module
from kalends.bootstrap import build
from kalends.reminders import (
    LIVE_STATES,
    STATUSES,
    Channel,
    IntentPlan,
    IntentState,
    cancel_intents,
    replace_intents,
)
from kalends.reminders.eligibility import LIST_ACTIVE, TASK_OPEN
from kalends.reminders.outbox import STATUSES as OUTBOX_STATUSES
from kalends.reminders.outbox import Outbox
from kalends.storage.task_tables import CLAIMABLE_INTENTS, reminder_intents
from kalends.storage.unit_of_work import Store
from kalends.tasks import Channel as TaskChannel
from kalends.tasks import ListStatus, Task, TaskStatus

from .outbox_support import (
    World,
    intent_rows,
    make_world,
    minutes,
    reminded_task,
    reminder,
)


@pytest.fixture
def world(store: Store) -> World:
    return make_world(build(store))


def stored_states() -> list[str]:
    """The states the table's check constraint allows, in its order."""
    (check,) = [
        c
        for c in reminder_intents.constraints
        if isinstance(c, CheckConstraint) and "status" in str(c.sqltext)
    ]
    return re.findall(r"'([a-z]+)'", str(check.sqltext))


class TestOneEnumOfStates:
    def test_the_enum_names_exactly_the_states_the_table_allows_in_its_order(self) -> None:
        assert [state.value for state in IntentState] == stored_states()
        assert stored_states() == list(STATUSES)

    def test_the_live_states_are_those_the_claimable_index_covers(self) -> None:
        assert re.findall(r"'([a-z]+)'", CLAIMABLE_INTENTS) == list(LIVE_STATES)

    def test_the_outbox_names_the_same_statuses(self) -> None:
        assert OUTBOX_STATUSES is STATUSES

    def test_a_state_is_its_stored_string(self) -> None:
        assert IntentState("dead") is IntentState.DEAD
        assert f"{IntentState.LEASED}" == "leased"


class TestWhatRemindersKnowOfTheTaskStore:
    def test_the_stored_strings_the_verdict_reads_are_the_task_stores(self) -> None:
        assert TaskStatus.OPEN.value == TASK_OPEN
        assert ListStatus.ACTIVE.value == LIST_ACTIVE

    def test_the_task_store_names_the_reminders_channel(self) -> None:
        assert TaskChannel is Channel


def plans_for(task: Task, world: World, *ats: int) -> list[IntentPlan]:
    return [
        IntentPlan(
            task_id=task.id,
            schedule_revision=task.schedule_revision,
            channel=Channel.PUSH,
            at=minutes(at),
            recipient_id=world.bob.id,
        )
        for at in ats
    ]


class TestReplaceIntents:
    def test_it_cancels_the_live_intents_and_makes_the_plans_pending_from_their_instant(
        self, world: World
    ) -> None:
        task = reminded_task(world, reminder(minutes(5)))
        (old,) = intent_rows(world.store, task.id)
        now = world.store.clock.now()
        with world.store.transaction() as conn:
            replace_intents(conn, [task.id], plans_for(task, world, 7, 9), now, "test-reason")
        rows = intent_rows(world.store, task.id)
        assert [(r.id, r.status, r.closed_reason) for r in rows[:1]] == [
            (old.id, "cancelled", "test-reason")
        ]
        assert [(r.status, r.channel, r.at, r.next_attempt_at, r.attempts) for r in rows[1:]] == [
            ("pending", "push", minutes(7), minutes(7), 0),
            ("pending", "push", minutes(9), minutes(9), 0),
        ]
        assert {r.recipient_id for r in rows[1:]} == {world.bob.id}

    def test_with_no_task_ids_it_only_creates(self, world: World) -> None:
        task = reminded_task(world, reminder(minutes(5)))
        now = world.store.clock.now()
        with world.store.transaction() as conn:
            replace_intents(conn, (), plans_for(task, world, 6), now)
        assert [r.status for r in intent_rows(world.store, task.id)] == ["pending", "pending"]

    def test_the_created_intents_are_claimable_at_their_instant(self, world: World) -> None:
        task = reminded_task(world, reminder(minutes(5)))
        now = world.store.clock.now()
        with world.store.transaction() as conn:
            replace_intents(conn, [task.id], plans_for(task, world, 0), now)
        (claim,) = Outbox(world.store).claim("worker-1")
        assert (claim.channel, claim.recipient_id) == ("push", world.bob.id)


class TestCancelIntents:
    def test_it_cancels_pending_and_leased_intents_and_leaves_settled_ones(
        self, world: World
    ) -> None:
        task = reminded_task(
            world, reminder(minutes(-2)), reminder(minutes(-1)), reminder(minutes(5))
        )
        outbox = Outbox(world.store)
        first, second = outbox.claim("worker-1", limit=2)
        outbox.ack(first.token)
        now = world.store.clock.now() + timedelta(seconds=1)
        with world.store.transaction() as conn:
            cancel_intents(conn, [task.id], now, "task-completed")
        rows = intent_rows(world.store, task.id)
        assert [(r.status, r.closed_reason, r.lease_token) for r in rows] == [
            ("delivered", None, first.token),
            ("cancelled", "task-completed", None),
            ("cancelled", "task-completed", None),
        ]
        assert rows[1].id == second.id

    def test_it_cancels_in_chunks_every_task_it_is_given(
        self, world: World, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # Three tasks, two per statement: the third is cancelled by a second statement.
        monkeypatch.setattr(intents_module, "CANCEL_CHUNK", 2)
        made = [reminded_task(world, reminder(minutes(5)), title=f"Task {i}") for i in range(3)]
        now = world.store.clock.now()
        with world.store.transaction() as conn:
            cancel_intents(conn, [t.id for t in made], now, "task-trashed")
        assert {r.status for t in made for r in intent_rows(world.store, t.id)} == {"cancelled"}

    def test_no_tasks_cancel_nothing(self, world: World) -> None:
        task = reminded_task(world, reminder(minutes(5)))
        with world.store.transaction() as conn:
            cancel_intents(conn, [], world.store.clock.now(), "task-trashed")
        assert [r.status for r in intent_rows(world.store, task.id)] == ["pending"]


def test_intent_ids_are_fresh_and_unique(world: World) -> None:
    task = reminded_task(world, reminder(minutes(5)))
    now = world.store.clock.now()
    with world.store.transaction() as conn:
        replace_intents(conn, [task.id], plans_for(task, world, 6, 7, 8), now)
    ids = [r.id for r in intent_rows(world.store, task.id)]
    assert len(set(ids)) == 4
    assert all(isinstance(i, UUID) for i in ids)
