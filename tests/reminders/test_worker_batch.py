"""The delivery worker's batch, seen from its transport: what each delivery carries, when
a verdict is read again, when a claim is released unsent, and what a broken transport or a
reason found only at delivery time does to an intent.

A recording transport stands in for Apprise: the point is what the worker hands over, not
the network. Every test runs on SQLite and PostgreSQL (the ``store`` fixture) on the fake
clock, which starts at 2025-03-01T12:00Z; ``minutes(n)`` is n minutes after that.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, timedelta
from uuid import UUID

import pytest
from sqlalchemy import update

from kalends.bootstrap import build
from kalends.clock import FakeClock
from kalends.reminders.outbox import LEASE, MAX_ATTEMPTS, Intent, Outbox
from kalends.reminders.transports import Delivery, DeliveryFailed
from kalends.reminders.worker import LEASE_MARGIN, RECHECK_AFTER, DeliveryWorker, compose
from kalends.storage.task_tables import reminder_intents as ri
from kalends.storage.task_tables import tasks
from kalends.storage.unit_of_work import Store
from kalends.tasks import Task, parse_schedule

from .outbox_support import (
    World,
    bump_schedule_revision,
    insert_intents,
    intent_ids,
    make_world,
    minutes,
    reminded_task,
    reminder,
)

ALICE_MAIL = "mailto://alice:secret@example.com"
REFUSED = "destination 1 (ntfy): refused"
BOB_PUSH = ("ntfy://ntfy.example.com/bob", "json://hooks.example.com/bob")


class Recorder:
    """A transport that keeps every delivery and may act while sending."""

    def __init__(self, during: Callable[[Delivery], None] | None = None) -> None:
        self.deliveries: list[Delivery] = []
        self.during = during

    def send(self, delivery: Delivery) -> None:
        self.deliveries.append(delivery)
        if self.during is not None:
            self.during(delivery)


@pytest.fixture
def world(store: Store) -> World:
    world = make_world(build(store))
    world.services.destinations.set(world.alice.id, world.alice.id, "email", [ALICE_MAIL])
    world.services.destinations.set(world.bob.id, world.bob.id, "push", list(BOB_PUSH))
    return world


def outbox(world: World) -> Outbox:
    return Outbox(world.store)


def intent(world: World, intent_id: UUID) -> Intent:
    return outbox(world).get(world.alice.id, intent_id)


def scheduled(world: World, title: str, due: object, *reminders: dict[str, object]) -> Task:
    task = world.tasks.create(world.alice.id, world.home.id, title)
    data: dict[str, object] = {"reminders": list(reminders)}
    if due is not None:
        data["due"] = due
    return world.tasks.set_schedule(
        world.alice.id, task.id, task.revision, parse_schedule(data, world.recipient)
    )


def worker(world: World, transport: Recorder, **options: object) -> DeliveryWorker:
    return DeliveryWorker(world.store, transport, owner="batch-test", **options)  # type: ignore[arg-type]


class TestWhatTheTransportGets:
    def test_each_delivery_carries_the_message_the_destinations_and_the_key(
        self, world: World, fake_clock: FakeClock
    ) -> None:
        timed = scheduled(
            world,
            "Water the plants",
            {"local": "2025-03-02T09:30:00", "zone": "Europe/Paris"},
            reminder(minutes(1)),
            reminder(minutes(2), channel="push", recipient="bob"),
        )
        dated = scheduled(world, "Pay rent", "2025-03-04", reminder(minutes(3)))
        undated = scheduled(world, "Call mum", None, reminder(minutes(4)))
        # An instant with microseconds, written behind the service's back.
        [odd] = insert_intents(
            world.store, undated.id, undated.schedule_revision,
            [minutes(5) + timedelta(microseconds=250_000)], world.alice.id,
        )  # fmt: skip
        fake_clock.advance(timedelta(minutes=6))
        transport = Recorder()

        report = worker(world, transport).drain()

        assert (report.claimed, report.delivered, report.closed) == (5, 5, 0)
        email, push = intent_ids(world.store, timed.id)
        [rent] = intent_ids(world.store, dated.id)
        mum = next(i for i in intent_ids(world.store, undated.id) if i != odd)
        got = {d.job_id: d for d in transport.deliveries}
        # Earliest first.
        assert [d.job_id for d in transport.deliveries] == [
            str(i) for i in (email, push, rent, mum, odd)
        ]
        assert got[str(email)] == Delivery(
            job_id=str(email),
            channel="email",
            destinations=(ALICE_MAIL,),
            recipient="alice",
            recipient_name="Alice",
            recipient_email="alice@example.com",
            title="Reminder: Water the plants",
            body=(
                f"Water the plants\n\nTask {timed.ref} in Home\n"
                "Due: 2025-03-02 09:30 Europe/Paris\n"
                "Reminder at 2025-03-01 12:01 UTC for Alice\n\n"
                f"Reminder ID: {email}"
            ),
            task_id=timed.id,
            task_ref=timed.ref,
            at=minutes(1),
        )
        assert got[str(push)] == Delivery(
            job_id=str(push),
            channel="push",
            destinations=BOB_PUSH,
            recipient="bob",
            recipient_name="Bob",
            recipient_email="bob@example.com",
            title="Reminder: Water the plants",
            body=(
                f"Water the plants\n\nTask {timed.ref} in Home\n"
                "Due: 2025-03-02 09:30 Europe/Paris\n"
                "Reminder at 2025-03-01 12:02 UTC for Bob\n\n"
                f"Reminder ID: {push}"
            ),
            task_id=timed.id,
            task_ref=timed.ref,
            at=minutes(2),
        )
        assert got[str(rent)].body == (
            f"Pay rent\n\nTask {dated.ref} in Home\nDue: 2025-03-04\n"
            f"Reminder at 2025-03-01 12:03 UTC for Alice\n\nReminder ID: {rent}"
        )
        assert got[str(mum)].body == (
            f"Call mum\n\nTask {undated.ref} in Home\n"
            f"Reminder at 2025-03-01 12:04 UTC for Alice\n\nReminder ID: {mum}"
        )
        assert got[str(odd)].body.endswith(
            f"Reminder at 2025-03-01 12:05 UTC for Alice\n\nReminder ID: {odd}"
        )
        for delivery in transport.deliveries:
            assert isinstance(delivery.task_id, UUID)
            assert delivery.at.tzinfo is UTC
            assert intent(world, UUID(delivery.job_id)).status == "delivered"

    def test_compose_builds_the_same_delivery_from_a_claim_and_its_verdict(
        self, world: World, fake_clock: FakeClock
    ) -> None:
        task = scheduled(
            world,
            "Water the plants",
            {"local": "2025-03-02T09:30:00", "zone": "Europe/Paris"},
            reminder(minutes(1)),
        )
        fake_clock.advance(timedelta(minutes=2))
        box = outbox(world)
        [claim] = box.claim("composer")
        verdict = box.verdicts([claim])[claim.id]

        delivery = compose(claim, verdict, [ALICE_MAIL])

        assert delivery == Delivery(
            job_id=str(claim.id),
            channel="email",
            destinations=(ALICE_MAIL,),
            recipient="alice",
            recipient_name="Alice",
            recipient_email="alice@example.com",
            title="Reminder: Water the plants",
            body=(
                f"Water the plants\n\nTask {task.ref} in Home\n"
                "Due: 2025-03-02 09:30 Europe/Paris\n"
                "Reminder at 2025-03-01 12:01 UTC for Alice\n\n"
                f"Reminder ID: {claim.id}"
            ),
            task_id=task.id,
            task_ref=task.ref,
            at=minutes(1),
        )


class TestReadAgain:
    def test_a_verdict_older_than_recheck_after_is_read_again_before_the_next_send(
        self, world: World, fake_clock: FakeClock
    ) -> None:
        first = reminded_task(world, reminder(minutes(1)), title="First")
        later = reminded_task(world, reminder(minutes(2)), task_list=world.work, title="Later")
        fake_clock.advance(timedelta(minutes=3))

        def archive_and_wait(delivery: Delivery) -> None:
            if len(transport.deliveries) == 1:
                world.services.directory.archive(world.alice.id, world.work.id)
                fake_clock.advance(RECHECK_AFTER)

        transport = Recorder(archive_and_wait)
        report = worker(world, transport, monotonic=fake_clock.monotonic).drain()

        [sent] = intent_ids(world.store, first.id)
        [closed] = intent_ids(world.store, later.id)
        assert [d.job_id for d in transport.deliveries] == [str(sent)]
        assert (report.claimed, report.delivered, report.closed) == (2, 1, 1)
        assert report.closed_reasons == {"list-archived": 1}
        found = intent(world, closed)
        assert (found.status, found.closed_reason) == ("closed", "list-archived")

    def test_a_fresh_verdict_is_sent_on(self, world: World, fake_clock: FakeClock) -> None:
        reminded_task(world, reminder(minutes(1)), title="First")
        reminded_task(world, reminder(minutes(2)), task_list=world.work, title="Later")
        fake_clock.advance(timedelta(minutes=3))

        def archive(delivery: Delivery) -> None:
            if len(transport.deliveries) == 1:
                world.services.directory.archive(world.alice.id, world.work.id)

        transport = Recorder(archive)
        report = worker(world, transport, monotonic=fake_clock.monotonic).drain()

        assert (report.claimed, report.delivered, report.closed) == (2, 2, 0)


class TestLeaseMargin:
    def test_a_claim_whose_lease_is_about_to_run_out_is_released_unsent(
        self, world: World, fake_clock: FakeClock
    ) -> None:
        first = reminded_task(world, reminder(minutes(1)), title="First")
        later = reminded_task(world, reminder(minutes(2)), title="Later")
        fake_clock.advance(timedelta(minutes=3))
        claimed_at = fake_clock.now()

        def late(delivery: Delivery) -> None:
            # The wall clock only: less than the margin is left of the lease.
            fake_clock.set(claimed_at + LEASE - LEASE_MARGIN + timedelta(microseconds=1))

        transport = Recorder(late)
        report = worker(world, transport).run_once()

        [sent] = intent_ids(world.store, first.id)
        [released] = intent_ids(world.store, later.id)
        assert [d.job_id for d in transport.deliveries] == [str(sent)]
        assert (report.claimed, report.delivered, report.released) == (2, 1, 1)
        found = intent(world, released)
        assert (found.status, found.attempts, found.lease_owner) == ("pending", 0, None)

    def test_exactly_the_margin_left_is_still_sent(
        self, world: World, fake_clock: FakeClock
    ) -> None:
        reminded_task(world, reminder(minutes(1)), title="First")
        reminded_task(world, reminder(minutes(2)), title="Later")
        fake_clock.advance(timedelta(minutes=3))
        claimed_at = fake_clock.now()

        def late(delivery: Delivery) -> None:
            fake_clock.set(claimed_at + LEASE - LEASE_MARGIN)

        transport = Recorder(late)
        report = worker(world, transport).run_once()

        assert (report.claimed, report.delivered, report.released) == (2, 2, 0)


class TestFailures:
    @pytest.mark.parametrize(
        ("error", "recorded"),
        [
            (DeliveryFailed(f"push: {REFUSED}"), f"push: {REFUSED}"),
            (DeliveryFailed(""), "delivery failed"),
            (RuntimeError("boom"), "RuntimeError: boom"),
        ],
    )  # fmt: skip
    def test_a_failed_or_broken_send_is_retried_with_its_reason(
        self, world: World, fake_clock: FakeClock, error: Exception, recorded: str
    ) -> None:
        task = reminded_task(world, reminder(minutes(1), channel="push", recipient="bob"))
        fake_clock.advance(timedelta(minutes=2))

        def fail(delivery: Delivery) -> None:
            raise error

        report = worker(world, Recorder(fail)).drain()

        assert (report.claimed, report.delivered, report.retried) == (1, 0, 1)
        [intent_id] = intent_ids(world.store, task.id)
        found = intent(world, intent_id)
        assert (found.status, found.last_error, found.attempts) == ("pending", recorded, 1)

    def test_a_failed_send_on_the_last_attempt_counts_dead_not_retried(
        self, world: World, fake_clock: FakeClock
    ) -> None:
        task = reminded_task(world, reminder(minutes(1), channel="push", recipient="bob"))
        fake_clock.advance(timedelta(minutes=2))
        [intent_id] = intent_ids(world.store, task.id)
        with world.store.transaction() as conn:
            conn.execute(update(ri).values(attempts=MAX_ATTEMPTS - 1))

        def fail(delivery: Delivery) -> None:
            raise DeliveryFailed(f"push: {REFUSED}")

        report = worker(world, Recorder(fail)).drain()

        assert (report.claimed, report.retried, report.dead) == (1, 0, 1)
        assert report.to_json()["dead"] == 1
        assert intent(world, intent_id).status == "dead"

    def test_a_lease_run_out_after_the_last_attempt_counts_dead_not_closed(
        self, world: World, fake_clock: FakeClock
    ) -> None:
        task = reminded_task(world, reminder(minutes(1), channel="push", recipient="bob"))
        fake_clock.advance(timedelta(minutes=2))
        [intent_id] = intent_ids(world.store, task.id)
        with world.store.transaction() as conn:
            conn.execute(update(ri).values(attempts=MAX_ATTEMPTS - 1))
        assert len(outbox(world).claim("crashed", limit=1)) == 1  # the fifth attempt, lost
        fake_clock.advance(LEASE + timedelta(seconds=1))

        report = worker(world, Recorder()).drain()

        assert (report.claimed, report.closed, report.dead) == (0, 0, 1)
        assert report.closed_reasons == {}
        assert intent(world, intent_id).status == "dead"

    def test_a_recipient_without_a_destination_on_the_channel_is_retried(
        self, world: World, fake_clock: FakeClock
    ) -> None:
        # carol has no destination at all.
        task = reminded_task(world, reminder(minutes(1), recipient="carol"))
        fake_clock.advance(timedelta(minutes=2))
        transport = Recorder()

        report = worker(world, transport).drain()

        assert transport.deliveries == []
        assert (report.claimed, report.retried) == (1, 1)
        [intent_id] = intent_ids(world.store, task.id)
        assert intent(world, intent_id).last_error == (
            "carol has no email destination in their settings"
        )


class TestReasonsFoundAtDelivery:
    @pytest.mark.parametrize(
        ("change", "reason"),
        [
            ("bump-revision", "stale-schedule"),
            ("mark-done", "task-completed"),
            ("trash-parent", "task-trashed"),
        ],
    )
    def test_a_change_behind_the_services_back_closes_the_claim_with_its_reason(
        self, world: World, fake_clock: FakeClock, change: str, reason: str
    ) -> None:
        other = reminded_task(world, reminder(minutes(1)), title="Other")
        parent = world.tasks.create(world.alice.id, world.home.id, "Parent")
        item = reminded_task(world, reminder(minutes(2)), title="Item", parent=parent)
        fake_clock.advance(timedelta(minutes=3))

        def meddle(delivery: Delivery) -> None:
            """After the claim and its first check: the item changes, the verdict ages."""
            if len(transport.deliveries) > 1:
                return
            with world.store.transaction() as conn:
                if change == "bump-revision":
                    bump = {"schedule_revision": tasks.c.schedule_revision + 1}
                    conn.execute(update(tasks).where(tasks.c.id == item.id).values(**bump))
                elif change == "mark-done":
                    done = update(tasks).where(tasks.c.id == item.id).values(status="completed")
                    conn.execute(done)
                else:
                    conn.execute(update(tasks).where(tasks.c.id == parent.id).values(trashed=True))
            fake_clock.advance(RECHECK_AFTER)

        transport = Recorder(meddle)
        report = worker(world, transport, monotonic=fake_clock.monotonic).drain()

        [closed] = intent_ids(world.store, item.id)
        [sent] = intent_ids(world.store, other.id)
        assert [d.job_id for d in transport.deliveries] == [str(sent)]
        assert report.closed_reasons == {reason: 1}
        assert (report.claimed, report.delivered, report.closed) == (2, 1, 1)
        found = intent(world, closed)
        assert (found.status, found.closed_reason) == ("closed", reason)

    def test_a_reason_found_at_the_claim_closes_the_intent_before_any_send(
        self, world: World, fake_clock: FakeClock
    ) -> None:
        parent = world.tasks.create(world.alice.id, world.home.id, "Parent")
        item = reminded_task(world, reminder(minutes(1)), title="Item", parent=parent)
        with world.store.transaction() as conn:
            conn.execute(update(tasks).where(tasks.c.id == parent.id).values(trashed=True))
        fake_clock.advance(timedelta(minutes=2))
        transport = Recorder()

        report = worker(world, transport).drain()

        assert transport.deliveries == []
        assert (report.claimed, report.closed, report.closed_reasons) == (
            1,
            1,
            {"task-trashed": 1},
        )
        [closed] = intent_ids(world.store, item.id)
        assert intent(world, closed).closed_reason == "task-trashed"

    def test_the_claim_closes_a_stale_intent_before_any_check(
        self, world: World, fake_clock: FakeClock
    ) -> None:
        task = reminded_task(world, reminder(minutes(1)))
        bump_schedule_revision(world.store, task.id)
        fake_clock.advance(timedelta(minutes=2))

        report = worker(world, Recorder()).drain()

        assert (report.claimed, report.closed, report.closed_reasons) == (
            0,
            1,
            {"stale-schedule": 1},
        )
