"""The delivery worker end to end, with real parts only.

Actors set their destinations through :class:`Destinations`; a task's reminders are
set through the task service; the fake clock moves past the reminder instants; then
``DeliveryWorker(store, AppriseTransport(), owner=...)`` delivers to a real SMTP
server (aiosmtpd) and a real HTTP server (json:// and ntfy://) on 127.0.0.1, and
the outbox records the outcome. Runs on SQLite and, when reachable, PostgreSQL.

The world: alice owns the list Home, bob edits it. The task "Water the plants" is
due 2025-03-01 16:00 Paris; alice is reminded by e-mail at 13:05 and bob by push at
13:10 (the fake clock starts at 13:00 Paris, 12:00 UTC).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import timedelta
from uuid import UUID

import pytest

from kalends.bootstrap import Services, build
from kalends.clock import FakeClock
from kalends.reminders.destinations import Destinations
from kalends.reminders.outbox import MAX_ATTEMPTS, Intent, Outbox, backoff
from kalends.reminders.transports import AppriseTransport, Delivery, Transport
from kalends.reminders.worker import BatchReport, DeliveryWorker
from kalends.storage.testing import FAKE_CLOCK_START
from kalends.storage.unit_of_work import Store
from kalends.tasks import Actor, Task, TaskList, parse_schedule

from .conftest import HttpReceiver, SmtpServer

ZONE = "Europe/Paris"
TITLE = "Water the plants"
EMAIL_AT = FAKE_CLOCK_START + timedelta(minutes=5)
PUSH_AT = FAKE_CLOCK_START + timedelta(minutes=10)
# Past both reminder instants.
PAST_BOTH = timedelta(minutes=15)
# Short timeouts: every receiver is local.
FAST = {"connect_timeout": 2.0, "read_timeout": 5.0, "service_timeout": 15.0}
ALICE_MAIL = "alice@example.com"


@dataclass
class World:
    services: Services
    fake_clock: FakeClock
    alice: Actor
    bob: Actor
    home: TaskList
    task: Task

    @property
    def store(self) -> Store:
        return self.services.store

    @property
    def destinations(self) -> Destinations:
        return Destinations(self.store)

    @property
    def outbox(self) -> Outbox:
        return Outbox(self.store)

    def worker(self, transport: Transport | None = None, batch: int = 100) -> DeliveryWorker:
        sender = AppriseTransport(**FAST) if transport is None else transport
        return DeliveryWorker(self.store, sender, owner="t", batch=batch)

    def intents(self) -> dict[str, Intent]:
        """The task's live-or-settled intents by channel (one per channel here)."""
        found = self.outbox.list(self.alice.id, task=self.task.id)
        assert len({i.channel for i in found}) == len(found)
        return {i.channel: i for i in found}

    def intent(self, channel: str) -> Intent:
        return self.intents()[channel]


@pytest.fixture
def world(store: Store, fake_clock: FakeClock) -> World:
    services = build(store)
    directory = services.directory
    alice = directory.add_actor("alice", "Alice", ALICE_MAIL)
    bob = directory.add_actor("bob", "Bob")
    home = directory.create_list(alice.id, "Home")
    directory.share(alice.id, home.id, bob.id, "editor")
    task = services.tasks.create(alice.id, home.id, TITLE)
    handles = {"alice": alice.id, "bob": bob.id}
    schedule = parse_schedule(
        {
            "due": {"local": "2025-03-01T16:00:00", "zone": ZONE},
            "reminders": [
                {"channel": "email", "local": "2025-03-01T13:05:00", "zone": ZONE},
                {
                    "channel": "push",
                    "local": "2025-03-01T13:10:00",
                    "zone": ZONE,
                    "recipient": "bob",
                },
            ],
        },
        lambda value, field: handles["alice" if value is None else str(value)],
    )
    task = services.tasks.set_schedule(alice.id, task.id, task.revision, schedule)
    return World(services, fake_clock, alice, bob, home, task)


def key_line(intent_id: UUID) -> str:
    return f"Reminder ID: {intent_id}"


# --------------------------------------------------------------------------- delivery


class TestDelivery:
    def test_due_reminders_reach_the_smtp_server_and_the_http_receivers(
        self, world: World, smtp_server: SmtpServer, http_receiver: HttpReceiver
    ) -> None:
        world.destinations.set(
            world.alice.id, world.alice.id, "email", [smtp_server.url(ALICE_MAIL)]
        )
        world.destinations.set(
            world.bob.id,
            world.bob.id,
            "push",
            [http_receiver.json_url("hooks/bob"), http_receiver.ntfy_url("bob-reminders")],
        )
        worker = world.worker()

        # Nothing is due yet: nothing is claimed, nothing sent.
        early = worker.drain()
        assert early.claimed == 0
        assert smtp_server.messages == [] and http_receiver.received() == []

        world.fake_clock.advance(PAST_BOTH)
        report = worker.drain()

        assert report.to_json() == {
            "claimed": 2,
            "delivered": 2,
            "retried": 0,
            "dead": 0,
            "closed": 0,
            "closed_reasons": {},
            "released": 0,
            "lost_acks": 0,
        }
        email, push = world.intent("email"), world.intent("push")

        [mail] = smtp_server.messages
        assert mail.rcpt_tos == (ALICE_MAIL,)
        assert mail.subject == f"Reminder: {TITLE}"
        assert mail.text.startswith(TITLE)
        assert f"Task {world.task.ref} in Home" in mail.text
        assert "Due: 2025-03-01 16:00 Europe/Paris" in mail.text
        # The reminder's time as alice reads it: the wall time in its zone (issue 17).
        assert "Reminder at 2025-03-01 13:05 Europe/Paris for Alice" in mail.text
        assert mail.text.rstrip().splitlines()[-1] == key_line(email.id)
        assert mail.message["Idempotency-Key"] == str(email.id)
        assert mail.message["X-Kalends-Reminder"] == str(email.id)

        requests = http_receiver.received()
        assert len(requests) == 2
        [hook] = [r for r in requests if r.path == "/hooks/bob"]
        assert hook.header("Idempotency-Key") == str(push.id)
        assert hook.header("X-Kalends-Reminder") == str(push.id)
        payload = hook.json()
        assert payload["title"] == f"Reminder: {TITLE}"
        assert f"Task {world.task.ref} in Home" in payload["message"]
        assert "for Bob" in payload["message"]
        assert payload["message"].splitlines()[-1] == key_line(push.id)
        [ntfy] = [r for r in requests if r.path != "/hooks/bob"]
        ntfy_payload = ntfy.json()
        assert ntfy_payload["topic"] == "bob-reminders"
        assert ntfy_payload["title"] == f"Reminder: {TITLE}"
        assert ntfy_payload["message"].splitlines()[-1] == key_line(push.id)

        now = world.fake_clock.now()
        for intent in (email, push):
            assert intent.status == "delivered"
            assert intent.delivered_at == now
            assert intent.attempts == 1
            assert intent.last_error is None
            assert intent.to_json()["lease_owner"] is None

        # Delivered once: a second drain sends nothing.
        assert worker.drain().claimed == 0
        assert len(smtp_server.messages) == 1 and len(http_receiver.received()) == 2

    def test_only_what_is_due_is_sent_and_the_rest_waits_for_its_instant(
        self, world: World, smtp_server: SmtpServer, http_receiver: HttpReceiver
    ) -> None:
        world.destinations.set(
            world.alice.id, world.alice.id, "email", [smtp_server.url(ALICE_MAIL)]
        )
        world.destinations.set(world.bob.id, world.bob.id, "push", [http_receiver.json_url()])
        worker = world.worker()

        world.fake_clock.advance(timedelta(minutes=7))  # past 13:05, before 13:10
        assert worker.drain().delivered == 1
        assert len(smtp_server.messages) == 1 and http_receiver.received() == []
        assert world.intent("push").status == "pending"
        assert world.outbox.next_due() == PUSH_AT

        world.fake_clock.advance(timedelta(minutes=3))
        assert worker.drain().delivered == 1
        assert len(http_receiver.received()) == 1
        assert {i.status for i in world.intents().values()} == {"delivered"}

    def test_small_batches_deliver_everything_in_turn(
        self, world: World, smtp_server: SmtpServer, http_receiver: HttpReceiver
    ) -> None:
        world.destinations.set(
            world.alice.id, world.alice.id, "email", [smtp_server.url(ALICE_MAIL)]
        )
        world.destinations.set(world.bob.id, world.bob.id, "push", [http_receiver.json_url()])
        world.fake_clock.advance(PAST_BOTH)

        report = world.worker(batch=1).drain()

        assert (report.claimed, report.delivered) == (2, 2)
        assert len(smtp_server.messages) == 1 and len(http_receiver.received()) == 1


# --------------------------------------------------------------------------- ineligible


class TestIneligible:
    @pytest.mark.parametrize(
        ("change", "reason"),
        [
            ("archive-list", "list-archived"),
            ("remove-bob", "recipient-not-a-member"),
        ],
    )
    def test_an_intent_no_longer_eligible_is_closed_with_its_reason_and_never_sent(
        self,
        world: World,
        smtp_server: SmtpServer,
        http_receiver: HttpReceiver,
        change: str,
        reason: str,
    ) -> None:
        world.destinations.set(
            world.alice.id, world.alice.id, "email", [smtp_server.url(ALICE_MAIL)]
        )
        world.destinations.set(world.bob.id, world.bob.id, "push", [http_receiver.json_url()])
        directory = world.services.directory
        if change == "archive-list":
            directory.archive(world.alice.id, world.home.id)
        else:
            directory.share(world.alice.id, world.home.id, world.bob.id, None)
        world.fake_clock.advance(PAST_BOTH)

        report = world.worker().drain()

        assert http_receiver.received() == []
        push = world.intent("push")
        assert (push.status, push.closed_reason) == ("closed", reason)
        assert push.to_json()["next_attempt_at"] is None
        if change == "archive-list":
            # Both reminders of an archived list's task are closed.
            assert smtp_server.messages == []
            assert report.closed_reasons == {reason: 2}
            assert world.intent("email").closed_reason == reason
        else:
            # alice is still a member: her e-mail goes.
            assert len(smtp_server.messages) == 1
            assert report.closed_reasons == {reason: 1}
            assert world.intent("email").status == "delivered"
        assert report.claimed == 2 and report.retried == 0

    def test_a_completed_task_cancels_its_reminders_before_any_worker_sees_them(
        self, world: World, smtp_server: SmtpServer, http_receiver: HttpReceiver
    ) -> None:
        world.destinations.set(
            world.alice.id, world.alice.id, "email", [smtp_server.url(ALICE_MAIL)]
        )
        world.destinations.set(world.bob.id, world.bob.id, "push", [http_receiver.json_url()])
        world.services.tasks.complete(world.alice.id, world.task.id, world.task.revision)
        world.fake_clock.advance(PAST_BOTH)

        report = world.worker().drain()

        assert report.claimed == 0
        assert smtp_server.messages == [] and http_receiver.received() == []
        assert {(i.status, i.closed_reason) for i in world.intents().values()} == {
            ("cancelled", "task-completed")
        }

    def test_a_batch_of_expired_reminders_does_not_end_the_drain_early(
        self, world: World, smtp_server: SmtpServer, http_receiver: HttpReceiver
    ) -> None:
        world.destinations.set(
            world.alice.id, world.alice.id, "email", [smtp_server.url(ALICE_MAIL)]
        )
        world.destinations.set(world.bob.id, world.bob.id, "push", [http_receiver.json_url()])
        # A reminder two days old (a worker was down): due first, and expired.
        old = world.services.tasks.create(world.alice.id, world.home.id, "Old news")
        schedule = parse_schedule(
            {"reminders": [{"channel": "email", "local": "2025-02-27T12:00:00", "zone": ZONE}]},
            lambda value, field: world.alice.id,
        )
        world.services.tasks.set_schedule(world.alice.id, old.id, old.revision, schedule)
        world.fake_clock.advance(PAST_BOTH)

        # A batch of one: the first claim only closes the expired reminder.
        report = world.worker(batch=1).drain()

        [expired] = world.outbox.list(world.alice.id, task=old.id)
        assert (expired.status, expired.closed_reason) == ("closed", "expired")
        assert {i.status for i in world.intents().values()} == {"delivered"}
        assert report.delivered == 2
        assert len(smtp_server.messages) == 1 and len(http_receiver.received()) == 1

    def test_a_reminder_a_day_late_is_closed_as_expired_not_sent(
        self, world: World, smtp_server: SmtpServer
    ) -> None:
        world.destinations.set(
            world.alice.id, world.alice.id, "email", [smtp_server.url(ALICE_MAIL)]
        )
        world.fake_clock.advance(timedelta(days=1, minutes=6))  # the e-mail's instant + 1 day

        world.worker().drain()

        assert smtp_server.messages == []
        email = world.intent("email")
        assert (email.status, email.closed_reason) == ("closed", "expired")


# --------------------------------------------------------------------------- failures


class TestFailures:
    @pytest.mark.parametrize("failure", ["http-500", "closed-port"])
    def test_a_failing_destination_is_retried_with_backoff_then_dead(
        self,
        world: World,
        smtp_server: SmtpServer,
        http_receiver: HttpReceiver,
        closed_port: int,
        failure: str,
    ) -> None:
        world.destinations.set(
            world.alice.id, world.alice.id, "email", [smtp_server.url(ALICE_MAIL)]
        )
        if failure == "http-500":
            http_receiver.status = 500
            url = http_receiver.json_url("hooks/bob")
        else:
            url = f"json://127.0.0.1:{closed_port}/hooks/bob"
        world.destinations.set(world.bob.id, world.bob.id, "push", [url])
        worker = world.worker()
        world.fake_clock.advance(PAST_BOTH)

        for attempt in range(1, MAX_ATTEMPTS + 1):
            report = worker.drain()
            # alice's e-mail goes the first time; bob's push fails every time, the last
            # time for good: dead, not retried.
            expected = (2, 1, 1) if attempt == 1 else (1, 0, 1)
            if attempt == MAX_ATTEMPTS:
                expected = (1, 0, 0)
            assert (report.claimed, report.delivered, report.retried) == expected, attempt
            assert report.dead == (attempt == MAX_ATTEMPTS), attempt
            push = world.intent("push")
            assert push.attempts == attempt
            assert push.last_error is not None
            assert push.last_error.startswith("push: destination 1 (JSON)")
            if attempt == MAX_ATTEMPTS:
                break
            assert push.status == "pending"
            assert push.next_attempt_at == world.fake_clock.now() + backoff(attempt)
            # Not before its time.
            world.fake_clock.advance(backoff(attempt) - timedelta(seconds=1))
            assert worker.drain().claimed == 0
            world.fake_clock.advance(timedelta(seconds=1))

        dead = world.intent("push")
        assert dead.status == "dead"
        assert dead.to_json()["next_attempt_at"] is None
        world.fake_clock.advance(timedelta(hours=2))
        assert worker.drain().claimed == 0
        if failure == "http-500":
            # Every attempt reached the receiver, each with the same idempotency key.
            keys = [r.header("Idempotency-Key") for r in http_receiver.received()]
            assert keys == [str(dead.id)] * MAX_ATTEMPTS

    def test_a_dead_reminder_retried_by_its_recipient_is_delivered_once_the_receiver_answers(
        self, world: World, http_receiver: HttpReceiver
    ) -> None:
        http_receiver.status = 500
        world.destinations.set(world.bob.id, world.bob.id, "push", [http_receiver.json_url()])
        worker = world.worker()
        world.fake_clock.advance(PAST_BOTH)
        for _ in range(MAX_ATTEMPTS):
            worker.drain()
            world.fake_clock.advance(timedelta(hours=1))
        assert world.intent("push").status == "dead"

        http_receiver.status = 200
        requeued = world.outbox.requeue(world.bob.id, world.intent("push").id)
        assert (requeued.status, requeued.attempts) == ("pending", 0)
        report = worker.drain()

        assert report.delivered == 1
        assert world.intent("push").status == "delivered"
        assert len(http_receiver.received()) == MAX_ATTEMPTS + 1

    def test_a_recipient_without_a_destination_is_retried_with_a_clear_error(
        self, world: World, smtp_server: SmtpServer, http_receiver: HttpReceiver
    ) -> None:
        world.destinations.set(
            world.alice.id, world.alice.id, "email", [smtp_server.url(ALICE_MAIL)]
        )
        # bob has an e-mail destination but no push one: his reminder is a push.
        world.destinations.set(world.bob.id, world.bob.id, "email", [smtp_server.url("b@x.org")])
        worker = world.worker()
        world.fake_clock.advance(PAST_BOTH)

        report = worker.drain()

        assert (report.claimed, report.delivered, report.retried) == (2, 1, 1)
        push = world.intent("push")
        assert push.status == "pending"
        assert push.last_error == "bob has no push destination in their settings"
        assert push.next_attempt_at == world.fake_clock.now() + backoff(1)
        assert [m.rcpt_tos for m in smtp_server.messages] == [(ALICE_MAIL,)]

        # Once bob sets one, the next attempt reaches it.
        world.destinations.set(world.bob.id, world.bob.id, "push", [http_receiver.json_url()])
        world.fake_clock.advance(backoff(1))
        assert worker.drain().delivered == 1
        [request] = http_receiver.received()
        assert request.header("Idempotency-Key") == str(push.id)
        delivered = world.intent("push")
        assert (delivered.status, delivered.attempts) == ("delivered", 2)


# --------------------------------------------------------------------------- stopping


class _StopAfterFirstSend:
    """A real transport that asks the worker to stop once its first send is done."""

    def __init__(self, inner: AppriseTransport, stop: threading.Event) -> None:
        self.inner = inner
        self.stop = stop
        self.sent: list[str] = []

    def send(self, delivery: Delivery) -> None:
        self.inner.send(delivery)
        self.sent.append(delivery.job_id)
        self.stop.set()


class TestStop:
    def test_a_stop_before_the_sends_releases_every_claim_unsent(
        self, world: World, smtp_server: SmtpServer, http_receiver: HttpReceiver
    ) -> None:
        world.destinations.set(
            world.alice.id, world.alice.id, "email", [smtp_server.url(ALICE_MAIL)]
        )
        world.destinations.set(world.bob.id, world.bob.id, "push", [http_receiver.json_url()])
        world.fake_clock.advance(PAST_BOTH)
        stop = threading.Event()
        stop.set()
        worker = world.worker()

        report = worker.run_once(stop)

        assert (report.claimed, report.released, report.delivered) == (2, 2, 0)
        assert smtp_server.messages == [] and http_receiver.received() == []
        for intent in world.intents().values():
            assert intent.status == "pending"
            assert intent.attempts == 0  # the attempt is given back
            assert intent.lease_owner is None and intent.lease_expires_at is None
            assert intent.next_attempt_at == world.fake_clock.now()
        # drain and run with the stop already set claim nothing at all.
        assert worker.drain(stop).claimed == 0
        assert worker.run(stop).claimed == 0
        assert {i.status for i in world.intents().values()} == {"pending"}

        # Another worker delivers them.
        assert world.worker().drain().delivered == 2

    def test_a_stop_during_a_batch_finishes_the_send_acknowledges_it_and_releases_the_rest(
        self, world: World, smtp_server: SmtpServer, http_receiver: HttpReceiver
    ) -> None:
        world.destinations.set(
            world.alice.id, world.alice.id, "email", [smtp_server.url(ALICE_MAIL)]
        )
        world.destinations.set(world.bob.id, world.bob.id, "push", [http_receiver.json_url()])
        world.fake_clock.advance(PAST_BOTH)
        stop = threading.Event()
        transport = _StopAfterFirstSend(AppriseTransport(**FAST), stop)

        report = world.worker(transport).run(stop)

        assert isinstance(report, BatchReport)
        assert (report.claimed, report.delivered, report.released) == (2, 1, 1)
        # Claims come earliest first: the e-mail (13:05) went, the push (13:10) was released.
        email, push = world.intent("email"), world.intent("push")
        assert transport.sent == [str(email.id)]
        assert len(smtp_server.messages) == 1 and http_receiver.received() == []
        assert email.status == "delivered"
        assert (push.status, push.attempts, push.lease_owner) == ("pending", 0, None)
