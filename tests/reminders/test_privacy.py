"""What of a destination URL is shown, and what Apprise's logs keep of it: never a secret."""

from __future__ import annotations

import logging

import pytest

from kalends.bootstrap import build
from kalends.errors import InvalidInput
from kalends.reminders.privacy import MASK, masked_url, redact_text, secret_parts
from kalends.reminders.transports import AppriseTransport, Delivery, DeliveryFailed, redacted_url
from kalends.storage.unit_of_work import Store

from .conftest import HttpReceiver
from .test_transports import FAST, delivery

MISTYPED = "mailtos//alice:S3cretPassw0rd@smtp.example.com"
WEB_HOOK_TOKEN = "Wh00kT0ken-9f2c4e"


@pytest.fixture
def apprise_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Every record Apprise logs, down to debug."""
    caplog.set_level(logging.DEBUG, logger="apprise")
    return caplog


def apprise_text(caplog: pytest.LogCaptureFixture) -> str:
    records = [r for r in caplog.records if r.name.startswith("apprise")]
    return "\n".join(r.getMessage() for r in records)


class TestTheDisplayRule:
    @pytest.mark.parametrize(
        ("privacy_form", "display"),
        [
            # a login shows, its password does not
            ("json://bot:****@hooks.example.com/", "json://bot:****@hooks.example.com/"),
            # a user without a password may be a token
            ("json://T0KEN@hooks.example.com/", "json://****@hooks.example.com/"),
            # every path segment, whatever it names
            ("jsons://hooks.example.com/webhook/T0KEN", "jsons://hooks.example.com/****/****"),
            # what Apprise abbreviated stays so; empty segments stay
            ("slack://T...0/B...0/X...T//", "slack://T...0/B...0/X...T//"),
            # a host without a dot may be a topic; an address or localhost is a host
            ("ntfys://mytopic", "ntfys://****"),
            ("json://127.0.0.1:8080/x", "json://127.0.0.1:8080/****"),
            ("json://localhost/", "json://localhost/"),
            # the recipients of an e-mail URL show, other path segments of it do not
            ("mailtos://smtp.example.com/bob%40example.com/x", "mailtos://smtp.example.com/bob%40example.com/****"),
            # argument values show only for the arguments that choose how to send
            ("ntfy://ntfy.example.com/t?priority=high&token=abc", "ntfy://ntfy.example.com/****?priority=high&token=****"),
            # a fragment
            ("rocket://user:****@chat.example.com/#room/", "rocket://user:****@chat.example.com/#****"),
        ],
    )  # fmt: skip
    def test_a_privacy_form_is_masked_further(self, privacy_form: str, display: str) -> None:
        assert masked_url(privacy_form) == display

    def test_a_url_apprise_cannot_read_shows_its_scheme_only(self) -> None:
        assert redacted_url(MISTYPED) == f"unknown://{MASK}"
        assert redacted_url("sms://whatever:secret@x") == f"sms://{MASK}"

    def test_the_secret_parts_of_a_mistyped_url_are_its_password_and_path(self) -> None:
        assert secret_parts(MISTYPED) == {"S3cretPassw0rd"}
        assert secret_parts("json://hooks.example.com/webhook/T0KEN%2Fx?rto=5&k=v%20w") >= {
            "webhook",
            "T0KEN%2Fx",
            "T0KEN/x",
            "v w",
        }

    def test_text_loses_every_url_secret_and_every_secret_given(self) -> None:
        text = redact_text(
            f"Unsupported URL: {MISTYPED}; posting to https://x.example.com/hook/{WEB_HOOK_TOKEN} "
            "with the header Bearer k3y-abcdef",
            {"k3y-abcdef"},
        )
        assert text == (
            "Unsupported URL: mailtos://alice:****@smtp.example.com; posting to "
            "https://x.example.com/****/**** with the header Bearer ****"
        )


class TestApprisesLogs:
    def test_a_mistyped_url_with_a_password_is_refused_and_logged_without_it(
        self, store: Store, apprise_logs: pytest.LogCaptureFixture
    ) -> None:
        services = build(store)
        with store.transaction():
            services.directory.add_actor("alice", "Alice")

        with pytest.raises(InvalidInput) as refused:
            services.destinations.add("alice", "alice", "email", MISTYPED)

        assert "S3cretPassw0rd" not in str(refused.value)
        logged = [r for r in apprise_logs.records if "Unsupported URL" in r.getMessage()]
        assert logged and logged[0].levelno == logging.ERROR
        assert "S3cretPassw0rd" not in apprise_logs.text
        assert "S3cretPassw0rd" not in apprise_text(apprise_logs)

    def test_reading_a_web_hook_url_logs_no_path_token(
        self, apprise_logs: pytest.LogCaptureFixture
    ) -> None:
        shown = redacted_url(f"jsons://hooks.example.com/webhook/{WEB_HOOK_TOKEN}")

        assert shown == "jsons://hooks.example.com/****/****"
        assert "Loaded JSON URL" in apprise_text(apprise_logs)
        assert WEB_HOOK_TOKEN not in apprise_logs.text

    def test_sending_to_web_hooks_logs_no_token_even_when_it_fails(
        self,
        apprise_logs: pytest.LogCaptureFixture,
        http_receiver: HttpReceiver,
        closed_port: int,
    ) -> None:
        transport = AppriseTransport(**FAST)
        http_receiver.status = 500
        reached = http_receiver.json_url(f"webhook/{WEB_HOOK_TOKEN}", token="QuErYsEcReT")
        dead = f"json://bot:pa55word@127.0.0.1:{closed_port}/hooks/An0therT0ken"
        sent: Delivery = delivery("push", reached, dead, MISTYPED)

        with pytest.raises(DeliveryFailed) as failed:
            transport.send(sent)

        assert len(http_receiver.received()) == 1
        text = apprise_logs.text + apprise_text(apprise_logs) + str(failed.value)
        assert apprise_text(apprise_logs)  # Apprise did log, at debug and above
        for secret in (WEB_HOOK_TOKEN, "QuErYsEcReT", "pa55word", "An0therT0ken", "S3cretPassw0rd"):
            assert secret not in text

    def test_a_record_keeps_its_level_and_logger(
        self, apprise_logs: pytest.LogCaptureFixture
    ) -> None:
        redacted_url(MISTYPED)
        [record] = [r for r in apprise_logs.records if "Unsupported URL" in r.getMessage()]
        assert (record.name, record.levelname) == ("apprise", "ERROR")
        assert record.getMessage() == "Unsupported URL: mailtos://alice:****@smtp.example.com"
