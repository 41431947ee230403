"""Actors and their reminder destinations over HTTP (what ``kalends actor`` and ``kalends
actor notify`` do): anyone lists actors, the server's owner account adds them, and each
person reads and changes only their own destinations, which no answer shows unredacted.
On both backends; every refusal writes nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from api.conftest import ApiWorld
from api.test_tasks_support import invalid, ok, refused
from kalends.errors import NotFound

# Apprise URLs with a secret each (the password, the token).
NTFY = "ntfys://reader:pa55word@ntfy.example.com/bob-phone"
HOOK = "json://hooks.example.com/kalends?+Authorization=Bearer%20k3y-abcdef"
MAIL = "mailto://bob:hunter2@example.com"
PLAIN = "ntfy://ntfy.example.com/plain"
SECRETS = ("pa55word", "k3y-abcdef", "hunter2")

BOBS = "/api/actors/bob/destinations"


@pytest.fixture(autouse=True)
def _tokens_used(api: ApiWorld) -> None:
    """Each token's first use records it (``lastUsedAt``); done here, so that a refusal
    in a test writes nothing of its own."""
    for who in ("alice", "bob", "carol", "dave"):
        assert api.client.get("/api/auth/me", headers=api.headers(who)).status_code == 200


def no_secret_in(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, text


def shown(api: ApiWorld, who: str, channel: str | None = None) -> list[dict[str, Any]]:
    """The person's destinations as the service shows them (redacted JSON)."""
    actor = api.actors[who].id
    return [d.to_json() for d in api.services.destinations.list(actor, actor, channel)]


class TestActors:
    def test_anyone_logged_in_lists_every_actor_as_the_cli_prints_them(self, api: ApiWorld) -> None:
        expected = [a.to_json() for a in api.services.grants.actors()]
        # The run privilege shows beside each: the owner account, and bob and dave's grants.
        runners = {"alice", "bob", "dave"}
        assert {a["handle"]: a["mayRun"] for a in expected} == {h: h in runners for h in api.actors}
        for who in ("carol", "dave"):
            assert ok(api.client.get("/api/actors", headers=api.headers(who))) == expected
        refused(api, "GET", "/api/actors", {}, 401, "unauthenticated")

    def test_the_servers_owner_adds_an_actor_who_has_no_account_yet(self, api: ApiWorld) -> None:
        body = {"handle": "grace", "display_name": "Grace", "email": "grace@example.com"}
        made = ok(api.client.post("/api/actors", json=body, headers=api.headers("alice")), 201)
        assert made == api.services.directory.actor("grace").to_json()
        assert (made["handle"], made["display_name"], made["email"]) == (
            "grace",
            "Grace",
            "grace@example.com",
        )
        with pytest.raises(NotFound):
            api.accounts.account("grace")

    @pytest.mark.parametrize("who", ["bob", "carol", "dave"])  # an editor, a viewer, a stranger
    def test_anyone_else_is_refused_adding_an_actor(self, api: ApiWorld, who: str) -> None:
        reply = refused(
            api,
            "POST",
            "/api/actors",
            api.headers(who),
            403,
            "forbidden",
            json={"handle": "mallory", "display_name": "Mallory"},
        )
        assert "server's owner account" in reply.json()["message"]

    def test_a_taken_handle_is_a_conflict(self, api: ApiWorld) -> None:
        reply = refused(
            api,
            "POST",
            "/api/actors",
            api.headers("alice"),
            409,
            "conflict",
            json={"handle": "bob", "display_name": "Another Bob"},
        )
        assert reply.json()["details"]["field"] == "handle"

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            ({"handle": "Not A Handle", "display_name": "X"}, "handle"),  # the handle's rule
            ({"handle": "x" * 65, "display_name": "X"}, "handle"),  # over 64 characters
            ({"handle": "zoe", "display_name": "   "}, "display_name"),  # a blank name
            ({"handle": "zoe", "display_name": "Z" * 201}, "display_name"),  # too long
            ({"handle": "zoe", "display_name": "Zo\x00e"}, "display_name"),  # NUL
            ({"handle": "zoe", "display_name": "Zoe", "email": "not an address"}, "email"),
            ({"handle": "zoe", "display_name": "Zoe", "email": "z@" + "e" * 320 + ".org"}, "email"),
            ({"handle": "zoe"}, "display_name"),  # missing
            ({"handle": "zoe", "display_name": "Zoe", "role": "owner"}, "role"),  # not a field
            ({"handle": 7, "display_name": "Zoe"}, "handle"),  # not text
        ],
    )
    def test_malformed_input_is_refused_naming_the_field(
        self, api: ApiWorld, body: dict[str, Any], field: str
    ) -> None:
        invalid(api, "POST", "/api/actors", field, json=body)


class TestDestinations:
    def test_a_person_sets_adds_lists_and_removes_their_own_redacted(self, api: ApiWorld) -> None:
        headers = api.headers("bob")
        written = ok(api.client.put(f"{BOBS}/push", json={"urls": [NTFY, HOOK]}, headers=headers))
        assert [(d["channel"], d["position"]) for d in written] == [("push", 1), ("push", 2)]
        assert written[0]["display"] == "ntfys://reader:****@ntfy.example.com/****"
        added = ok(api.client.post(f"{BOBS}/email", json={"url": MAIL}, headers=headers), 201)
        assert set(added) == {"channel", "position", "display", "created_at"}
        # By handle or by ID: the same settings, as the service shows them.
        listed = ok(api.client.get(BOBS, headers=headers))
        assert listed == shown(api, "bob")
        by_id = f"/api/actors/{api.actors['bob'].id}/destinations"
        assert ok(api.client.get(by_id, headers=headers, params={"channel": "email"})) == [added]
        removed = ok(api.client.post(f"{BOBS}/push/remove", json={"url": NTFY}, headers=headers))
        assert removed == {
            "channel": "push",
            "display": "ntfys://reader:****@ntfy.example.com/****",
        }
        assert [d["position"] for d in shown(api, "bob", "push")] == [2]
        assert ok(api.client.put(f"{BOBS}/push", json={"urls": []}, headers=headers)) == []
        assert [d["channel"] for d in shown(api, "bob")] == ["email"]
        for answer in (written, added, listed, removed):
            no_secret_in(json.dumps(answer))

    def test_a_web_hooks_path_and_query_tokens_are_masked_in_every_reply(
        self, api: ApiWorld
    ) -> None:
        headers = api.headers("bob")
        token, discord = "Wh00kT0ken-9f2c4e", "https://discord.com/api/webhooks/4242/DiScOrDsEcReT"
        hook = f"jsons://hooks.example.com/webhook/{token}?:apikey=QuErYsEcReT"
        replies = [
            ok(api.client.put(f"{BOBS}/push", json={"urls": [hook]}, headers=headers)),
            ok(api.client.post(f"{BOBS}/push", json={"url": discord}, headers=headers), 201),
            ok(api.client.get(BOBS, headers=headers)),
            ok(api.client.post(f"{BOBS}/push/remove", json={"url": hook}, headers=headers)),
        ]
        assert replies[0][0]["display"] == "jsons://hooks.example.com/****/****?:apikey=****"
        text = json.dumps(replies)
        for secret in (token, "QuErYsEcReT", "DiScOrDsEcReT"):
            assert secret not in text

    @pytest.mark.parametrize(
        ("method", "tail", "body"),
        [
            ("GET", "", None),  # read them
            ("PUT", "/push", {"urls": [PLAIN]}),  # replace them
            ("POST", "/push", {"url": PLAIN}),  # add one
            ("POST", "/push/remove", {"url": NTFY}),  # remove one
        ],
    )
    @pytest.mark.parametrize("who", ["alice", "carol", "dave"])  # the server's owner too
    def test_another_persons_destinations_are_refused(
        self, api: ApiWorld, method: str, tail: str, body: dict[str, Any] | None, who: str
    ) -> None:
        bob = api.actors["bob"].id
        api.services.destinations.set(bob, bob, "push", [NTFY])
        reply = refused(api, method, BOBS + tail, api.headers(who), 403, "forbidden", json=body)
        assert "your own notification settings" in reply.json()["message"]
        no_secret_in(reply.text)

    def test_without_credentials_nothing_is_read(self, api: ApiWorld) -> None:
        refused(api, "GET", BOBS, {}, 401, "unauthenticated")
        refused(api, "PUT", f"{BOBS}/push", {}, 401, "unauthenticated", json={"urls": []})

    def test_an_unknown_person_is_not_found(self, api: ApiWorld) -> None:
        url = "/api/actors/nobody/destinations"
        refused(api, "GET", url, api.headers("bob"), 404, "not-found")

    @pytest.mark.parametrize(
        ("method", "tail", "body", "field"),
        [
            ("PUT", "/pager", {"urls": []}, "channel"),  # no such channel
            ("GET", "?channel=pager", None, "channel"),
            ("PUT", "/push", {"urls": PLAIN}, "urls"),  # not a list
            ("PUT", "/push", {"urls": ["not a url"]}, "urls[0]"),
            ("PUT", "/push", {"urls": [PLAIN, MAIL]}, "urls[1]"),  # e-mail on the push channel
            ("PUT", "/push", {"urls": [PLAIN, " " + PLAIN]}, "urls[1]"),  # the same URL twice
            (
                "PUT",
                "/push",
                {"urls": [f"ntfy://ntfy.example.com/t{i}" for i in range(9)]},
                "urls",
            ),  # nine, one more than a channel keeps
            ("PUT", "/push", {"urls": [PLAIN + "\x00"]}, "urls.0"),  # NUL
            ("PUT", "/push", {"urls": ["ntfy://h/" + "x" * 2000]}, "urls[0]"),  # too long
            ("PUT", "/push", {"urls": [], "url": PLAIN}, "url"),  # not a field
            ("POST", "/email", {"url": NTFY}, "url"),  # not an e-mail URL
            ("POST", "/email", {}, "url"),  # missing
            ("POST", "/push/remove", {"url": 3}, "url"),  # not text
        ],
    )
    def test_malformed_input_is_refused_naming_the_field_and_echoing_no_secret(
        self, api: ApiWorld, method: str, tail: str, body: dict[str, Any] | None, field: str
    ) -> None:
        reply = invalid(api, method, BOBS + tail, field, who="bob", json=body)
        no_secret_in(reply.text)

    def test_a_full_channel_or_a_repeated_url_refuses_the_addition(self, api: ApiWorld) -> None:
        bob = api.actors["bob"].id
        full = [f"ntfy://ntfy.example.com/t{i}" for i in range(8)]
        api.services.destinations.set(bob, bob, "push", full)
        invalid(api, "POST", f"{BOBS}/push", "url", who="bob", json={"url": PLAIN})
        reply = refused(
            api, "POST", f"{BOBS}/push", api.headers("bob"), 409, "conflict", json={"url": full[0]}
        )
        assert reply.json()["details"]["field"] == "url"

    def test_removing_a_url_the_channel_does_not_hold_is_not_found(self, api: ApiWorld) -> None:
        bob = api.actors["bob"].id
        api.services.destinations.set(bob, bob, "push", [NTFY])
        reply = refused(
            api,
            "POST",
            f"{BOBS}/email/remove",
            api.headers("bob"),
            404,
            "not-found",
            json={"url": NTFY},
        )
        no_secret_in(reply.text)
        assert shown(api, "bob", "push")[0]["position"] == 1
