"""A destination named by its channel and position, never its URL (what a page holds):
removed with the others keeping their positions, and sent one test message now through
Apprise to a real local HTTP receiver; every refusal writes nothing, on every backend."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kalends.bootstrap import build
from kalends.clock import FakeClock
from kalends.errors import Forbidden, InvalidInput, KalendsError, NotFound
from kalends.reminders.destinations import Destinations
from kalends.storage.testing import nothing_written
from kalends.storage.unit_of_work import Store
from reminders.conftest import HttpReceiver

SECRET = "hook-s3cret-token"


@pytest.fixture
def destinations(store: Store) -> Destinations:
    services = build(store)
    with store.transaction():
        services.directory.add_actor("alice", "Alice", "alice@example.com")
        services.directory.add_actor("bob", "Bob")
    return services.destinations


def test_removing_at_a_position_keeps_the_others_where_they_were(
    destinations: Destinations,
) -> None:
    for topic in ("one", "two", "three"):
        destinations.add("alice", "alice", "push", f"json://127.0.0.1:9/{topic}/{SECRET}")
    removed = destinations.remove_at("alice", "alice", "push", 2)
    assert removed.position == 2
    assert removed.display == "json://127.0.0.1:9/****/****"
    left = destinations.list("alice", "alice", "push")
    assert [(d.position, d.url.split("/")[3]) for d in left] == [(1, "one"), (3, "three")]
    # A destination added afterwards comes after the last.
    added = destinations.add("alice", "alice", "push", "json://127.0.0.1:9/four")
    assert added.position == 4


Call = Callable[[Destinations], Any]


@pytest.mark.parametrize(
    ("call", "error", "fragment"),
    [
        # a position that holds nothing
        (lambda d: d.remove_at("alice", "alice", "push", 5), NotFound, "no push destination 5"),
        # the right position on the other channel
        (lambda d: d.remove_at("alice", "alice", "email", 1), NotFound, "no email destination"),
        # someone else's settings
        (lambda d: d.remove_at("bob", "alice", "push", 1), Forbidden, "your own"),
        # not a position
        (lambda d: d.remove_at("alice", "alice", "push", 0), InvalidInput, "from 1"),
        # a position as text
        (lambda d: d.remove_at("alice", "alice", "push", "1"), InvalidInput, "from 1"),
        # a channel kalends has not
        (lambda d: d.remove_at("alice", "alice", "sms", 1), InvalidInput, "unknown channel"),
        # a test message to nothing, or to someone else's destination
        (lambda d: d.send_test("alice", "alice", "push", 2), NotFound, "no push destination 2"),
        (lambda d: d.send_test("bob", "alice", "push", 1), Forbidden, "your own"),
        # a position that is a bool
        (lambda d: d.send_test("alice", "alice", "push", True), InvalidInput, "from 1"),
    ],
)
def test_refused_and_nothing_written(
    destinations: Destinations,
    http_receiver: HttpReceiver,
    call: Call,
    error: type[KalendsError],
    fragment: str,
) -> None:
    destinations.add("alice", "alice", "push", http_receiver.json_url(f"hooks/{SECRET}"))
    with nothing_written(destinations.store), pytest.raises(error) as raised:
        call(destinations)
    assert type(raised.value) is error
    assert fragment in raised.value.message
    assert http_receiver.received() == []


def test_a_test_message_reaches_only_that_destination_and_writes_nothing(
    destinations: Destinations, http_receiver: HttpReceiver, fake_clock: FakeClock
) -> None:
    destinations.add("alice", "alice", "push", http_receiver.json_url("hooks/first"))
    destinations.add("alice", "alice", "push", http_receiver.json_url(f"hooks/{SECRET}"))
    with nothing_written(destinations.store):
        result = destinations.send_test("alice", "alice", "push", 2)
    assert result.sent and result.error is None
    assert result.at == fake_clock.now()
    assert result.destination.position == 2
    assert SECRET not in result.destination.display
    [request] = http_receiver.received()
    assert request.path == f"/hooks/{SECRET}"
    message = request.json()
    assert message["title"] == "kalends test message"
    key = request.header("Idempotency-Key")
    assert key is not None and key.startswith("test-")
    assert message["message"].endswith(f"Reminder ID: {key}")


def test_a_refused_test_message_says_the_transports_reason_without_the_secret(
    destinations: Destinations, closed_port: int
) -> None:
    destinations.add("alice", "alice", "push", f"json://127.0.0.1:{closed_port}/{SECRET}")
    result = destinations.send_test("alice", "alice", "push", 1)
    assert not result.sent
    assert result.error is not None
    assert result.error.startswith("JSON: "), result.error
    assert SECRET not in result.error
