"""AppriseTransport against real receivers: plain SMTP (aiosmtpd) and HTTP (json://, ntfy://).

Every message carries the reminder's idempotency key in its last body line;
e-mail and json:// carry it as the ``Idempotency-Key`` and ``X-Kalends-Reminder``
headers too (ntfy takes no custom headers). Failures raise DeliveryFailed with
one line that keeps the URLs' secrets out.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import UTC, datetime
from uuid import UUID

import pytest

from kalends.reminders.transports import (
    AppriseTransport,
    Delivery,
    DeliveryFailed,
    NullTransport,
    Transport,
    body_with_key,
    redacted_url,
)

from .conftest import HttpReceiver, SmtpServer

JOB_ID = "0f8fad5b-d9cb-469f-a165-70867728950e"
KEY_LINE = f"Reminder ID: {JOB_ID}"
# Short timeouts: every receiver is local.
FAST = {"connect_timeout": 2.0, "read_timeout": 5.0, "service_timeout": 15.0}


def delivery(channel: str, *destinations: str, body: str = "Water the plants.") -> Delivery:
    return Delivery(
        job_id=JOB_ID,
        channel=channel,
        destinations=destinations,
        recipient="alice",
        recipient_name="Alice",
        recipient_email="alice@example.com",
        title="Reminder: Water the plants",
        body=body,
        task_id=UUID("6b1c7c1e-1f7e-4d8a-9f5e-1d2c3b4a5968"),
        task_ref="K7Q2XW",
        at=datetime(2026, 3, 10, 8, 0, tzinfo=UTC),
    )


@pytest.fixture
def transport() -> AppriseTransport:
    return AppriseTransport(**FAST)


class TestEmail:
    def test_a_reminder_arrives_with_its_subject_body_recipient_and_key(
        self, transport: AppriseTransport, smtp_server: SmtpServer
    ) -> None:
        transport.send(delivery("email", smtp_server.url("alice@example.com")))

        [mail] = smtp_server.messages
        assert mail.rcpt_tos == ("alice@example.com",)
        assert mail.mail_from == smtp_server.sender
        assert mail.subject == "Reminder: Water the plants"
        assert mail.text.startswith("Water the plants.")
        assert mail.text.rstrip().splitlines()[-1] == KEY_LINE
        # The e-mail plugin takes custom headers: the key travels as headers too.
        assert mail.message["Idempotency-Key"] == JOB_ID
        assert mail.message["X-Kalends-Reminder"] == JOB_ID
        assert mail.message["X-Application"] == "kalends"

    def test_every_destination_of_the_channel_gets_the_reminder(
        self, transport: AppriseTransport, smtp_server: SmtpServer
    ) -> None:
        transport.send(
            delivery(
                "email",
                smtp_server.url("alice@example.com"),
                smtp_server.url("alice.work@example.com"),
            )
        )

        received = sorted(m.rcpt_tos for m in smtp_server.messages)
        assert received == [("alice.work@example.com",), ("alice@example.com",)]
        assert all(m.message["Idempotency-Key"] == JOB_ID for m in smtp_server.messages)

    def test_a_body_that_already_ends_with_the_key_keeps_it_once(
        self, transport: AppriseTransport, smtp_server: SmtpServer
    ) -> None:
        body = f"Water the plants.\n\n{KEY_LINE}\n"
        transport.send(delivery("email", smtp_server.url("alice@example.com"), body=body))

        [mail] = smtp_server.messages
        assert mail.text.count("Reminder ID:") == 1

    def test_a_header_the_url_sets_is_kept_and_ours_win(
        self, transport: AppriseTransport, smtp_server: SmtpServer
    ) -> None:
        url = smtp_server.url(
            "alice@example.com", **{"+X-Team": "ops", "+Idempotency-Key": "forged"}
        )
        transport.send(delivery("email", url))

        [mail] = smtp_server.messages
        assert mail.message["X-Team"] == "ops"
        assert mail.message.get_all("Idempotency-Key") == [JOB_ID]

    def test_a_refused_connection_fails_without_the_password(
        self, transport: AppriseTransport, closed_port: int
    ) -> None:
        url = (
            f"mailto://alice:hunter2secret@127.0.0.1:{closed_port}/alice@example.com"
            "?from=kalends@example.org&mode=insecure"
        )
        with pytest.raises(DeliveryFailed) as failed:
            transport.send(delivery("email", url))

        message = str(failed.value)
        assert message.startswith("email: destination 1 (E-Mail): ")
        assert "hunter2secret" not in message
        assert "\n" not in message
        assert failed.value.delivered == 0


class TestHttp:
    def test_json_gets_the_title_body_and_key_as_headers(
        self, transport: AppriseTransport, http_receiver: HttpReceiver
    ) -> None:
        transport.send(delivery("push", http_receiver.json_url("hooks/kalends")))

        [request] = http_receiver.received()
        assert (request.method, request.path) == ("POST", "/hooks/kalends")
        assert request.header("Idempotency-Key") == JOB_ID
        assert request.header("X-Kalends-Reminder") == JOB_ID
        payload = request.json()
        assert payload["title"] == "Reminder: Water the plants"
        assert payload["message"] == f"Water the plants.\n\n{KEY_LINE}"

    def test_ntfy_gets_the_key_in_the_body(
        self, transport: AppriseTransport, http_receiver: HttpReceiver
    ) -> None:
        transport.send(delivery("push", http_receiver.ntfy_url("alice-reminders")))

        [request] = http_receiver.received()
        assert request.method == "POST"
        payload = request.json()
        assert payload["topic"] == "alice-reminders"
        assert payload["title"] == "Reminder: Water the plants"
        assert payload["message"].splitlines()[-1] == KEY_LINE
        # Apprise's ntfy plugin takes no custom headers: the body carries the key.
        assert request.header("Idempotency-Key") is None

    def test_one_delivery_reaches_json_and_ntfy_alike(
        self, transport: AppriseTransport, http_receiver: HttpReceiver
    ) -> None:
        transport.send(delivery("push", http_receiver.json_url(), http_receiver.ntfy_url()))

        requests = http_receiver.received()
        assert len(requests) == 2
        assert all(r.json()["message"].endswith(KEY_LINE) for r in requests)

    def test_a_server_error_fails_the_delivery_without_secrets(
        self, transport: AppriseTransport, http_receiver: HttpReceiver
    ) -> None:
        http_receiver.status = 500
        json_url = http_receiver.json_url().replace("json://", "json://bot:s3cr3tpass@")
        ntfy_url = http_receiver.ntfy_url(auth="token").replace(
            "ntfy://", "ntfy://tk_0123456789abcdefghijklmnopqrst@"
        )

        with pytest.raises(DeliveryFailed) as failed:
            transport.send(delivery("push", json_url, ntfy_url))

        message = str(failed.value)
        assert message.startswith("push: 2 of 2 destinations failed: destination 1 (JSON): ")
        assert "error=500" in message
        assert "destination 2 (ntfy)" in message
        for secret in ("s3cr3tpass", "tk_0123456789abcdefghijklmnopqrst", "0123456789abcdef"):
            assert secret not in message
        assert "\n" not in message
        # The server was reached both times: the failure is its answer.
        assert len(http_receiver.received()) == 2

    def test_a_partial_failure_fails_and_counts_what_was_delivered(
        self, transport: AppriseTransport, http_receiver: HttpReceiver, closed_port: int
    ) -> None:
        dead = f"json://127.0.0.1:{closed_port}/hook"

        with pytest.raises(DeliveryFailed) as failed:
            transport.send(delivery("push", http_receiver.json_url(), dead))

        assert failed.value.delivered == 1
        assert str(failed.value).startswith("push: 1 of 2 destinations failed: destination 2")
        assert len(http_receiver.received()) == 1

    def test_a_refused_connection_fails(
        self, transport: AppriseTransport, closed_port: int
    ) -> None:
        url = f"ntfys://reader:pa55word-xyz@127.0.0.1:{closed_port}/topic"
        with pytest.raises(DeliveryFailed) as failed:
            transport.send(delivery("push", url))

        message = str(failed.value)
        assert message.startswith("push: destination 1 (ntfy): ")
        assert "pa55word-xyz" not in message

    def test_a_destination_slower_than_the_read_timeout_fails(
        self, http_receiver: HttpReceiver
    ) -> None:
        http_receiver.delay = 1.0
        transport = AppriseTransport(connect_timeout=1.0, read_timeout=0.2)

        with pytest.raises(DeliveryFailed, match=r"^push: destination 1 \(JSON\): "):
            transport.send(delivery("push", http_receiver.json_url()))

    def test_timeouts_the_url_sets_win_over_the_transports(
        self, http_receiver: HttpReceiver
    ) -> None:
        http_receiver.delay = 0.5
        transport = AppriseTransport(connect_timeout=1.0, read_timeout=0.2)

        transport.send(delivery("push", http_receiver.json_url(rto="5")))

        assert len(http_receiver.received()) == 1


class TestThreads:
    def test_worker_threads_may_share_one_transport(
        self, transport: AppriseTransport, http_receiver: HttpReceiver
    ) -> None:
        errors: list[BaseException] = []

        def send_five(worker: int) -> None:
            try:
                for n in range(5):
                    one = delivery("push", http_receiver.json_url(f"w{worker}"))
                    transport.send(replace(one, job_id=f"job-{worker}-{n}"))
            except BaseException as error:
                errors.append(error)

        threads = [threading.Thread(target=send_five, args=(w,)) for w in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert errors == []
        received = http_receiver.received()
        keys = sorted(r.header("Idempotency-Key") or "" for r in received)
        assert keys == sorted(f"job-{w}-{n}" for w in range(4) for n in range(5))
        for request in received:
            key = request.header("Idempotency-Key")
            assert request.json()["message"].endswith(f"Reminder ID: {key}")
            assert request.path == f"/w{key.split('-')[1] if key else ''}"


class TestRefusedBeforeSending:
    def test_no_destination(self, transport: AppriseTransport) -> None:
        with pytest.raises(DeliveryFailed, match=r"^no push destination$"):
            transport.send(delivery("push"))
        with pytest.raises(DeliveryFailed, match=r"^no email destination$"):
            transport.send(delivery("email"))

    def test_a_url_apprise_cannot_use_is_named_by_its_scheme_only(
        self, transport: AppriseTransport
    ) -> None:
        with pytest.raises(DeliveryFailed) as failed:
            transport.send(delivery("push", "sms://+15551234567:topsecret@gateway"))

        message = str(failed.value)
        assert message == "push: destination 1: Apprise cannot use this sms:// URL"


class TestHelpers:
    def test_body_with_key(self) -> None:
        assert body_with_key("Hi", "k1") == "Hi\n\nReminder ID: k1"
        assert body_with_key("Hi\nReminder ID: k1\n", "k1") == "Hi\nReminder ID: k1"
        assert body_with_key("", "k1") == "Reminder ID: k1"
        # Another reminder's key is not this one's.
        assert body_with_key("Reminder ID: k0", "k1").endswith("Reminder ID: k0\n\nReminder ID: k1")

    def test_redacted_url_hides_passwords_and_tokens(self) -> None:
        assert "secret" not in redacted_url("mailto://user:secret@example.com")
        assert "****" in redacted_url("mailto://user:secret@example.com")
        shown = redacted_url(
            "pover://uQiRzpo4DXghDmr9QzzfQu27cmVRsG@azGDORePK8gMaC0QOYAMyEEuzJnyUi"
        )
        assert "uQiRzpo4DXghDmr9QzzfQu27cmVRsG" not in shown
        assert "azGDORePK8gMaC0QOYAMyEEuzJnyUi" not in shown
        assert redacted_url("sms://whatever:secret@x") == "sms://****"

    def test_delivery_repr_hides_destinations(self) -> None:
        text = repr(delivery("email", "mailto://user:secret@example.com"))
        assert "secret" not in text
        assert JOB_ID in text


class TestNullTransport:
    def test_it_counts_every_send_from_every_thread(self) -> None:
        null = NullTransport()
        transport: Transport = null
        one = delivery("push", "ntfy://example.com/topic")

        def send_many() -> None:
            for _ in range(250):
                transport.send(one)

        threads = [threading.Thread(target=send_many) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert null.sent == 1000
        # Even a delivery without destinations is accepted: nothing leaves.
        transport.send(replace(one, destinations=()))
        assert null.sent == 1001


def test_the_transports_meet_the_protocol() -> None:
    transports: list[Transport] = [AppriseTransport(), NullTransport()]
    assert len(transports) == 2
