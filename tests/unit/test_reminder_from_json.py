"""The reminder, destination and token values the command line reads back from a server:
each ``from_json`` reads its own ``to_json``, as the JSON crosses the network."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from kalends.auth.values import TokenInfo
from kalends.reminders.channels import Channel
from kalends.reminders.destinations import Destination
from kalends.reminders.inspection import Intent
from kalends.reminders.intents import IntentState

AT = datetime(2030, 3, 30, 7, 15, 2, 123456, tzinfo=UTC)


def wire(value: dict[str, Any]) -> dict[str, Any]:
    """The JSON as it crosses the network: text, read back."""
    return json.loads(json.dumps(value))  # type: ignore[no-any-return]


def an_intent(**changes: Any) -> Intent:
    fields: dict[str, Any] = {
        "id": UUID(int=1),
        "task_id": UUID(int=2),
        "task_ref": "K7Q2XW",
        "task_title": "Water the plants",
        "schedule_revision": 4,
        "channel": "email",
        "at": AT,
        "recipient_id": UUID(int=3),
        "recipient": "ada",
        "status": IntentState.PENDING,
        "attempts": 0,
        "next_attempt_at": AT,
        "lease_owner": None,
        "lease_expires_at": None,
        "last_error": None,
        "closed_reason": None,
        "delivered_at": None,
        "created_at": AT - timedelta(days=2),
        "updated_at": AT - timedelta(hours=1),
        "zone": None,
    }
    return Intent(**(fields | changes))


class TestIntent:
    @pytest.mark.parametrize(
        "intent",
        [
            # waiting, read in UTC
            an_intent(),
            # failed once and waiting again, in its recipient's zone
            an_intent(attempts=2, last_error="timed out", zone="Europe/Paris"),
            # leased to a worker
            an_intent(
                status=IntentState.LEASED,
                lease_owner="worker-1",
                lease_expires_at=AT + timedelta(minutes=1),
            ),
        ],
        ids=["pending", "retrying", "leased"],
    )
    def test_a_live_intent_reads_back_from_its_json(self, intent: Intent) -> None:
        assert Intent.from_json(wire(intent.to_json())) == intent

    def test_a_delivered_intent_reads_back_with_its_creation_as_next_attempt(self) -> None:
        created = AT - timedelta(days=2)
        intent = an_intent(
            status=IntentState.DELIVERED, attempts=1, delivered_at=AT, next_attempt_at=created
        )
        assert Intent.from_json(wire(intent.to_json())) == intent


class TestDestination:
    def test_a_destination_reads_back_with_its_redacted_form_for_its_url(self) -> None:
        found = Destination(
            channel=Channel.EMAIL,
            position=2,
            url="mailtos://ada:secret@example.org",
            display="mailtos://ada:****@example.org",
            created_at=AT,
        )
        back = Destination.from_json(wire(found.to_json()))
        assert back == replace(found, url=found.display)
        assert back.to_json() == found.to_json()


class TestTokenInfo:
    @pytest.mark.parametrize(
        "token",
        [
            # active, never used
            TokenInfo(
                id=UUID(int=9),
                actor_id=UUID(int=5),
                name="laptop",
                created_at=AT,
                expires_at=AT + timedelta(days=90),
                revoked_at=None,
                last_used_at=None,
                active=True,
            ),
            # revoked after use, without an expiry
            TokenInfo(
                id=UUID(int=10),
                actor_id=UUID(int=5),
                name="phone",
                created_at=AT,
                expires_at=None,
                revoked_at=AT + timedelta(days=3),
                last_used_at=AT + timedelta(days=1),
                active=False,
            ),
        ],
        ids=["active", "revoked"],
    )
    def test_a_token_reads_back_as_its_owners(self, token: TokenInfo) -> None:
        assert TokenInfo.from_json(wire(token.to_json()), actor_id=token.actor_id) == token
