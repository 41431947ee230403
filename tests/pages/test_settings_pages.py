"""The Settings page (browserless): reminder destinations listed only in redacted form,
added, test-sent to a real local HTTP receiver, removed by channel and position; API
tokens created (the secret in that one answer only), listed and revoked; theme and the
12/24-hour clock kept in cookies and followed by every page; each bad input a clear
error with nothing written, on SQLite and PostgreSQL."""

from __future__ import annotations

import re
from typing import Any

from fastapi.testclient import TestClient

from kalends.reminders.destinations import Destination
from pages.conftest import Pages, csrf_of
from reminders import conftest as receivers
from reminders.conftest import HttpReceiver

# The real local HTTP receiver of the reminder tests, and a port nobody listens on.
http_receiver = receivers.http_receiver
closed_port = receivers.closed_port

SECRET = "s3cr3t-webhook-token"
SIGN_IN = re.compile(r"^/login\?next=")


def _signed_in(pages: Pages, who: str = "bob") -> tuple[TestClient, str]:
    client = pages.sign_in(who)
    page = client.get("/settings")
    assert page.status_code == 200, page.text
    return client, csrf_of(page.text)


def _post(client: TestClient, path: str, /, **data: Any) -> Any:
    return client.post(path, data=data, follow_redirects=False)


def _stored(pages: Pages, who: str = "bob") -> list[Destination]:
    actor = pages.world.actors[who].id
    return pages.world.services.destinations.list(actor, actor)


def _error_of(html: str, field: str) -> str:
    found = re.search(rf'<p class="error" id="err-{field}">([^<]*)</p>', html)
    assert found is not None, f"no error beside {field}"
    return found.group(1)


class TestDestinations:
    def test_an_added_destination_is_listed_redacted_and_its_url_never_shown(
        self, pages: Pages, http_receiver: HttpReceiver
    ) -> None:
        client, csrf = _signed_in(pages)
        url = http_receiver.json_url(f"hooks/{SECRET}")
        reply = _post(client, "/settings/destinations", csrf=csrf, channel="push", url=url)
        assert reply.status_code == 303, reply.text
        assert reply.headers["location"] == "/settings?done=added#destinations"
        assert SECRET not in reply.text
        page = client.get(reply.headers["location"])
        assert "Destination added." in page.text
        [stored] = _stored(pages)
        assert stored.url == url
        assert f'<code class="dest">{stored.display}</code>' in page.text
        assert "127.0.0.1" in stored.display  # the host is shown, the path is not
        assert SECRET not in page.text
        assert url not in page.text

    def test_a_test_message_reaches_the_receiver_and_a_refused_one_says_why(
        self, pages: Pages, http_receiver: HttpReceiver, closed_port: int
    ) -> None:
        client, csrf = _signed_in(pages)
        bob = pages.world.actors["bob"].id
        good = http_receiver.json_url(f"hooks/{SECRET}")
        dead = f"json://127.0.0.1:{closed_port}/hooks/{SECRET}"
        for url in (good, dead):
            pages.world.services.destinations.add(bob, bob, "push", url)
        reply = _post(client, "/settings/destinations/test", csrf=csrf, channel="push", position=1)
        assert reply.status_code == 200, reply.text
        assert "Test message sent" in reply.text
        [request] = http_receiver.received()
        assert request.path == f"/hooks/{SECRET}"
        assert request.json()["title"] == "kalends test message"
        assert "test message from kalends" in request.json()["message"]
        assert SECRET not in reply.text
        refused = _post(
            client, "/settings/destinations/test", csrf=csrf, channel="push", position=2
        )
        assert refused.status_code == 200, refused.text
        said = re.search(
            r"Test message not sent</strong> to push destination 2 \(<code>[^<]+</code>\): "
            r"([^<]+)</p>",
            refused.text,
        )
        assert said is not None, refused.text
        assert said.group(1).startswith("JSON: "), said.group(1)
        assert "connection error" in said.group(1).lower()
        assert SECRET not in refused.text
        assert len(http_receiver.received()) == 1
        assert [d.position for d in _stored(pages)] == [1, 2]  # a test writes nothing

    def test_removing_by_position_keeps_the_others_where_they_were(self, pages: Pages) -> None:
        client, csrf = _signed_in(pages)
        bob = pages.world.actors["bob"].id
        for topic in ("one", "two", "three"):
            pages.world.services.destinations.add(
                bob, bob, "push", f"json://127.0.0.1:9/{topic}-{SECRET}"
            )
        reply = _post(
            client, "/settings/destinations/remove", csrf=csrf, channel="push", position=2
        )
        assert reply.status_code == 303, reply.text
        assert reply.headers["location"] == "/settings?done=removed#destinations"
        assert [(d.position, d.url.split("/")[-1]) for d in _stored(pages)] == [
            (1, f"one-{SECRET}"),
            (3, f"three-{SECRET}"),
        ]
        page = client.get("/settings?done=removed")
        assert "Destination removed." in page.text
        assert 'name="position" value="3"' in page.text
        assert 'name="position" value="2"' not in page.text

    def test_bad_destinations_are_said_beside_their_field_and_nothing_is_written(
        self, pages: Pages
    ) -> None:
        client, csrf = _signed_in(pages)
        bob = pages.world.actors["bob"].id
        pages.world.services.destinations.add(bob, bob, "push", "json://127.0.0.1:9/kept")
        cases = [
            # not a URL at all
            ("push", "not a url", "dest_url", 422, "Not an Apprise URL"),
            # a scheme Apprise has no service for
            ("push", f"nosuch://{SECRET}@host/x", "dest_url", 422, "Apprise cannot use"),
            # an e-mail URL on the push channel
            ("push", "mailto://user:pw@example.com", "dest_url", 422, "cannot be an e-mail"),
            # blank
            ("push", "  ", "dest_url", 422, "cannot be blank"),
            # the same URL again
            ("push", "json://127.0.0.1:9/kept", "dest_url", 409, "already set"),
            # a channel kalends has not
            ("sms", "json://127.0.0.1:9/other", "dest_channel", 422, "Unknown channel"),
        ]
        for channel, url, field, status, words in cases:
            reply = _post(client, "/settings/destinations", csrf=csrf, channel=channel, url=url)
            assert reply.status_code == status, (url, reply.text)
            assert words in _error_of(reply.text, field), url
            control = "f-dest_url" if field == "dest_url" else "f-dest_channel"
            assert re.search(
                rf'id="{control}"[^>]*aria-describedby="[^"]*err-{field}"[^>]*aria-invalid="true"'
                r"[^>]*autofocus"
                if field == "dest_url"
                else rf'name="channel"[^>]*aria-describedby="err-{field}"[^>]*aria-invalid="true"',
                reply.text,
            ), url
            assert SECRET not in reply.text
        # a position that holds nothing, of a channel that is not there, malformed
        missing = _post(
            client, "/settings/destinations/remove", csrf=csrf, channel="push", position=7
        )
        assert missing.status_code == 404
        assert "no push destination 7" in missing.text
        unknown = _post(
            client, "/settings/destinations/remove", csrf=csrf, channel="sms", position=1
        )
        assert unknown.status_code == 422
        malformed = _post(
            client, "/settings/destinations/test", csrf=csrf, channel="push", position="x"
        )
        assert malformed.status_code == 422
        assert [d.url for d in _stored(pages)] == ["json://127.0.0.1:9/kept"]

    def test_a_forged_token_or_no_session_writes_nothing(self, pages: Pages) -> None:
        client, csrf = _signed_in(pages)
        bob = pages.world.actors["bob"].id
        pages.world.services.destinations.add(bob, bob, "push", "json://127.0.0.1:9/kept")
        posts: list[tuple[str, dict[str, Any]]] = [
            ("/settings/destinations", {"channel": "push", "url": "json://127.0.0.1:9/new"}),
            ("/settings/destinations/remove", {"channel": "push", "position": 1}),
            ("/settings/tokens", {"name": "forged", "expires_in_days": "5"}),
            ("/settings/appearance", {"theme": "dark", "clock": "12"}),
        ]
        anon = pages.client("carol")
        for url, data in posts:
            forged = _post(client, url, csrf="forged-token", **data)
            assert forged.status_code == 403, url
            assert "csrf-failed" in forged.text
            assert "set-cookie" not in forged.headers
            signed_out = _post(anon, url, csrf=csrf, **data)
            assert signed_out.status_code == 303, url
            assert SIGN_IN.match(signed_out.headers["location"]), url
        assert [d.url for d in _stored(pages)] == ["json://127.0.0.1:9/kept"]
        names = [t.name for t in pages.world.accounts.tokens(bob)]
        assert names == ["tests"]


class TestTokens:
    def test_a_new_tokens_secret_is_shown_once_and_works_until_revoked_and_blank_never_expires(
        self, pages: Pages
    ) -> None:
        client, csrf = _signed_in(pages)
        reply = _post(
            client, "/settings/tokens", csrf=csrf, name="laptop CLI", expires_in_days="30"
        )
        assert reply.status_code == 201, reply.text
        found = re.search(r'id="new-token-secret"[^>]*value="(kal_[^"]+)"', reply.text)
        assert found is not None, reply.text
        secret = found.group(1)
        api = pages.world.client
        listed = api.get("/api/tokens", headers={"Authorization": f"Bearer {secret}"})
        assert listed.status_code == 200
        made = next(t for t in listed.json() if t["name"] == "laptop CLI")
        assert made["expiresAt"] is not None
        page = client.get("/settings")
        assert secret not in page.text
        assert "laptop CLI" in page.text
        revoke = _post(client, f"/settings/tokens/{made['id']}/revoke", csrf=csrf)
        assert revoke.status_code == 303
        assert revoke.headers["location"] == "/settings?done=revoked#tokens"
        after = api.get("/api/tokens", headers={"Authorization": f"Bearer {secret}"})
        assert after.status_code == 401
        page = client.get("/settings?done=revoked")
        assert "Token revoked" in page.text
        row = page.text[page.text.index("laptop CLI") :]
        assert "revoked" in row[: row.index("</tr>")]
        # A blank expiry: a token that never expires.
        forever = _post(client, "/settings/tokens", csrf=csrf, name="forever", expires_in_days="")
        assert forever.status_code == 201, forever.text
        bob = pages.world.actors["bob"].id
        made_forever = next(t for t in pages.world.accounts.tokens(bob) if t.name == "forever")
        assert made_forever.expires_at is None

    def test_bad_token_forms_are_said_beside_their_field_and_nothing_is_made(
        self, pages: Pages
    ) -> None:
        client, csrf = _signed_in(pages)
        bob = pages.world.actors["bob"].id
        cases = [
            # a name longer than a token's name may be
            ("x" * 121, "30", "token_name", "At most 120 characters"),
            # a blank name
            ("   ", "30", "token_name", "non-empty"),
            # an expiry that is not a number
            ("ok", "soon", "token_days", "whole number of days"),
            # zero days
            ("ok", "0", "token_days", "from 1 to 366"),
            # past the longest lifetime
            ("ok", "400", "token_days", "from 1 to 366"),
            # a negative number
            ("ok", "-3", "token_days", "whole number"),
        ]
        for name, days, field, words in cases:
            reply = _post(client, "/settings/tokens", csrf=csrf, name=name, expires_in_days=days)
            assert reply.status_code == 422, (name, days, reply.text)
            assert words in _error_of(reply.text, field), (name, days)
            assert re.search(
                rf'id="f-{field}"[^>]*aria-describedby="hint-{field} err-{field}"'
                r'[^>]*aria-invalid="true"[^>]*autofocus',
                reply.text,
            ), (name, days)
            assert "kal_" not in reply.text
        assert [t.name for t in pages.world.accounts.tokens(bob)] == ["tests"]

    def test_another_persons_token_cannot_be_revoked(self, pages: Pages) -> None:
        client, csrf = _signed_in(pages)
        carol = pages.world.actors["carol"].id
        [theirs] = pages.world.accounts.tokens(carol)
        reply = _post(client, f"/settings/tokens/{theirs.id}/revoke", csrf=csrf)
        assert reply.status_code == 404
        [still] = pages.world.accounts.tokens(carol)
        assert still.active


class TestCalendarFeeds:
    def test_a_new_feeds_address_is_shown_once_and_answers_until_revoked(
        self, pages: Pages
    ) -> None:
        client, csrf = _signed_in(pages)
        assert "No calendar feed yet." in client.get("/settings").text
        reply = _post(client, "/settings/feeds", csrf=csrf)
        assert reply.status_code == 201, reply.text
        found = re.search(
            r'id="new-feed-url"[^>]*value="https?://[^/"]+(/feeds/[^"]+\.ics)"', reply.text
        )
        assert found is not None, reply.text
        path = found.group(1)
        api = pages.world.client
        feed = api.get(path)
        assert feed.status_code == 200
        assert feed.headers["content-type"].startswith("text/calendar")
        page = client.get("/settings")
        assert path not in page.text
        [made] = pages.world.services.feeds.list(pages.world.actors["bob"].id)
        revoke = _post(client, f"/settings/feeds/{made.id}/revoke", csrf=csrf)
        assert revoke.status_code == 303
        assert revoke.headers["location"] == "/settings?done=feed-revoked#feed"
        assert api.get(path).status_code == 404
        page = client.get(revoke.headers["location"])
        assert "Calendar feed revoked" in page.text
        assert "/settings/feeds/" not in page.text  # no Revoke left to offer
        # Someone else's feed is not found, and stays as it was.
        carol = pages.world.actors["carol"].id
        theirs = pages.world.services.feeds.create(carol, base_url="http://example.com")
        refused = _post(client, f"/settings/feeds/{theirs.feed.id}/revoke", csrf=csrf)
        assert refused.status_code == 404
        assert api.get(theirs.url.removeprefix("http://example.com")).status_code == 200
        forged = _post(client, "/settings/feeds", csrf="forged-token")
        assert forged.status_code == 403
        assert len(pages.world.services.feeds.list(pages.world.actors["bob"].id)) == 1


class TestThemeAndClock:
    def test_the_12_hour_clock_is_followed_by_every_page_and_24_hours_is_the_default(
        self, pages: Pages
    ) -> None:
        sid = pages.schedule("alice", "Nightly")  # daily at 02:30 in New York
        client, csrf = _signed_in(pages, "bob")
        schedule = f"/w/{pages.world.home.id}/schedules/{sid}"
        before = client.get(schedule).text
        assert re.search(r"<time datetime=\"[^\"]+\">\d{4}-\d\d-\d\d 02:30 \w{3} ", before)
        assert " AM " not in before
        reply = _post(client, "/settings/appearance", csrf=csrf, theme="dark", clock="12")
        assert reply.status_code == 303
        assert reply.headers["location"] == "/settings?done=appearance#appearance"
        after = client.get(schedule).text
        assert re.search(r"<time datetime=\"[^\"]+\">\d{4}-\d\d-\d\d 2:30 AM \w{3} ", after)
        assert '<html lang="en" class="no-js" data-theme="dark">' in after
        settings = client.get("/settings?done=appearance").text
        assert "Theme and clock saved." in settings
        assert 'name="clock" value="12" checked' in settings
        assert 'name="theme" value="dark" checked' in settings
        # The fake clock reads 12:00 UTC: noon on the 12-hour clock.
        assert re.search(r">\d{4}-\d\d-\d\d 12:00 PM \w{3} UTC</time>", settings)
        back = _post(client, "/settings/appearance", csrf=csrf, theme="", clock="24")
        assert back.status_code == 303
        again = client.get(schedule).text
        assert " 2:30 AM " not in again
        assert "data-theme" not in again[: again.index("<head>")]
        # An unknown theme or clock: the defaults (system, 24 hours).
        odd = _post(client, "/settings/appearance", csrf=csrf, theme="neon", clock="13")
        assert odd.status_code == 303
        client.cookies.set("kalends_clock", "13")
        page = client.get("/settings").text
        assert 'name="clock" value="24" checked' in page
        assert 'name="theme" value="" checked' in page
