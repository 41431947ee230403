"""The reminder outbox (seed 000, "Reminder outbox"): claims under 60-second leases,
acknowledgements and retries that need the current token, backoff and the five-attempt
limit, cancellation by schedule changes, stale and expired intents, releases, manual
requeues, who sees which intent, bad input, and concurrent claimers.

Every test runs on SQLite and PostgreSQL (the ``store`` fixture) on the fake clock, which
starts at 2025-03-01T12:00Z; ``minutes(n)`` is n minutes after that.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import func, insert, select, update
from sqlalchemy.exc import IntegrityError

from kalends.bootstrap import build
from kalends.clock import FakeClock
from kalends.errors import Conflict, Forbidden, InvalidInput, LeaseLost, NotFound
from kalends.reminders.outbox import (
    EXPIRY,
    LEASE,
    MAX_ATTEMPTS,
    MAX_CLAIM_BATCH,
    RETRY_CAP,
    Claim,
    Outbox,
    backoff,
)
from kalends.storage.task_tables import reminder_intents, tasks
from kalends.storage.testing import StorageTarget, nothing_written
from kalends.storage.unit_of_work import Store
from kalends.tasks import Task, TaskService

from .outbox_support import (
    World,
    bump_schedule_revision,
    insert_intents,
    intent_ids,
    intent_row,
    intent_rows,
    make_world,
    minutes,
    reminded_task,
    reminder,
    schedule_reminders,
)

ri = reminder_intents
JOIN_SECONDS = 30


@pytest.fixture
def world(store: Store) -> World:
    return make_world(build(store))


@pytest.fixture
def outbox(store: Store) -> Outbox:
    return Outbox(store)


def move_to(clock: FakeClock, instant: datetime) -> None:
    clock.advance(instant - clock.now())


def claim_one(outbox: Outbox, owner: str = "worker-1") -> Claim:
    claims = outbox.claim(owner)
    assert len(claims) == 1, claims
    return claims[0]


def settle(outbox: Outbox, op: str, token: str) -> None:
    """``ack`` or ``retry`` the token (the two operations that need the current lease)."""
    if op == "ack":
        outbox.ack(token)
    else:
        outbox.retry(token, "smtp: 451 try again later")


def two_claims(world: World, outbox: Outbox, fake_clock: FakeClock) -> list[Claim]:
    """Two intents due at minutes(1), both claimed by worker-1."""
    reminded_task(world, reminder(minutes(1)), reminder(minutes(1), "push"))
    move_to(fake_clock, minutes(1))
    claims = outbox.claim("worker-1")
    assert len(claims) == 2
    return claims


def refuse_both(world: World, outbox: Outbox, claims: Sequence[Claim]) -> None:
    """``ack`` of the first token and ``retry`` of the second are refused, writing nothing."""
    for op, held in zip(("ack", "retry"), claims, strict=True):
        with nothing_written(world.store), pytest.raises(LeaseLost):
            settle(outbox, op, held.token)


# --------------------------------------------------------------------------- claim


class TestClaim:
    def test_claim_leases_only_due_intents_earliest_first_within_the_limit(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        # Written out of time order, over two tasks.
        first = reminded_task(world, reminder(minutes(3)), reminder(minutes(10)), title="A")
        second = reminded_task(world, reminder(minutes(2)), reminder(minutes(1)), title="B")
        at = {r.id: r.at for r in intent_rows(world.store)}
        move_to(fake_clock, minutes(3))

        earliest = outbox.claim("worker-1", limit=2)
        assert [c.at for c in earliest] == [minutes(1), minutes(2)]
        assert {c.task_id for c in earliest} == {second.id}
        assert [c.at for c in outbox.claim("worker-1", limit=2)] == [minutes(3)]
        assert outbox.claim("worker-1", limit=2) == []
        rows = {r.at: r for r in intent_rows(world.store)}
        assert {t: r.status for t, r in rows.items()} == {
            minutes(1): "leased",
            minutes(2): "leased",
            minutes(3): "leased",
            minutes(10): "pending",
        }
        # The future intent was left untouched.
        future = rows[minutes(10)]
        assert (future.attempts, future.lease_token, future.lease_owner) == (0, None, None)
        assert future.task_id == first.id
        assert set(at.values()) == set(rows)

    def test_claim_takes_the_earliest_due_intent_when_the_limit_cuts(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        reminded_task(world, reminder(minutes(3)), title="A")
        reminded_task(world, reminder(minutes(1)), title="B")
        reminded_task(world, reminder(minutes(2)), title="C")
        move_to(fake_clock, minutes(5))

        taken = [claim_one_limited(outbox) for _ in range(3)]

        assert [c.at for c in taken] == [minutes(1), minutes(2), minutes(3)]
        assert outbox.claim("worker-1") == []

    def test_claim_leaves_intents_that_are_not_yet_due_and_writes_nothing(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        reminded_task(world, reminder(minutes(1)), reminder(minutes(2), "push"))
        fake_clock.advance(timedelta(seconds=59))

        with nothing_written(world.store):
            assert outbox.claim("worker-1") == []

        fake_clock.advance(timedelta(seconds=1))  # exactly the first instant: due
        assert [c.at for c in outbox.claim("worker-1")] == [minutes(1)]

    def test_each_claim_gets_a_unique_token_its_owner_and_a_lease_of_exactly_sixty_seconds(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        task = reminded_task(
            world,
            reminder(minutes(1)),
            reminder(minutes(1), "push"),
            reminder(minutes(2), recipient="carol"),
        )
        move_to(fake_clock, minutes(2))
        now = fake_clock.now()

        claims = outbox.claim("worker-1", limit=2) + outbox.claim("worker-2")

        assert len(claims) == 3
        assert len({c.token for c in claims}) == 3
        assert all(0 < len(c.token) <= 64 for c in claims)
        assert all(c.lease_expires_at == now + timedelta(seconds=60) for c in claims)
        assert timedelta(seconds=60) == LEASE
        rows = {r.id: r for r in intent_rows(world.store)}
        owners = {c.id: ("worker-1" if i < 2 else "worker-2") for i, c in enumerate(claims)}
        for c in claims:
            row = rows[c.id]
            assert row.status == "leased"
            assert row.lease_token == c.token
            assert row.lease_owner == owners[c.id]
            assert row.lease_expires_at == now + LEASE
            assert row.next_attempt_at == now + LEASE
            assert row.attempts == c.attempts == 1
            assert (c.task_id, c.schedule_revision, c.channel, c.at, c.recipient_id) == (
                row.task_id,
                row.schedule_revision,
                row.channel,
                row.at,
                row.recipient_id,
            )
            assert c.task_id == task.id
            assert c.schedule_revision == task.schedule_revision
        assert {c.recipient_id for c in claims} == {world.alice.id, world.carol.id}

    def test_attempts_are_counted_at_claim_once_then_again_at_a_reclaim(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        task = reminded_task(world, reminder(minutes(1)))
        move_to(fake_clock, minutes(1))

        first = claim_one(outbox)
        assert first.attempts == 1
        assert intent_rows(world.store, task.id)[0].attempts == 1

        fake_clock.advance(LEASE)
        second = claim_one(outbox, "worker-2")
        assert (second.id, second.attempts) == (first.id, 2)
        assert intent_rows(world.store, task.id)[0].attempts == 2

    def test_a_crashed_workers_lease_is_reclaimed_after_it_expires_not_before(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        reminded_task(world, reminder(minutes(1)))
        move_to(fake_clock, minutes(1))
        crashed = claim_one(outbox, "worker-1")  # ... and never acknowledged

        fake_clock.advance(timedelta(seconds=59))
        with nothing_written(world.store):
            assert outbox.claim("worker-2") == []

        fake_clock.advance(timedelta(seconds=2))
        taken = claim_one(outbox, "worker-2")

        assert taken.id == crashed.id
        assert taken.token != crashed.token
        assert taken.lease_expires_at == fake_clock.now() + LEASE
        row = intent_row(world.store, taken.id)
        assert (row.status, row.lease_owner, row.lease_token) == (
            "leased",
            "worker-2",
            taken.token,
        )
        with pytest.raises(LeaseLost):
            outbox.ack(crashed.token)
        outbox.ack(taken.token)
        assert intent_row(world.store, taken.id).status == "delivered"

    def test_at_the_instant_a_lease_expires_its_holder_has_lost_it_and_it_is_claimable(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        # A 60-second lease covers [claim, claim + 60 s): no instant with two holders.
        reminded_task(world, reminder(minutes(1)))
        move_to(fake_clock, minutes(1))
        held = claim_one(outbox)

        move_to(fake_clock, held.lease_expires_at)

        with nothing_written(world.store), pytest.raises(LeaseLost):
            outbox.ack(held.token)
        assert claim_one(outbox, "worker-2").id == held.id


def claim_one_at_next(outbox: Outbox, fake_clock: FakeClock) -> Claim:
    """Moves the clock to when the outbox next has something due, and claims it."""
    due = outbox.next_due()
    assert due is not None
    move_to(fake_clock, max(due, fake_clock.now()))
    return claim_one(outbox)


def claim_one_limited(outbox: Outbox) -> Claim:
    claims = outbox.claim("worker-1", limit=1)
    assert len(claims) == 1, claims
    return claims[0]


class TestIntentUniqueness:
    def test_a_second_intent_with_the_same_task_revision_channel_and_instant_is_refused(
        self, world: World
    ) -> None:
        task = reminded_task(world, reminder(minutes(1)))
        (original,) = intent_rows(world.store, task.id)

        with nothing_written(world.store), pytest.raises(IntegrityError):
            # A different recipient does not make it a different intent.
            insert_intents(world.store, task.id, 1, [minutes(1)], world.bob.id)

        assert [r.id for r in intent_rows(world.store, task.id)] == [original.id]

    def test_intents_differing_in_one_key_column_may_coexist(self, world: World) -> None:
        task = reminded_task(world, reminder(minutes(1)))
        alice = world.alice.id

        insert_intents(world.store, task.id, 2, [minutes(1)], alice)  # another revision
        insert_intents(world.store, task.id, 1, [minutes(1)], alice, "push")  # another channel
        insert_intents(world.store, task.id, 1, [minutes(2)], alice)  # another instant

        assert len(intent_rows(world.store, task.id)) == 4


# --------------------------------------------------------------------------- ack and retry


class TestAcknowledgement:
    def test_ack_records_the_delivery_and_the_intent_is_never_claimed_again(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        reminded_task(world, reminder(minutes(1)))
        move_to(fake_clock, minutes(1))
        held = claim_one(outbox)
        fake_clock.advance(timedelta(seconds=30))

        outbox.ack(held.token)

        row = intent_row(world.store, held.id)
        assert (row.status, row.delivered_at, row.attempts) == (
            "delivered",
            fake_clock.now(),
            1,
        )
        fake_clock.advance(timedelta(hours=2))
        assert outbox.claim("worker-2") == []
        assert intent_row(world.store, held.id).status == "delivered"

    def test_a_stale_token_after_a_reclaim_is_refused_and_changes_nothing(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        stale = two_claims(world, outbox, fake_clock)
        fake_clock.advance(timedelta(seconds=61))
        current = outbox.claim("worker-2")
        assert [c.id for c in current] == [c.id for c in stale]

        refuse_both(world, outbox, stale)

        outbox.ack(current[0].token)  # the current holder still holds them
        assert outbox.retry(current[1].token, "push: 503").status == "pending"

    def test_an_expired_lease_is_refused_and_changes_nothing(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        held = two_claims(world, outbox, fake_clock)
        fake_clock.advance(timedelta(seconds=61))  # expired, not yet reclaimed

        refuse_both(world, outbox, held)

    def test_a_made_up_token_is_refused_and_changes_nothing(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        held = two_claims(world, outbox, fake_clock)
        made_up = ["0" * 24 + c.token[24:][::-1] for c in held]

        for op, token in zip(("ack", "retry"), made_up, strict=True):
            with nothing_written(world.store), pytest.raises(LeaseLost):
                settle(outbox, op, token)

    def test_an_already_acknowledged_token_is_refused_and_changes_nothing(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        held = two_claims(world, outbox, fake_clock)
        assert outbox.ack_many([c.token for c in held]) == []

        refuse_both(world, outbox, held)

        assert {intent_row(world.store, c.id).status for c in held} == {"delivered"}

    def test_a_retried_token_is_refused_and_changes_nothing(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        held = two_claims(world, outbox, fake_clock)
        for c in held:
            outbox.retry(c.token, "push: gateway timeout")

        refuse_both(world, outbox, held)

    def test_ack_many_acknowledges_the_held_tokens_and_returns_the_others(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        reminded_task(world, reminder(minutes(1)), reminder(minutes(2)), reminder(minutes(3)))
        move_to(fake_clock, minutes(3))
        a, b, c = outbox.claim("worker-1")
        outbox.ack(c.token)
        made_up = "f" * 40

        left = outbox.ack_many([a.token, made_up, b.token, c.token])

        assert left == [made_up, c.token]
        assert {r.status for r in intent_rows(world.store)} == {"delivered"}
        assert outbox.ack_many([]) == []


class TestRetry:
    def test_retry_waits_1_4_16_then_60_minutes_and_the_fifth_attempt_is_the_last(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        task = reminded_task(world, reminder(minutes(1)))
        move_to(fake_clock, minutes(1))
        waits = [timedelta(minutes=m) for m in (1, 4, 16, 60)]

        for attempt, wait in enumerate(waits, start=1):
            held = claim_one(outbox)
            assert held.attempts == attempt
            fake_clock.advance(timedelta(seconds=10))
            failed = outbox.retry(held.token, f"  smtp: 451 busy ({attempt})  ")
            assert failed.status == "pending"
            assert failed.attempts == attempt
            assert failed.next_attempt_at == fake_clock.now() + wait
            assert failed.last_error == f"smtp: 451 busy ({attempt})"
            row = intent_row(world.store, held.id)
            assert (row.lease_owner, row.lease_expires_at) == (None, None)
            # Not a second earlier ...
            fake_clock.advance(wait - timedelta(seconds=1))
            with nothing_written(world.store):
                assert outbox.claim("worker-1") == []
            # ... then due again.
            fake_clock.advance(timedelta(seconds=1))

        last = claim_one(outbox)
        assert last.attempts == MAX_ATTEMPTS == 5
        dead = outbox.retry(last.token, "smtp: 550 mailbox unavailable")

        assert dead.status == "dead"
        assert dead.attempts == MAX_ATTEMPTS
        assert dead.last_error == "smtp: 550 mailbox unavailable"
        fake_clock.advance(timedelta(hours=3))
        with nothing_written(world.store):
            assert outbox.claim("worker-1") == []
        row = intent_rows(world.store, task.id)[0]
        assert (row.status, row.attempts, row.last_error) == (
            "dead",
            5,
            "smtp: 550 mailbox unavailable",
        )

    def test_retry_keeps_the_error_trimmed_and_at_most_2000_characters(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        reminded_task(world, reminder(minutes(1)), reminder(minutes(1), "push"))
        move_to(fake_clock, minutes(1))
        short, long = outbox.claim("worker-1")

        assert outbox.retry(short.token, "\n  push: 503  \n").last_error == "push: 503"
        assert outbox.retry(long.token, "x" * 5000).last_error == "x" * 2000

    def test_backoff_grows_fourfold_from_a_minute_up_to_the_one_hour_cap(self) -> None:
        assert [backoff(n) for n in range(1, 8)] == [
            timedelta(minutes=1),
            timedelta(minutes=4),
            timedelta(minutes=16),
            RETRY_CAP,
            RETRY_CAP,
            RETRY_CAP,
            RETRY_CAP,
        ]
        assert timedelta(hours=1) == RETRY_CAP

    def test_crashes_count_as_attempts_and_a_lease_lost_after_the_fifth_makes_it_dead(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        task = reminded_task(world, reminder(minutes(1)))
        move_to(fake_clock, minutes(1))
        assert claim_one(outbox, "worker-1").attempts == 1
        # Four crashes: each lease expires unacknowledged and is reclaimed.
        for attempt in range(2, MAX_ATTEMPTS + 1):
            fake_clock.advance(LEASE)
            held = claim_one(outbox, f"worker-{attempt}")
            assert held.attempts == attempt
        # The fifth holder crashes too.
        fake_clock.advance(LEASE)

        assert outbox.claim("worker-6") == []

        row = intent_rows(world.store, task.id)[0]
        assert (row.status, row.attempts) == ("dead", MAX_ATTEMPTS)
        assert row.last_error is not None
        assert "worker lost" in row.last_error
        assert (row.lease_owner, row.lease_expires_at) == (None, None)
        with pytest.raises(LeaseLost):
            outbox.ack(held.token)
        fake_clock.advance(timedelta(hours=2))
        assert outbox.claim("worker-7") == []
        assert intent_rows(world.store, task.id)[0].status == "dead"

    def test_a_lost_lease_after_a_failed_fifth_attempt_keeps_the_worker_lost_error(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        # Four failures reported by retry, then the fifth holder vanishes.
        task = reminded_task(world, reminder(minutes(1)))
        move_to(fake_clock, minutes(1))
        for _ in range(MAX_ATTEMPTS - 1):
            held = claim_one(outbox)
            outbox.retry(held.token, "push: 503")
            fake_clock.advance(RETRY_CAP)
        assert claim_one(outbox).attempts == MAX_ATTEMPTS
        fake_clock.advance(LEASE)

        assert outbox.claim("worker-2") == []

        row = intent_rows(world.store, task.id)[0]
        assert row.status == "dead"
        assert row.last_error is not None
        assert "worker lost" in row.last_error


# --------------------------------------------------------------------------- cancellation


def change_schedule(world: World, task: Task) -> None:
    current = world.tasks.get(world.alice.id, task.id).task
    schedule_reminders(world, current, reminder(minutes(1)))


def complete(world: World, task: Task) -> None:
    current = world.tasks.get(world.alice.id, task.id).task
    world.tasks.complete(world.alice.id, task.id, current.revision, complete_subtree=True)


def trash(world: World, task: Task) -> None:
    current = world.tasks.get(world.alice.id, task.id).task
    world.tasks.trash(world.alice.id, task.id, current.revision)


CANCELLERS: dict[str, tuple[Callable[[World, Task], None], str]] = {
    "schedule-change": (change_schedule, "schedule-changed"),
    "completion": (complete, "task-completed"),
    "trash": (trash, "task-trashed"),
}


class TestCancellation:
    @pytest.mark.parametrize("how", list(CANCELLERS))
    def test_pending_and_leased_intents_of_the_old_revision_are_cancelled(
        self, world: World, outbox: Outbox, fake_clock: FakeClock, how: str
    ) -> None:
        cancel, reason = CANCELLERS[how]
        task = reminded_task(
            world, reminder(minutes(1)), reminder(minutes(2), "push"), reminder(minutes(30))
        )
        child = reminded_task(world, reminder(minutes(2.5)), title="Child", parent=task)
        move_to(fake_clock, minutes(2))
        leased = outbox.claim("worker-1", limit=1)[0]
        delivered = outbox.claim("worker-1", limit=1)[0]
        assert (leased.at, delivered.at) == (minutes(1), minutes(2))
        outbox.ack(delivered.token)
        before = {r.id: r.status for r in intent_rows(world.store)}
        assert sorted(before.values()) == ["delivered", "leased", "pending", "pending"]

        cancel(world, task)

        rows = {r.id: r for r in intent_rows(world.store) if r.id in before}
        for intent_id, row in rows.items():
            if intent_id == delivered.id:
                assert (row.status, row.closed_reason) == ("delivered", None)
                continue
            if how == "schedule-change" and row.task_id == child.id:
                # Only the changed task's schedule moved on.
                assert row.status == before[intent_id]
                continue
            assert (row.status, row.closed_reason, row.lease_token) == (
                "cancelled",
                reason,
                None,
            )
        assert rows[leased.id].status == "cancelled"
        with nothing_written(world.store), pytest.raises(LeaseLost):
            outbox.ack(leased.token)
        with nothing_written(world.store), pytest.raises(LeaseLost):
            outbox.retry(leased.token, "too late")
        fake_clock.advance(timedelta(hours=1))
        claimed = {c.id for c in outbox.claim("worker-2")}
        assert not claimed & set(before) - {r.id for r in intent_rows(world.store, child.id)}
        if how == "schedule-change":
            # The new revision's intent, at an instant the old one had too, is claimable.
            new = [r for r in intent_rows(world.store, task.id) if r.id not in before]
            assert [(r.schedule_revision, r.at) for r in new] == [(2, minutes(1))]
            assert new[0].id in claimed
        else:
            assert claimed == set()

    def test_a_completion_or_trash_that_fails_cancels_nothing(
        self, world: World, fake_clock: FakeClock
    ) -> None:
        # The cancellation is part of the transition's transaction: a failing hook rolls
        # both back.
        task = reminded_task(world, reminder(minutes(1)), reminder(minutes(2)))
        move_to(fake_clock, minutes(1))
        Outbox(world.store).claim("worker-1", limit=1)

        def fail(*_: Any) -> None:
            raise RuntimeError("hook failed")

        failing = TaskService(world.store, hooks=[fail])
        for transition in (failing.complete, failing.trash):
            current = failing.get(world.alice.id, task.id).task
            with nothing_written(world.store), pytest.raises(RuntimeError, match="hook failed"):
                transition(world.alice.id, task.id, current.revision)

        assert sorted(r.status for r in intent_rows(world.store, task.id)) == [
            "leased",
            "pending",
        ]


# --------------------------------------------------------------------------- never claimed


class TestNeverNewlyClaimed:
    def test_an_intent_of_an_older_schedule_revision_is_closed_as_stale_not_claimed(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        task = reminded_task(world, reminder(minutes(2)))
        assert task.schedule_revision == 1
        (stale_id,) = insert_intents(world.store, task.id, 0, [minutes(1)], world.alice.id)
        move_to(fake_clock, minutes(2))

        claims = outbox.claim("worker-1")

        assert [c.at for c in claims] == [minutes(2)]
        stale = intent_row(world.store, stale_id)
        assert (stale.status, stale.closed_reason, stale.attempts) == (
            "closed",
            "stale-schedule",
            0,
        )
        assert (stale.lease_token, stale.lease_owner, stale.lease_expires_at) == (
            None,
            None,
            None,
        )
        fake_clock.advance(timedelta(hours=1))
        assert stale_id not in {c.id for c in outbox.claim("worker-2")}
        assert intent_row(world.store, stale_id).status == "closed"

    def test_intents_made_stale_behind_the_services_back_are_closed_not_claimed(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        task = reminded_task(world, reminder(minutes(1)), reminder(minutes(2)))
        move_to(fake_clock, minutes(1))
        crashed = claim_one(outbox)  # leased, then its worker dies
        bump_schedule_revision(world.store, task.id)
        move_to(fake_clock, minutes(3))

        assert outbox.claim("worker-2") == []

        rows = intent_rows(world.store, task.id)
        assert [(r.status, r.closed_reason) for r in rows] == [
            ("closed", "stale-schedule"),
            ("closed", "stale-schedule"),
        ]
        # The crashed lease was not reclaimed: its attempt count did not move.
        assert {r.id: r.attempts for r in rows}[crashed.id] == 1

    def test_an_intent_older_than_the_expiry_is_closed_as_expired_not_claimed(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        assert timedelta(days=1) == EXPIRY
        old = minutes(1)
        younger = old + timedelta(seconds=2)
        task = reminded_task(world, reminder(old), reminder(younger))
        move_to(fake_clock, old + EXPIRY + timedelta(seconds=1))

        claims = outbox.claim("worker-1")

        assert [c.at for c in claims] == [younger]
        expired = next(r for r in intent_rows(world.store, task.id) if r.at == old)
        assert (expired.status, expired.closed_reason, expired.attempts) == (
            "closed",
            "expired",
            0,
        )

    def test_a_retried_intent_that_outlives_the_expiry_is_closed_as_expired(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        task = reminded_task(world, reminder(minutes(1)))
        move_to(fake_clock, minutes(1))
        outbox.retry(claim_one(outbox).token, "push: 503")
        fake_clock.advance(EXPIRY)

        assert outbox.claim("worker-1") == []

        row = intent_rows(world.store, task.id)[0]
        assert (row.status, row.closed_reason, row.attempts, row.last_error) == (
            "closed",
            "expired",
            1,
            "push: 503",
        )


# --------------------------------------------------------------------------- release, next_due


class TestRelease:
    def test_release_gives_claims_back_unsent_and_claimable_at_once(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        reminded_task(world, reminder(minutes(1)), reminder(minutes(2)), reminder(minutes(3)))
        move_to(fake_clock, minutes(3))
        a, b, c = outbox.claim("worker-1")
        fake_clock.advance(timedelta(seconds=5))

        assert outbox.release([a.token, b.token]) == 2

        for released in (a, b):
            row = intent_row(world.store, released.id)
            assert (row.status, row.attempts, row.next_attempt_at) == (
                "pending",
                0,
                fake_clock.now(),
            )
            assert (row.lease_token, row.lease_owner, row.lease_expires_at) == (None, None, None)
        assert intent_row(world.store, c.id).status == "leased"
        with pytest.raises(LeaseLost):
            outbox.ack(a.token)

        again = outbox.claim("worker-2")
        assert {x.id for x in again} == {a.id, b.id}
        assert {x.attempts for x in again} == {1}

    def test_release_undoes_only_the_attempt_it_gave_back(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        reminded_task(world, reminder(minutes(1)))
        move_to(fake_clock, minutes(1))
        outbox.retry(claim_one(outbox).token, "smtp: timeout")
        fake_clock.advance(timedelta(minutes=1))
        second = claim_one(outbox)
        assert second.attempts == 2

        assert outbox.release([second.token]) == 1

        assert intent_row(world.store, second.id).attempts == 1
        assert claim_one(outbox).attempts == 2

    def test_release_of_tokens_no_longer_held_releases_nothing(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        reminded_task(world, reminder(minutes(1)), reminder(minutes(2)))
        move_to(fake_clock, minutes(2))
        acked, reclaimed = outbox.claim("worker-1")
        outbox.ack(acked.token)
        fake_clock.advance(LEASE)
        outbox.claim("worker-2")

        with nothing_written(world.store):
            assert outbox.release([acked.token, reclaimed.token, "e" * 40]) == 0
            assert outbox.release([]) == 0


class TestNextDue:
    def test_next_due_is_the_earliest_pending_time_or_lease_expiry_and_none_when_idle(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        assert outbox.next_due() is None
        task = reminded_task(world, reminder(minutes(5)), reminder(minutes(30), "push"))
        assert outbox.next_due() == minutes(5)

        move_to(fake_clock, minutes(5))
        held = claim_one(outbox)
        assert outbox.next_due() == minutes(5) + LEASE  # the lease expiry comes first

        outbox.ack(held.token)
        assert outbox.next_due() == minutes(30)

        move_to(fake_clock, minutes(30))
        outbox.retry(claim_one(outbox).token, "push: 503")
        assert outbox.next_due() == minutes(31)

        trash(world, task)
        assert outbox.next_due() is None
        assert {r.status for r in intent_rows(world.store)} == {"delivered", "cancelled"}

    def test_next_due_ignores_dead_delivered_and_closed_intents(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        task = reminded_task(world, reminder(minutes(1)), reminder(minutes(2)))
        move_to(fake_clock, minutes(2))
        first, second = outbox.claim("worker-1")
        outbox.ack(first.token)
        outbox.close(second.token, "list-archived")
        (dead,) = insert_intents(world.store, task.id, 1, [minutes(3)], world.alice.id)
        with world.store.transaction() as conn:
            conn.execute(update(ri).where(ri.c.id == dead).values(status="dead", attempts=5))

        assert outbox.next_due() is None


# --------------------------------------------------------------------------- requeue


def dead_intents(
    world: World, outbox: Outbox, fake_clock: FakeClock, *recipients: str
) -> list[UUID]:
    """One reminder per recipient, each on its own task in ``home``, failed five times."""
    made = [
        reminded_task(world, reminder(minutes(1), recipient=r), title=f"For {r} ({i})")
        for i, r in enumerate(recipients)
    ]
    move_to(fake_clock, minutes(1))
    for _ in range(MAX_ATTEMPTS):
        claims = outbox.claim("worker-1")
        assert len(claims) == len(recipients)
        failed = [outbox.retry(c.token, "smtp: 550") for c in claims]
        fake_clock.advance(RETRY_CAP)
    assert {f.status for f in failed} == {"dead"}
    return [intent_ids(world.store, t.id)[0] for t in made]


def dead_intent(world: World, outbox: Outbox, fake_clock: FakeClock, recipient: str) -> UUID:
    return dead_intents(world, outbox, fake_clock, recipient)[0]


class TestRequeue:
    def test_a_dead_intent_is_requeued_by_its_recipient_or_an_editor(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        # (recipient, who requeues): a viewer who is the recipient, an editor, the owner.
        cases = [("carol", "carol"), ("alice", "bob"), ("carol", "alice")]
        ids = dead_intents(world, outbox, fake_clock, *(r for r, _ in cases))
        fake_clock.advance(timedelta(minutes=7))

        for intent_id, (_, by) in zip(ids, cases, strict=True):
            requeued = outbox.requeue(by, str(intent_id))
            assert (requeued.id, requeued.status, requeued.attempts) == (
                intent_id,
                "pending",
                0,
            )
            assert requeued.next_attempt_at == fake_clock.now()
            assert requeued.last_error == "smtp: 550"  # what happened is kept for the record

        again = outbox.claim("worker-1")
        assert sorted((c.id, c.attempts) for c in again) == sorted((i, 1) for i in ids)

    def test_a_reminder_that_has_not_failed_is_not_requeued_before_its_instant(
        self, world: World, outbox: Outbox
    ) -> None:
        next_week = reminded_task(world, reminder(minutes(7 * 24 * 60)))
        (intent_id,) = intent_ids(world.store, next_week.id)

        with nothing_written(world.store), pytest.raises(Conflict):
            outbox.requeue(world.bob.id, intent_id)  # by an editor; it has not failed

        assert outbox.claim("worker-1") == []  # not a week early

    def test_a_reminder_waiting_after_a_failure_is_requeued_due_now(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        reminded_task(world, reminder(minutes(1)))
        move_to(fake_clock, minutes(1))
        outbox.retry(claim_one(outbox).token, "smtp: 451")
        outbox.retry(claim_one_at_next(outbox, fake_clock).token, "smtp: 451")
        waiting = outbox.list(world.alice.id, status="pending")[0]
        assert waiting.next_attempt_at == fake_clock.now() + timedelta(minutes=4)

        requeued = outbox.requeue(world.alice.id, waiting.id)

        assert (requeued.status, requeued.attempts) == ("pending", 0)
        assert requeued.next_attempt_at == fake_clock.now()
        assert claim_one(outbox).attempts == 1

    def test_a_viewer_who_is_not_the_recipient_may_not_requeue(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        intent_id = dead_intent(world, outbox, fake_clock, "alice")

        with nothing_written(world.store), pytest.raises(Forbidden):
            outbox.requeue(world.carol.id, intent_id)

    def test_a_non_member_is_told_the_intent_does_not_exist(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        intent_id = dead_intent(world, outbox, fake_clock, "alice")
        private = reminded_task(world, reminder(minutes(200)), task_list=world.private)
        (private_id,) = intent_ids(world.store, private.id)

        for who, which in (("dave", intent_id), ("bob", private_id), ("carol", private_id)):
            with nothing_written(world.store), pytest.raises(NotFound):
                outbox.requeue(who, which)

    def test_a_delivered_or_cancelled_intent_cannot_be_requeued(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        reminded_task(world, reminder(minutes(1)), title="Delivered")
        doomed = reminded_task(world, reminder(minutes(2)), title="Trashed")
        move_to(fake_clock, minutes(2))
        delivered = outbox.claim("worker-1", limit=1)[0]
        outbox.ack(delivered.token)
        cancelled = outbox.claim("worker-1", limit=1)[0]
        assert cancelled.task_id == doomed.id
        trash(world, doomed)

        for intent_id in (delivered.id, cancelled.id):
            with nothing_written(world.store), pytest.raises(Conflict):
                outbox.requeue(world.alice.id, intent_id)

    def test_a_leased_intent_cannot_be_requeued(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        reminded_task(world, reminder(minutes(1)))
        move_to(fake_clock, minutes(1))
        held = claim_one(outbox)

        with nothing_written(world.store), pytest.raises(Conflict):
            outbox.requeue(world.alice.id, held.id)
        outbox.ack(held.token)

    def test_requeue_of_a_malformed_id_is_invalid_input(self, world: World, outbox: Outbox) -> None:
        for bad in ("not-an-id", "", 42):
            with nothing_written(world.store), pytest.raises(InvalidInput):
                outbox.requeue(world.alice.id, bad)  # type: ignore[arg-type]

    def test_requeue_of_an_unknown_id_is_not_found(self, world: World, outbox: Outbox) -> None:
        with nothing_written(world.store), pytest.raises(NotFound):
            outbox.requeue(world.alice.id, uuid.uuid4())


# --------------------------------------------------------------------------- list and get


class TestVisibility:
    @pytest.fixture
    def three(self, world: World) -> dict[str, UUID]:
        made = {
            name: reminded_task(world, reminder(minutes(i + 1)), title=name, task_list=lst)
            for i, (name, lst) in enumerate(
                [("home", world.home), ("work", world.work), ("private", world.private)]
            )
        }
        return {name: intent_ids(world.store, t.id)[0] for name, t in made.items()}

    def test_only_members_of_the_tasks_list_see_its_intents(
        self, world: World, outbox: Outbox, three: dict[str, UUID]
    ) -> None:
        visible = {
            "alice": ["home", "work", "private"],
            "bob": ["home", "work"],
            "carol": ["home"],
            "dave": [],
        }
        for who, sees in visible.items():
            assert [i.id for i in outbox.list(who)] == [three[name] for name in sees], who
            for name, intent_id in three.items():
                if name in sees:
                    got = outbox.get(who, intent_id)
                    assert (got.id, got.task_title, got.recipient, got.status) == (
                        intent_id,
                        name,
                        "alice",
                        "pending",
                    )
                else:
                    with pytest.raises(NotFound):
                        outbox.get(who, intent_id)
                        pytest.fail(f"{who} sees the intent in {name}")

    def test_a_removed_member_no_longer_sees_the_lists_intents(
        self, world: World, outbox: Outbox, three: dict[str, UUID]
    ) -> None:
        world.services.directory.share(world.alice.id, world.home.id, world.carol.id, None)

        assert outbox.list(world.carol.id) == []
        with pytest.raises(NotFound):
            outbox.get(world.carol.id, three["home"])

    def test_list_filters_by_status_and_task(
        self, world: World, outbox: Outbox, fake_clock: FakeClock, three: dict[str, UUID]
    ) -> None:
        move_to(fake_clock, minutes(1))
        held = claim_one(outbox)
        assert held.id == three["home"]

        leased = outbox.list(world.alice.id, status="leased")
        pending = outbox.list(world.alice.id, status="pending")
        assert [i.id for i in leased] == [three["home"]]
        assert leased[0].lease_owner == "worker-1"
        assert [i.id for i in pending] == [three["work"], three["private"]]
        assert outbox.list(world.alice.id, status="dead") == []
        assert [i.id for i in outbox.list(world.alice.id, task=held.task_id)] == [held.id]
        assert [i.id for i in outbox.list(world.alice.id, limit=1)] == [three["home"]]

    def test_list_with_bad_arguments_is_invalid_input(self, world: World, outbox: Outbox) -> None:
        bad: list[dict[str, Any]] = [
            {"status": "sent"},
            {"status": ""},
            {"limit": 0},
            {"limit": 10_001},
            {"limit": True},
        ]
        for kwargs in bad:
            with pytest.raises(InvalidInput):
                outbox.list(world.alice.id, **kwargs)
                pytest.fail(f"list accepted {kwargs}")

    def test_get_of_an_unknown_or_malformed_id(self, world: World, outbox: Outbox) -> None:
        with pytest.raises(NotFound):
            outbox.get(world.alice.id, uuid.uuid4())
        with pytest.raises(InvalidInput):
            outbox.get(world.alice.id, "INT-1")


# --------------------------------------------------------------------------- bad input


BAD_CLAIMS: dict[str, tuple[Any, Any]] = {
    "empty owner": ("", 1),
    "blank owner": ("   ", 1),
    "owner too long": ("w" * 201, 1),
    "no owner": (None, 1),
    "limit 0": ("worker-1", 0),
    "negative limit": ("worker-1", -1),
    "limit above the maximum": ("worker-1", MAX_CLAIM_BATCH + 1),
    "limit True": ("worker-1", True),
    "limit as text": ("worker-1", "5"),
    "limit as a float": ("worker-1", 2.0),
}

BAD_SETTLEMENTS: dict[str, Callable[[Outbox, str], object]] = {
    "ack ''": lambda o, t: o.ack(""),
    "ack of an int": lambda o, t: o.ack(123),  # type: ignore[arg-type]
    "ack of None": lambda o, t: o.ack(None),  # type: ignore[arg-type]
    "ack of a token too long": lambda o, t: o.ack("x" * 65),
    "ack_many of a string": lambda o, t: o.ack_many(t),
    "ack_many with an int": lambda o, t: o.ack_many([t, 7]),  # type: ignore[list-item]
    "retry with an empty error": lambda o, t: o.retry(t, ""),
    "retry with a blank error": lambda o, t: o.retry(t, "  \n "),
    "retry with no error": lambda o, t: o.retry(t, None),  # type: ignore[arg-type]
    "retry of ''": lambda o, t: o.retry("", "smtp: 451"),
    "release of a string": lambda o, t: o.release(t),
}


class TestBadInput:
    def test_claim_with_a_bad_owner_or_limit_is_invalid_input_and_claims_nothing(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        reminded_task(world, reminder(minutes(1)))
        move_to(fake_clock, minutes(1))

        for case, (owner, limit) in BAD_CLAIMS.items():
            with nothing_written(world.store), pytest.raises(InvalidInput):
                outbox.claim(owner, limit)
                pytest.fail(f"claim accepted {case}")

        assert len(outbox.claim("worker-1")) == 1  # the intent was due all along

    def test_claim_accepts_the_longest_owner_and_the_largest_batch(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        reminded_task(world, reminder(minutes(1)))
        move_to(fake_clock, minutes(1))

        (held,) = outbox.claim("w" * 200, MAX_CLAIM_BATCH)

        assert intent_row(world.store, held.id).lease_owner == "w" * 200

    def test_ack_or_retry_with_a_bad_token_or_error_is_invalid_input_and_keeps_the_lease(
        self, world: World, outbox: Outbox, fake_clock: FakeClock
    ) -> None:
        reminded_task(world, reminder(minutes(1)))
        move_to(fake_clock, minutes(1))
        held = claim_one(outbox)

        for case, call in BAD_SETTLEMENTS.items():
            with nothing_written(world.store), pytest.raises(InvalidInput):
                call(outbox, held.token)
                pytest.fail(f"accepted: {case}")

        outbox.ack(held.token)  # still held
        assert intent_row(world.store, held.id).status == "delivered"

    def test_a_lease_must_be_a_positive_duration(self, store: Store) -> None:
        for lease in (timedelta(0), timedelta(seconds=-1)):
            with pytest.raises(InvalidInput):
                Outbox(store, lease=lease)


# --------------------------------------------------------------------------- concurrency


BULK = 200


def bulk_due_intents(world: World, count: int) -> list[UUID]:
    """``count`` due intents over four tasks, written directly in one transaction."""
    made = [world.tasks.create(world.alice.id, world.home.id, f"Bulk {i}") for i in range(4)]
    now = world.store.clock.now()
    ids = [uuid.uuid4() for _ in range(count)]
    rows = []
    for i, intent_id in enumerate(ids):
        rows.append(
            {
                "id": intent_id,
                "task_id": made[i % 4].id,
                "schedule_revision": 0,
                "channel": "email" if i % 2 else "push",
                "at": now - timedelta(seconds=i),
                "recipient_id": world.alice.id,
                "status": "pending",
                "attempts": 0,
                "next_attempt_at": now - timedelta(seconds=i),
                "created_at": now,
                "updated_at": now,
            }
        )
    with world.store.transaction() as conn:
        conn.execute(insert(ri), rows)
    return ids


class TestConcurrentClaims:
    def test_two_claimers_never_lease_the_same_intent_and_together_take_them_all(
        self, world: World, store: Store
    ) -> None:
        ids = bulk_due_intents(world, BULK)
        # The tasks were created with schedule revision 0: the intents are current.
        with store.transaction(write=False) as conn:
            assert set(conn.execute(select(tasks.c.schedule_revision)).scalars()) == {0}
        barrier = threading.Barrier(2)
        got: dict[str, list[Claim]] = {"worker-a": [], "worker-b": []}
        errors: list[BaseException] = []

        def work(owner: str) -> None:
            outbox = Outbox(store)
            try:
                barrier.wait(JOIN_SECONDS)
                while claims := outbox.claim(owner, limit=7):
                    got[owner].extend(claims)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(owner,)) for owner in got]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(JOIN_SECONDS)
            assert not thread.is_alive(), "a claimer hung"

        assert errors == []
        claimed = [c.id for claims in got.values() for c in claims]
        assert len(claimed) == len(set(claimed)), "an intent was leased twice"
        assert set(claimed) == set(ids)
        rows = {r.id: r for r in intent_rows(store)}
        for owner, claims in got.items():
            for c in claims:
                row = rows[c.id]
                assert (row.status, row.lease_owner, row.lease_token, row.attempts) == (
                    "leased",
                    owner,
                    c.token,
                    1,
                )
        with store.transaction(write=False) as conn:
            leased = conn.execute(
                select(func.count(), func.count(ri.c.lease_token.distinct())).where(
                    ri.c.status == "leased"
                )
            ).one()
        assert tuple(leased) == (BULK, BULK)

    def test_a_claim_skips_intents_another_transaction_has_locked(
        self, world: World, store: Store, storage_target: StorageTarget
    ) -> None:
        if store.dialect != "postgresql":
            pytest.skip("row locks and SKIP LOCKED exist on PostgreSQL only")
        ids = bulk_due_intents(world, 10)
        locked = sorted(ids, key=str)[:3]
        outbox = Outbox(store)
        engine = storage_target.engine()
        with engine.connect() as other, other.begin():
            other.execute(select(ri.c.id).where(ri.c.id.in_(locked)).with_for_update())
            done: list[list[Claim]] = []
            thread = threading.Thread(target=lambda: done.append(outbox.claim("worker-1")))
            thread.start()
            thread.join(JOIN_SECONDS)
            assert not thread.is_alive(), "the claim waited for the locked rows"
            assert {c.id for c in done[0]} == set(ids) - set(locked)
        assert {c.id for c in outbox.claim("worker-2")} == set(locked)
