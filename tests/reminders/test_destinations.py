"""Notification settings (Destinations) on every backend: round trips, refusals, urls_for.

Every refused operation is checked to write nothing, by a snapshot of every table.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import delete, event, func, select

from kalends.bootstrap import Services, build
from kalends.clock import FakeClock
from kalends.errors import Conflict, Forbidden, InvalidInput, KalendsError, NotFound
from kalends.reminders.destinations import (
    MAX_DESTINATIONS,
    MAX_URL_LENGTH,
    Destination,
    Destinations,
    urls_for,
)
from kalends.storage.identity_tables import actors
from kalends.storage.task_tables import actor_destinations
from kalends.storage.testing import FAKE_CLOCK_START, nothing_written
from kalends.storage.unit_of_work import Store
from kalends.tasks import Actor, Channel

NTFY = "ntfy://ntfy.example.com/alice-reminders"
NTFYS = "ntfys://reader:pa55word@ntfy.example.com/alice-phone"
GOTIFY = "gotify://gotify.example.com/AbCdEfGhIjKlMnO"
JSON_HOOK = "json://hooks.example.com/kalends?+X-Team=ops"
MAIL = "mailto://alice:secret@example.com"
MAILS = "mailtos://smtp.example.com/alice@example.com?from=kalends@example.com"


@dataclass(frozen=True, slots=True)
class World:
    services: Services
    alice: Actor
    bob: Actor
    carol: Actor

    @property
    def store(self) -> Store:
        return self.services.store

    @property
    def destinations(self) -> Destinations:
        return self.services.destinations


@pytest.fixture
def world(store: Store) -> World:
    services = build(store)
    directory = services.directory
    with store.transaction():
        alice = directory.add_actor("alice", "Alice", "alice@example.com")
        bob = directory.add_actor("bob", "Bob")
        carol = directory.add_actor("carol", "Carol")
    return World(services=services, alice=alice, bob=bob, carol=carol)


def urls(found: list[Destination]) -> list[tuple[str, int, str]]:
    return [(d.channel.value, d.position, d.url) for d in found]


class TestRoundTrips:
    def test_set_then_list_in_order_with_redacted_display(self, world: World) -> None:
        d = world.destinations
        written = d.set("alice", "alice", "push", [NTFYS, NTFY, GOTIFY])

        listed = d.list("alice", "alice")
        assert listed == written
        assert urls(listed) == [("push", 1, NTFYS), ("push", 2, NTFY), ("push", 3, GOTIFY)]
        assert all(x.created_at == FAKE_CLOCK_START for x in listed)
        # The topic is the path: masked, as every path is (kalends.reminders.privacy).
        assert listed[0].display == "ntfys://reader:****@ntfy.example.com/****"
        assert "pa55word" not in json.dumps([x.to_json() for x in listed])
        assert "pa55word" not in repr(listed)

    def test_set_replaces_keeps_created_at_of_kept_urls_and_clears(
        self, world: World, fake_clock: FakeClock
    ) -> None:
        d = world.destinations
        d.set("alice", "alice", "push", [NTFY, GOTIFY])
        later = fake_clock.advance(3600)

        replaced = d.set(world.alice.id, world.alice.id, Channel.PUSH, [GOTIFY, JSON_HOOK])

        assert urls(replaced) == [("push", 1, GOTIFY), ("push", 2, JSON_HOOK)]
        assert [x.created_at for x in replaced] == [FAKE_CLOCK_START, later]
        assert d.list("alice", "alice") == replaced

        assert d.set("alice", "alice", "push", []) == []
        assert d.list("alice", "alice") == []

    def test_channels_and_actors_are_separate(self, world: World) -> None:
        d = world.destinations
        d.set("alice", "alice", "push", [NTFY])
        d.set("alice", "alice", "email", [MAIL, MAILS])
        d.set("bob", "bob", "push", [NTFY])

        assert urls(d.list("alice", "alice")) == [
            ("email", 1, MAIL),
            ("email", 2, MAILS),
            ("push", 1, NTFY),
        ]
        assert urls(d.list("alice", "alice", "email")) == [("email", 1, MAIL), ("email", 2, MAILS)]
        assert urls(d.list("bob", "bob", "push")) == [("push", 1, NTFY)]
        assert d.list("bob", "bob", "email") == []

        d.set("alice", "alice", "email", [])
        assert urls(d.list("alice", "alice")) == [("push", 1, NTFY)]
        assert urls(d.list("bob", "bob")) == [("push", 1, NTFY)]

    def test_add_appends_and_remove_takes_out(self, world: World, fake_clock: FakeClock) -> None:
        d = world.destinations
        first = d.add("alice", "alice", "push", NTFY)
        later = fake_clock.advance(60)
        second = d.add("alice", "alice", "push", f"  {GOTIFY}\n")

        assert (first.position, first.created_at) == (1, FAKE_CLOCK_START)
        assert (second.position, second.url, second.created_at) == (2, GOTIFY, later)

        d.remove("alice", "alice", "push", NTFY)
        third = d.add("alice", "alice", "push", JSON_HOOK)

        assert third.position == 3
        assert urls(d.list("alice", "alice")) == [("push", 2, GOTIFY), ("push", 3, JSON_HOOK)]
        d.remove("alice", "alice", "push", GOTIFY)
        d.remove("alice", "alice", "push", JSON_HOOK)
        assert d.list("alice", "alice") == []

    def test_actors_may_be_named_by_id(self, world: World) -> None:
        d = world.destinations
        d.add(str(world.alice.id), world.alice.id, "email", MAIL)
        assert urls(d.list(world.alice.id, "alice")) == [("email", 1, MAIL)]

    def test_an_actors_settings_go_with_the_actor(self, world: World) -> None:
        world.destinations.set("carol", "carol", "push", [NTFY, GOTIFY])
        with world.store.transaction() as conn:
            assert urls_for(conn, [world.carol.id], "push") == {world.carol.id: (NTFY, GOTIFY)}
            conn.execute(delete(actors).where(actors.c.id == world.carol.id))
        with world.store.transaction(write=False) as conn:
            assert urls_for(conn, [world.carol.id], "push") == {world.carol.id: ()}
            assert conn.execute(select(func.count()).select_from(actor_destinations)).scalar() == 0


class TestConcurrency:
    def test_concurrent_adds_never_pass_the_limit(self, world: World) -> None:
        start = [f"ntfy://ntfy.example.com/t{i}" for i in range(MAX_DESTINATIONS - 1)]
        world.destinations.set("alice", "alice", "push", start)
        barrier = threading.Barrier(4)
        outcomes: list[str] = []
        lock = threading.Lock()

        def add(n: int) -> None:
            barrier.wait()
            try:
                world.destinations.add("alice", "alice", "push", f"ntfy://ntfy.example.com/c{n}")
                outcome = "added"
            except InvalidInput as error:
                outcome = error.message
            with lock:
                outcomes.append(outcome)

        threads = [threading.Thread(target=add, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert sorted(outcomes)[0] == "added"
        assert outcomes.count("added") == 1
        assert all("already has 8 destinations" in o for o in outcomes if o != "added")
        listed = world.destinations.list("alice", "alice", "push")
        assert [d.position for d in listed] == list(range(1, MAX_DESTINATIONS + 1))


class TestJson:
    def test_to_json_hides_the_mailto_password(self, world: World) -> None:
        added = world.destinations.add("alice", "alice", "email", MAIL)
        shown = added.to_json()

        assert set(shown) == {"channel", "position", "display", "created_at"}
        assert shown["channel"] == "email"
        assert shown["display"].startswith("mailto://alice:****@example.com")
        assert shown["created_at"] == FAKE_CLOCK_START.isoformat()
        assert "secret" not in json.dumps(shown)

    def test_display_keeps_the_arguments_given_and_masks_header_values(self, world: World) -> None:
        url = "json://hooks.example.com/kalends?+Authorization=Bearer%20k3y-abcdef&method=PUT"
        added = world.destinations.add("alice", "alice", "push", url)

        assert added.display == "json://hooks.example.com/****?method=PUT&%2BAuthorization=****"
        assert "k3y-abcdef" not in json.dumps(added.to_json())

    @pytest.mark.parametrize(
        ("url", "secret", "display"),
        [
            # a generic web hook with its token in the path
            (
                "jsons://hooks.example.com/webhook/TOKEN-d41d8cd98f00b204",
                "TOKEN-d41d8cd98f00b204",
                "jsons://hooks.example.com/****/****",
            ),
            # a token as the whole path
            ("json://hooks.example.com/Zk3yQ9", "Zk3yQ9", "json://hooks.example.com/****"),
            # a Discord web hook's own address
            (
                "https://discord.com/api/webhooks/123456789012/aBcDeFgHiJkLmNoPqRsTuV",
                "aBcDeFgHiJkLmNoPqRsTuV",
                "discord://1...2/a...V/",
            ),
            # a Slack web hook's own address
            (
                "https://hooks.slack.com/services/T0ABCDEF/B0GHIJKL/xoxbSeCrEtToKeN123",
                "xoxbSeCrEtToKeN123",
                "slack://T...F/B...L/x...3//",
            ),
            # a token in the query string, an argument Apprise keeps
            (
                "discord://123456/abcTOKEN?avatar_url=https://img.example.com/a?k=QuErYsEcReT",
                "QuErYsEcReT",
                "discord://1...6/a...N/?avatar_url=****",
            ),
            # a payload extra and a removed key
            (
                "json://hooks.example.com/?:api_key=PaYlOaDsEcReT&-token=x",
                "PaYlOaDsEcReT",
                "json://hooks.example.com/?-token=****&:api_key=****",
            ),
            # an ntfy topic given as the host
            ("ntfy://aliceprivatetopic", "aliceprivatetopic", "ntfys://****"),
        ],
    )
    def test_display_masks_every_path_segment_and_secret_argument(
        self, world: World, url: str, secret: str, display: str
    ) -> None:
        added = world.destinations.add("alice", "alice", "push", url)
        listed = world.destinations.list("alice", "alice", "push")
        replaced = world.destinations.set("alice", "alice", "push", [url])

        assert added.display == display
        for shown in (added, *listed, *replaced):
            assert secret not in json.dumps(shown.to_json())

    def test_display_shows_the_recipients_of_an_e_mail_url(self, world: World) -> None:
        added = world.destinations.add("alice", "alice", "email", MAILS)
        assert added.display == (
            "mailtos://smtp.example.com/alice%40example.com?from=kalends@example.com"
        )

    def test_to_json_hides_the_pushover_tokens(self, world: World) -> None:
        user_key = "uQiRzpo4DXghDmr9QzzfQu27cmVRsG"
        token = "azGDORePK8gMaC0QOYAMyEEuzJnyUi"
        world.destinations.add("alice", "alice", "push", "pover://user@token")
        world.destinations.add("alice", "alice", "push", f"pover://{user_key}@{token}")

        shown = json.dumps([x.to_json() for x in world.destinations.list("alice", "alice")])

        assert "pover://" in shown
        assert "token" not in shown
        assert user_key not in shown
        assert token not in shown


# --- refusals: each writes nothing ----------------------------------------------------------

Call = Callable[[Destinations], object]


def too_many(channel: str) -> list[str]:
    if channel == "email":
        return [f"mailto://user{i}:pw@example.com" for i in range(MAX_DESTINATIONS + 1)]
    return [f"ntfy://ntfy.example.com/topic{i}" for i in range(MAX_DESTINATIONS + 1)]


LONG_URL = "ntfy://ntfy.example.com/" + "t" * MAX_URL_LENGTH

# (call, error class, field, a fragment of the message)
REFUSALS: list[tuple[str, Call, type[KalendsError], str | None, str]] = [
    ("unknown channel (set)", lambda d: d.set("alice", "alice", "sms", [NTFY]), InvalidInput,
     "channel", "channel: unknown channel 'sms'; use email or push"),
    ("unknown channel (add)", lambda d: d.add("alice", "alice", "sms", NTFY), InvalidInput,
     "channel", "unknown channel 'sms'"),
    ("unknown channel (list)", lambda d: d.list("alice", "alice", "fax"), InvalidInput,
     "channel", "unknown channel 'fax'"),
    ("unknown channel (remove)", lambda d: d.remove("alice", "alice", "SMS", NTFY),
     InvalidInput, "channel", "unknown channel 'SMS'"),
    ("not a URL", lambda d: d.add("alice", "alice", "push", "just text"), InvalidInput,
     "url", "url: not an Apprise URL"),
    ("blank URL", lambda d: d.add("alice", "alice", "push", "   "), InvalidInput, "url",
     "cannot be blank"),
    ("unknown scheme", lambda d: d.add("alice", "alice", "push", "sms://+15551234:s3cret@gw"),
     InvalidInput, "url", "url: Apprise cannot use this sms:// URL"),
    ("malformed gotify", lambda d: d.add("alice", "alice", "push", "gotify://"), InvalidInput,
     "url", "Apprise cannot use this gotify:// URL"),
    ("malformed pushover", lambda d: d.add("alice", "alice", "push", "pover://s3cret@"),
     InvalidInput, "url", "Apprise cannot use this pover:// URL"),
    ("malformed mailto", lambda d: d.add("alice", "alice", "email", "mailto://u:s3cret@"),
     InvalidInput, "url", "Apprise cannot use this mailto:// URL"),
    ("malformed among good (set)",
     lambda d: d.set("alice", "alice", "push", [NTFY, "gotify://h:s3cret@"]), InvalidInput,
     "urls[1]", "urls[1]: Apprise cannot use this gotify:// URL"),
    ("mailto on push", lambda d: d.add("alice", "alice", "push", MAIL), InvalidInput, "url",
     "a push destination cannot be an e-mail (mailto://) URL"),
    ("mailtos on push (set)", lambda d: d.set("alice", "alice", "push", [NTFY, MAILS]),
     InvalidInput, "urls[1]", "cannot be an e-mail (mailtos://) URL"),
    ("ntfy on email", lambda d: d.add("alice", "alice", "email", NTFYS), InvalidInput, "url",
     "an email destination is a mailto:// or mailtos:// URL, got ntfys://"),
    ("json on email (set)", lambda d: d.set("alice", "alice", "email", [JSON_HOOK]),
     InvalidInput, "urls[0]", "got json://"),
    ("too many push (set)", lambda d: d.set("alice", "alice", "push", too_many("push")),
     InvalidInput, "urls", f"at most {MAX_DESTINATIONS} push destinations, got 9"),
    ("too many email (set)", lambda d: d.set("alice", "alice", "email", too_many("email")),
     InvalidInput, "urls", f"at most {MAX_DESTINATIONS} email destinations"),
    ("too many (add)", lambda d: d.add("alice", "alice", "push", "ntfy://ntfy.example.com/x"),
     InvalidInput, "url", f"push already has {MAX_DESTINATIONS} destinations"),
    ("too long", lambda d: d.add("alice", "alice", "push", LONG_URL), InvalidInput, "url",
     f"url: at most {MAX_URL_LENGTH} characters"),
    ("too long (set)", lambda d: d.set("alice", "alice", "push", [LONG_URL]), InvalidInput,
     "urls[0]", "at most 2000 characters"),
    ("a URL twice (set)", lambda d: d.set("alice", "alice", "push", [NTFY, GOTIFY, NTFY]),
     InvalidInput, "urls[2]", "urls[2]: the same URL as urls[0]"),
    ("a string for urls", lambda d: d.set("alice", "alice", "push", NTFY), InvalidInput, "urls",
     "a list of Apprise URLs"),
    ("already set (add)", lambda d: d.add("alice", "alice", "push", "ntfy://ntfy.example.com/t0"),
     Conflict, "url", "already set"),
    ("remove what is not there", lambda d: d.remove("alice", "alice", "push", GOTIFY), NotFound,
     "url", "no such push destination"),
    ("remove from the other channel", lambda d: d.remove("alice", "alice", "email",
     "ntfy://ntfy.example.com/t0"), NotFound, "url", "no such email destination"),
    ("another actor's settings (set)", lambda d: d.set("bob", "alice", "push", [NTFY]),
     Forbidden, None, "you may only change your own notification settings"),
    ("another actor's settings (add)", lambda d: d.add("bob", "alice", "push", NTFY),
     Forbidden, None, "your own notification settings"),
    ("another actor's settings (remove)",
     lambda d: d.remove("bob", "alice", "push", "ntfy://ntfy.example.com/t0"), Forbidden, None,
     "your own notification settings"),
    ("another actor's settings (list)", lambda d: d.list("bob", "alice"), Forbidden, None,
     "you may only see your own notification settings"),
    ("unknown acting actor", lambda d: d.set("ghost", "alice", "push", [NTFY]), NotFound,
     "actor", "actor: no actor 'ghost'"),
    ("unknown target", lambda d: d.add("alice", "ghost", "push", NTFY), NotFound, "target",
     "target: no actor 'ghost'"),
    ("unknown actor by ID", lambda d: d.list("00000000-0000-4000-8000-000000000000", "alice"),
     NotFound, "actor", "no actor"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("call", "error", "field", "fragment"),
    [pytest.param(*case[1:], id=case[0]) for case in REFUSALS],
)
def test_refused_and_nothing_written(
    world: World,
    call: Call,
    error: type[KalendsError],
    field: str | None,
    fragment: str,
) -> None:
    # Alice's push channel is full, so "too many (add)" has something to exceed.
    world.destinations.set(
        "alice", "alice", "push", [f"ntfy://ntfy.example.com/t{i}" for i in range(8)]
    )
    with nothing_written(world.store), pytest.raises(error) as raised:
        call(world.destinations)

    assert type(raised.value) is error
    assert fragment in raised.value.message
    assert raised.value.details.get("field") == field
    # No secret of the URLs tried shows in the message.
    for secret in ("s3cret", "pa55word", "secret@"):
        assert secret not in raised.value.message


# --- urls_for -------------------------------------------------------------------------------


@contextmanager
def counted_statements(store: Store) -> Iterator[list[str]]:
    seen: list[str] = []

    def record(*args: Any) -> None:
        seen.append(str(args[2]))

    event.listen(store.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(store.engine, "before_cursor_execute", record)


class TestUrlsFor:
    def test_many_recipients_in_one_query_in_position_order(self, world: World) -> None:
        d = world.destinations
        d.set("alice", "alice", "push", [GOTIFY, NTFY])
        d.set("alice", "alice", "email", [MAIL])
        d.set("bob", "bob", "push", [JSON_HOOK])
        d.add("bob", "bob", "push", NTFYS)

        with world.store.transaction(write=False) as conn, counted_statements(world.store) as sql:
            push = urls_for(conn, [world.alice.id, world.bob.id, world.carol.id], "push")
        selects = [s for s in sql if "actor_destinations" in s]
        assert len(selects) == 1

        assert push == {
            world.alice.id: (GOTIFY, NTFY),
            world.bob.id: (JSON_HOOK, NTFYS),
            world.carol.id: (),
        }
        with world.store.transaction(write=False) as conn:
            email = urls_for(conn, [world.bob.id, world.alice.id, world.alice.id], Channel.EMAIL)
            nobody = urls_for(conn, [], "email")
        assert email == {world.bob.id: (), world.alice.id: (MAIL,)}
        assert nobody == {}

    def test_it_sees_the_callers_uncommitted_writes(self, world: World) -> None:
        with world.store.transaction() as conn:
            world.destinations.set("alice", "alice", "push", [NTFY])
            assert urls_for(conn, [world.alice.id], "push") == {world.alice.id: (NTFY,)}

    def test_an_unknown_channel_is_refused(self, world: World) -> None:
        with world.store.transaction(write=False) as conn, pytest.raises(InvalidInput):
            urls_for(conn, [world.alice.id], "sms")
