"""One client for the reminder, notification-settings and token commands: the local
implementations and the HTTP clients answer the same protocols, so that a command makes
each call once, whatever the mode.

The assignments below are checked by mypy; the tests check at run time that each
implementation takes every protocol method with the protocol's parameters, names, kinds
and defaults alike, and what the HTTP clients send.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from kalends.auth import Accounts
from kalends.auth.values import TokenInfo
from kalends.cli.account_client import AccountsClient, AccountSession
from kalends.cli.http_accounts import AccountWire, HttpAccounts
from kalends.cli.http_reminders import HttpDestinations, HttpReminders
from kalends.cli.http_tasks import Wire
from kalends.cli.local_reminders import LocalReminders
from kalends.cli.reminder_client import DestinationsClient, RemindersClient, ReminderSession
from kalends.cli.remote import Remote
from kalends.cli.session import Session
from kalends.errors import InvalidInput
from kalends.reminders.channels import Channel
from kalends.reminders.destinations import Destination, Destinations
from kalends.reminders.inspection import Intent
from kalends.reminders.intents import IntentState
from unit.client_support import RecordingWire, assert_same_parameters


def local_session(s: Session) -> tuple[ReminderSession, AccountSession]:
    return s, s


def server_session(r: Remote) -> tuple[ReminderSession, AccountSession]:
    return r, r


def remote_is_a_wire(r: Remote) -> tuple[Wire, AccountWire]:
    return r, r


def the_local_clients(
    reminders: LocalReminders, destinations: Destinations, accounts: Accounts
) -> tuple[RemindersClient, DestinationsClient, AccountsClient]:
    return reminders, destinations, accounts


def the_http_clients(
    w: Wire, a: AccountWire
) -> tuple[RemindersClient, DestinationsClient, AccountsClient]:
    return HttpReminders(w), HttpDestinations(w), HttpAccounts(a)


PAIRS = [
    # reminder intents: listed, read, retried
    (RemindersClient, LocalReminders, HttpReminders),
    # an actor's notification settings
    (DestinationsClient, Destinations, HttpDestinations),
    # the acting actor's API tokens
    (AccountsClient, Accounts, HttpAccounts),
]


class TestTheProtocols:
    @pytest.mark.parametrize(("protocol", "local", "http"), PAIRS)
    def test_both_implementations_take_each_call_with_the_protocols_parameters(
        self, protocol: type, local: type, http: type
    ) -> None:
        assert_same_parameters(protocol, local, http)

    def test_a_session_in_either_mode_offers_what_these_commands_ask(self) -> None:
        wanted = {"reminders", "destinations", "accounts", "local_note"}
        for session in (Session, Remote):
            assert wanted <= {n for n in dir(session) if not n.startswith("_")}


AT = datetime(2030, 3, 30, 7, 15, 2, tzinfo=UTC)
OWNER = UUID(int=5)
INTENT_ID = str(UUID(int=6))


class FakeWire(RecordingWire):
    """The recording server, with the handle of the actor it acts as."""

    def __init__(self, answers: dict[tuple[str, str], Any], actor: str = "ada") -> None:
        super().__init__(answers)
        self.actor = actor


def fake_is_a_wire(w: FakeWire) -> tuple[Wire, AccountWire]:
    return w, w


def an_intent() -> Intent:
    return Intent(
        id=UUID(INTENT_ID),
        task_id=UUID(int=2),
        task_ref="K7Q2XW",
        task_title="Water the plants",
        schedule_revision=3,
        channel="push",
        at=AT,
        recipient_id=OWNER,
        recipient="ada",
        status=IntentState.PENDING,
        attempts=1,
        next_attempt_at=AT + timedelta(minutes=5),
        lease_owner=None,
        lease_expires_at=None,
        last_error="timed out",
        closed_reason=None,
        delivered_at=None,
        created_at=AT - timedelta(days=1),
        updated_at=AT,
        zone="Europe/Paris",
    )


def a_destination() -> Destination:
    return Destination(
        channel=Channel.PUSH,
        position=1,
        url="ntfy://ntfy.sh/x",
        display="ntfy://n...x",
        created_at=AT,
    )


class TestTheHttpReminders:
    def test_a_tasks_reminders_are_read_under_the_task(self) -> None:
        route = "/api/tasks/K7Q2XW/reminders"
        wire = FakeWire({("GET", route): [an_intent().to_json()]})
        found = HttpReminders(wire).list("ignored", status="pending", task=" K7Q2XW ", limit=5)
        assert found == [an_intent()]
        assert wire.sent == [("GET", route, {"status": "pending", "limit": 5})]

    def test_a_retry_is_a_post_to_the_reminders_retry_route(self) -> None:
        route = f"/api/reminders/{INTENT_ID}/retry"
        wire = FakeWire({("POST", route): an_intent().to_json()})
        assert HttpReminders(wire).requeue("ignored", INTENT_ID) == an_intent()
        assert wire.sent == [("POST", route, None)]


class TestTheHttpDestinations:
    def test_a_url_to_remove_goes_in_the_body_never_the_path(self) -> None:
        route = "/api/actors/ada/destinations/push/remove"
        wire = FakeWire({("POST", route): {"channel": "push", "display": "ntfy://n...x"}})
        HttpDestinations(wire).remove("ignored", "ada", "push", "ntfy://ntfy.sh/x")
        assert wire.sent == [("POST", route, {"url": "ntfy://ntfy.sh/x"})]

    def test_an_unknown_channel_is_refused_before_any_request(self) -> None:
        wire = FakeWire({})
        with pytest.raises(InvalidInput):
            HttpDestinations(wire).add("ignored", "ada", "pigeon", "ntfy://ntfy.sh/x")
        assert wire.sent == []

    def test_a_listing_reads_back_the_redacted_destinations(self) -> None:
        route = "/api/actors/ada/destinations"
        wire = FakeWire({("GET", route): [a_destination().to_json()]})
        found = HttpDestinations(wire).list("ignored", "ada", "push")
        assert [d.to_json() for d in found] == [a_destination().to_json()]
        assert wire.sent == [("GET", route, {"channel": "push"})]


def a_token() -> TokenInfo:
    return TokenInfo(
        id=UUID(int=9),
        actor_id=OWNER,
        name="laptop",
        created_at=AT,
        expires_at=AT + timedelta(days=90),
        revoked_at=None,
        last_used_at=None,
        active=True,
    )


ME = {"actor": {"id": str(OWNER), "handle": "ada"}}


class TestTheHttpAccounts:
    def test_a_new_token_trades_the_password_for_it_and_names_its_owner(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr("kalends.cli.login.read_password", lambda from_stdin: "s3cret-pass")
        wire = FakeWire(
            {
                ("POST", "/api/auth/tokens/exchange"): {
                    "token": a_token().to_json(),
                    "secret": "k_x",
                },
                ("GET", "/api/auth/me"): ME,
            }
        )
        made = HttpAccounts(wire).create_token("ada", "laptop", expires_in=timedelta(days=90))
        assert made == (a_token(), "k_x")
        assert wire.sent[0] == (
            "POST",
            "/api/auth/tokens/exchange",
            {"handle": "ada", "password": "s3cret-pass", "name": "laptop", "expiresInDays": 90},
        )

    def test_no_tokens_ask_nothing_more(self) -> None:
        wire = FakeWire({("GET", "/api/tokens"): []})
        assert HttpAccounts(wire).tokens("ada") == []
        assert [sent[:2] for sent in wire.sent] == [("GET", "/api/tokens")]

    def test_a_revoked_token_is_read_back_as_its_owners(self) -> None:
        route = f"/api/tokens/{UUID(int=9)}"
        wire = FakeWire({("DELETE", route): a_token().to_json()})
        assert HttpAccounts(wire).revoke_token(OWNER, UUID(int=9)) == a_token()
        assert [sent[:2] for sent in wire.sent] == [("DELETE", route)]
