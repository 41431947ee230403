"""Paired devices on the pages, without a browser, on SQLite and PostgreSQL.

A signed-in person makes a one-time pairing link on Settings; another browser opens it
(a page that names the device and its owner and uses nothing up), confirms it, and holds
the device cookie from then on. The device reads and acts on the pages as its actor, and
an answer it gives is marked with the device as its principal (seed 002, "Wayfinder
human decision mark": the UI principal is a login session or a paired device, and a
device ID never poses as a session). Each refusal writes nothing: a link used, expired
or unknown; a confirmation without its page's token; a forged CSRF token; a token minted
by the device taken from the session and the other way round; a revoked or expired
device (sent to sign in); a device managing credentials.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any
from uuid import UUID

from fastapi.testclient import TestClient
from httpx2 import Response
from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from kalends.auth import TokenInfo
from kalends.questions import MarkState, Question, QuestionState
from kalends.storage.auth_tables import device_pairings
from kalends.storage.testing import nothing_written
from pages.conftest import Pages, csrf_of

FIELDS: list[dict[str, Any]] = [
    {"id": "go", "kind": "choice", "label": "Ship it?", "options": ["yes", "later"]},
]
ANSWER = {"expected_revision": "1", "answer-go": "later"}
SIGN_IN = re.compile(r"^/login(\?next=.*)?$")
_LINK = re.compile(r'id="new-pairing-url" class="mono secret" value="([^"]+)"')
_PAIR_TOKEN = re.compile(
    r'<form method="post" action="(/pair/[^"]+)">\s*<input type="hidden" name="csrf" '
    r'value="([^"]+)">'
)
# The device cookie of a device that never expires: 400 days.
NEVER_SECONDS = 400 * 24 * 3600


def _actor(pages: Pages, who: str) -> UUID:
    return pages.world.actors[who].id


def _browser(pages: Pages, scheme: str = "http") -> TestClient:
    """A fresh browser: no cookie of any kind."""
    return TestClient(
        pages.world.client.app, raise_server_exceptions=False, base_url=f"{scheme}://testserver"
    )


def _signed_in(pages: Pages, who: str = "bob") -> tuple[TestClient, str]:
    client = pages.sign_in(who)
    return client, csrf_of(client.get("/settings").text)


def _make_link(client: TestClient, csrf: str, name: str, days: str = "30") -> tuple[Response, str]:
    """Pairs a device on Settings; the answer and the pairing link's path (``/pair/…``)."""
    reply = client.post(
        "/settings/devices", data={"csrf": csrf, "name": name, "expires_in_days": days}
    )
    assert reply.status_code == 201, reply.text
    found = _LINK.search(reply.text)
    assert found is not None, "the answer shows no pairing link"
    url = found.group(1)
    assert url.startswith("http://127.0.0.1:8000/pair/"), url
    return reply, "/pair/" + url.partition("/pair/")[2]


def _pair_token(html: str) -> tuple[str, str]:
    """The pairing form's action and its own token (not the viewer's CSRF token)."""
    found = _PAIR_TOKEN.search(html)
    assert found is not None, "the page has no pairing form"
    return found.group(1), found.group(2)


def _confirm(browser: TestClient, link: str) -> Response:
    page = browser.get(link)
    assert page.status_code == 200, page.text
    action, token = _pair_token(page.text)
    assert action == link
    return browser.post(link, data={"csrf": token}, follow_redirects=False)


def _devices(pages: Pages, who: str = "bob") -> list[TokenInfo]:
    return pages.world.accounts.devices(_actor(pages, who))


def _device_id(pages: Pages, name: str, who: str = "bob") -> UUID:
    (found,) = [d.id for d in _devices(pages, who) if d.name == name]
    return found


def _paired(
    pages: Pages, name: str = "Kitchen tablet", days: str = "30"
) -> tuple[TestClient, str, TestClient, str, UUID]:
    """Bob's session (and its CSRF token) and a browser paired as his device ``name``
    (and the device's CSRF token, and its ID)."""
    session, csrf = _signed_in(pages)
    _, link = _make_link(session, csrf, name, days)
    device = _browser(pages)
    reply = _confirm(device, link)
    assert reply.status_code == 303, reply.text
    device_csrf = csrf_of(device.get("/").text)
    return session, csrf, device, device_csrf, _device_id(pages, name)


def _cookie(reply: Response, name: str) -> str:
    (found,) = [c for c in reply.headers.get_list("set-cookie") if c.startswith(f"{name}=")]
    return found


def _attributes(cookie: str) -> dict[str, str]:
    """A Set-Cookie line's attributes, names lowercased (``httponly`` → ``""``)."""
    parts = [p.strip() for p in cookie.split(";")[1:]]
    return {k.lower(): v for k, _, v in (p.partition("=") for p in parts)}


def _ask(pages: Pages, passage: str = "psg_dev_1") -> Question:
    pages.world.clock.advance(60)
    return pages.world.services.questions.ask(
        workspace_id=pages.world.home.id,
        schedule_id=None,
        passage_id=passage,
        prompt="Release 2.0 tonight?",
        fields=FIELDS,
    )


def _mint(client: TestClient, question: Question, csrf: str) -> Response:
    return client.post(f"/questions/{question.id}/token", data={"csrf": csrf, **ANSWER})


def _answer(client: TestClient, question: Question, csrf: str, token: str) -> Response:
    return client.post(
        f"/questions/{question.id}/answer",
        data={"csrf": csrf, **ANSWER, "token": token},
        follow_redirects=False,
    )


def _pairings_written(pages: Pages) -> int:
    """How many pairing links there are (made, used or not)."""

    def count(conn: Connection) -> int:
        return int(conn.execute(select(func.count()).select_from(device_pairings)).scalar_one())

    return pages.world.store.run(count, write=False)


class TestPairing:
    def test_the_link_names_the_device_and_its_owner_and_opening_it_uses_nothing(
        self, pages: Pages
    ) -> None:
        session, csrf = _signed_in(pages)
        made, link = _make_link(session, csrf, "Kitchen <tablet>")
        assert "Open it in the device's browser within 15 minutes" in made.text
        browser = _browser(pages)
        for _ in range(2):  # a link preview, then the person: the link still works
            page = browser.get(link)
            assert page.status_code == 200, page.text
            assert (
                "Pair this browser as the device <strong>«Kitchen &lt;tablet&gt;»</strong> "
                "of <strong>@bob</strong>?" in page.text
            )
            assert '<button type="submit" class="primary">Pair this browser</button>' in page.text
            assert "This link works once, until <time datetime=" in page.text
            assert "(in 15 min)" in page.text
            assert page.headers["referrer-policy"] == "no-referrer"
            assert page.headers["cache-control"] == "no-store"
            pair_cookie = _attributes(_cookie(page, "kalends_pair_csrf"))
            assert pair_cookie["path"] == "/pair" and "httponly" in pair_cookie
            assert pair_cookie["samesite"].lower() == "strict"
        assert _devices(pages) == []
        assert "kalends_device" not in browser.cookies

    def test_confirming_sets_the_device_cookie_and_opens_the_now_page(self, pages: Pages) -> None:
        session, csrf = _signed_in(pages)
        _, link = _make_link(session, csrf, "Kitchen tablet", days="30")
        browser = _browser(pages)
        reply = _confirm(browser, link)
        assert reply.status_code == 303, reply.text
        assert reply.headers["location"] == "/"
        cookie = _attributes(_cookie(reply, "kalends_device"))
        assert "httponly" in cookie and cookie["samesite"].lower() == "lax"
        assert cookie["path"] == "/" and "secure" not in cookie
        assert cookie["max-age"] == str(30 * 24 * 3600)
        now = browser.get("/")
        assert now.status_code == 200
        assert "<h1>Now</h1>" in now.text
        assert "Signed in as <strong>bob</strong> on a paired device" in now.text
        assert "Sign out and unpair this device" in now.text
        (device,) = _devices(pages)
        assert (device.name, device.active, device.device) == ("Kitchen tablet", True, True)
        assert device.last_used_at is not None  # the Now page was its first use

    def test_over_https_the_cookie_is_secure_and_a_device_that_never_expires_keeps_it_long(
        self, pages: Pages
    ) -> None:
        session, csrf = _signed_in(pages)
        made, link = _make_link(session, csrf, "Phone", days="")
        assert "The device stays paired until you revoke it." in made.text
        browser = _browser(pages, scheme="https")
        reply = _confirm(browser, link)
        assert reply.status_code == 303, reply.text
        cookie = _attributes(_cookie(reply, "kalends_device"))
        assert "secure" in cookie
        assert cookie["max-age"] == str(NEVER_SECONDS)
        (device,) = _devices(pages)
        assert device.expires_at is None

    def test_a_used_an_expired_and_an_unknown_link_are_a_404_page_that_writes_nothing(
        self, pages: Pages
    ) -> None:
        session, csrf = _signed_in(pages)
        _, used = _make_link(session, csrf, "Used")
        _, late = _make_link(session, csrf, "Late")
        first = _browser(pages)
        assert _confirm(first, used).status_code == 303
        # A second browser had the used link's page open before it was used.
        second = _browser(pages)
        _, token = _pair_token(second.get(late).text)
        pages.world.clock.advance(timedelta(minutes=15, seconds=1))
        unknown = "/pair/" + "x" * 43
        for link in (used, late, unknown):
            with nothing_written(pages.world.store):
                page = second.get(link)
                assert page.status_code == 404, (link, page.text)
                assert "<h1>This pairing link cannot be used</h1>" in page.text
                assert "unknown, already used or expired" in page.text
                assert "Pair this browser</button>" not in page.text
                reply = second.post(link, data={"csrf": token}, follow_redirects=False)
                assert reply.status_code == 404, (link, reply.text)
                assert "kalends_device" not in reply.headers.get("set-cookie", "")
        assert [d.name for d in _devices(pages)] == ["Used"]
        assert second.get("/", follow_redirects=False).status_code == 303

    def test_the_confirmation_needs_the_token_its_own_page_set(self, pages: Pages) -> None:
        session, csrf = _signed_in(pages)
        _, link = _make_link(session, csrf, "Tablet")
        browser = _browser(pages)
        _, token = _pair_token(browser.get(link).text)
        # Another site's form: no pairing cookie, or a token of its own.
        for client, sent in ((_browser(pages), token), (browser, "forged")):
            with nothing_written(pages.world.store):
                reply = client.post(link, data={"csrf": sent}, follow_redirects=False)
            assert reply.status_code == 403, reply.text
            assert "the pairing form expired: open the pairing link again" in reply.text
        assert _devices(pages) == []
        assert _confirm(browser, link).status_code == 303  # the link still works

    def test_a_signed_in_browser_may_pair_and_its_login_session_keeps_precedence(
        self, pages: Pages
    ) -> None:
        session, csrf = _signed_in(pages)
        _, link = _make_link(session, csrf, "Laptop")
        page = session.get(link)
        assert "This browser is already signed in as <strong>bob</strong> with a login" in (
            page.text
        )
        assert "the pages go on using it while it lasts, and the device once you sign out" in (
            page.text
        )
        reply = _confirm(session, link)
        assert reply.status_code == 303
        now = session.get("/").text
        assert "Signed in as <strong>bob</strong></span>" in now
        assert "Sign out and unpair this device" not in now
        signed_out = session.post("/logout", data={"csrf": csrf}, follow_redirects=False)
        assert signed_out.headers["location"] == "/login?out=1"
        assert "Signed in as <strong>bob</strong> on a paired device" in session.get("/").text
        (device,) = _devices(pages)
        assert device.active

    def test_a_session_cookie_that_no_longer_signs_in_leaves_the_device_to_be_tried(
        self, pages: Pages
    ) -> None:
        session, csrf = _signed_in(pages)
        _, link = _make_link(session, csrf, "Laptop")
        assert _confirm(session, link).status_code == 303
        # The session ends elsewhere (signed out through the API): its cookie stays here.
        pages.world.accounts.logout(session.cookies["kalends_session"])
        assert "kalends_session" in session.cookies
        now = session.get("/", follow_redirects=False)
        assert now.status_code == 200
        assert "Signed in as <strong>bob</strong> on a paired device" in now.text

    def test_a_malformed_secret_is_refused_before_any_service(self, pages: Pages) -> None:
        browser = _browser(pages)
        reply = browser.get("/pair/" + "x" * 300)
        assert reply.status_code == 422, reply.text


class TestTheDeviceViewer:
    def test_a_device_reads_the_pages_as_its_actor(self, pages: Pages) -> None:
        _, _, device, _, device_id = _paired(pages)
        question = _ask(pages)
        home = pages.world.home.id
        for path in ("/", f"/w/{home}/schedules", f"/w/{home}/questions", "/lists"):
            page = device.get(path)
            assert page.status_code == 200, (path, page.text)
            assert "Signed in as <strong>bob</strong> on a paired device" in page.text
        page = device.get(f"/questions/{question.id}")
        assert page.status_code == 200
        assert "Send the answer" in page.text
        settings = device.get("/settings").text
        assert '<span class="badge idle">this browser</span>' in settings
        assert f'action="/settings/devices/{device_id}/revoke"' in settings
        assert "Unpair this device</button>" in settings
        # Dave's workspace is not bob's, whichever way bob comes in.
        away = device.get(f"/w/{pages.world.away.id}/schedules")
        assert away.status_code == 404

    def test_a_devices_answer_is_marked_with_the_device_as_its_principal(
        self, pages: Pages
    ) -> None:
        _, _, device, device_csrf, device_id = _paired(pages)
        question = _ask(pages)
        minted = _mint(device, question, device_csrf)
        assert minted.status_code == 200, minted.text
        reply = _answer(device, question, device_csrf, minted.json()["token"])
        assert reply.status_code == 303, reply.text
        assert reply.headers["location"] == f"/questions/{question.id}?done=answered"
        service = pages.world.services.questions
        answered = service.get(_actor(pages, "alice"), question.id)
        assert answered.state is QuestionState.ANSWERED
        assert answered.answered_by == _actor(pages, "bob")
        marks = service.marks(_actor(pages, "alice"), question.id)
        assert [(m.state, m.principal_kind.value, m.principal_id) for m in marks] == [
            (MarkState.PENDING, "device", str(device_id))
        ]

    def test_a_token_minted_on_the_device_is_refused_to_the_session_and_the_other_way(
        self, pages: Pages
    ) -> None:
        session, csrf, device, device_csrf, _ = _paired(pages)
        question = _ask(pages)
        by_device = _mint(device, question, device_csrf).json()["token"]
        by_session = _mint(session, question, csrf).json()["token"]
        for client, token, said in (
            (session, by_device, csrf),
            (device, by_session, device_csrf),
        ):
            with nothing_written(pages.world.store):
                reply = _answer(client, question, said, token)
            assert reply.status_code == 403, reply.text
            assert "Not recorded:" in reply.text
        service = pages.world.services.questions
        assert service.get(_actor(pages, "alice"), question.id).state is QuestionState.OPEN
        assert service.marks(_actor(pages, "alice"), question.id) == []
        # Each token still works from where it was minted.
        assert _answer(session, question, csrf, by_session).status_code == 303
        (mark,) = service.marks(_actor(pages, "alice"), question.id)
        assert mark.principal_kind.value == "session"

    def test_a_revoked_device_is_sent_to_sign_in_and_can_neither_mint_nor_answer(
        self, pages: Pages
    ) -> None:
        session, csrf, device, device_csrf, device_id = _paired(pages)
        question = _ask(pages)
        token = _mint(device, question, device_csrf).json()["token"]
        revoked = session.post(
            f"/settings/devices/{device_id}/revoke", data={"csrf": csrf}, follow_redirects=False
        )
        assert revoked.status_code == 303
        assert revoked.headers["location"] == "/settings?done=device-revoked#devices"
        with nothing_written(pages.world.store):
            page = device.get("/settings", follow_redirects=False)
            assert page.status_code == 303
            assert page.headers["location"] == "/login?next=/settings"
            minted = _mint(device, question, device_csrf)
            assert (minted.status_code, minted.json()["code"]) == (401, "sign-in-required")
            answered = _answer(device, question, device_csrf, token)
            assert answered.status_code == 303
            assert SIGN_IN.match(answered.headers["location"])
        service = pages.world.services.questions
        assert service.get(_actor(pages, "alice"), question.id).state is QuestionState.OPEN
        # The sign-in page says why, once, and clears the cookie that no longer signs in.
        login = device.get("/login?next=/settings")
        assert "This browser was paired as a device, and that pairing has ended" in login.text
        assert _attributes(_cookie(login, "kalends_device"))["max-age"] == "0"
        assert "pairing has ended" not in device.get("/login").text
        shown = session.get("/settings?done=device-revoked").text
        assert "Device revoked: its browser is signed out at its next page." in shown
        assert '<span class="badge idle"><span aria-hidden="true">✗</span> revoked</span>' in shown

    def test_an_expired_device_is_sent_to_sign_in(self, pages: Pages) -> None:
        _, _, device, _, _ = _paired(pages, days="1")
        assert device.get("/", follow_redirects=False).status_code == 200
        assert "pairing has ended" not in device.get("/login").text
        pages.world.clock.advance(timedelta(days=1, seconds=1))
        reply = device.get("/", follow_redirects=False)
        assert (reply.status_code, reply.headers["location"]) == (303, "/login")

    def test_signing_out_of_a_device_unpairs_it(self, pages: Pages) -> None:
        _, _, device, device_csrf, _ = _paired(pages)
        forged = device.post("/logout", data={"csrf": "forged"}, follow_redirects=False)
        assert forged.status_code == 403
        reply = device.post("/logout", data={"csrf": device_csrf}, follow_redirects=False)
        assert (reply.status_code, reply.headers["location"]) == (303, "/login?out=2")
        assert _attributes(_cookie(reply, "kalends_device"))["max-age"] == "0"
        (found,) = _devices(pages)
        assert not found.active and found.revoked_at is not None
        login = device.get("/login?out=2").text
        assert "This browser is no longer a paired device" in login
        assert "pairing has ended" not in login  # its cookie was cleared on the way out
        assert device.get("/", follow_redirects=False).status_code == 303


class TestSettings:
    def test_the_list_shows_each_device_and_revoke_needs_the_csrf_token(self, pages: Pages) -> None:
        session, csrf, device, _, tablet = _paired(pages, "Kitchen tablet")
        _, phone = _make_link(session, csrf, "Phone", days="")
        page = session.get("/settings").text
        assert '<li><a href="#devices">Paired devices</a></li>' in page
        assert '<td data-label="Name">Kitchen tablet</td>' in page
        assert '<span aria-hidden="true">●</span> paired</span>' in page
        assert 'aria-label="Revoke device Kitchen tablet"' in page
        assert "Pair a device</legend>" in page
        assert "Phone" not in page  # a link not yet used is no device
        assert "kalends_session" not in page and phone not in page
        with nothing_written(pages.world.store):
            forged = session.post(
                f"/settings/devices/{tablet}/revoke",
                data={"csrf": "forged"},
                follow_redirects=False,
            )
        assert forged.status_code == 403 and "csrf-failed" in forged.text
        assert device.get("/", follow_redirects=False).status_code == 200
        reply = session.post(
            f"/settings/devices/{tablet}/revoke", data={"csrf": csrf}, follow_redirects=False
        )
        assert reply.status_code == 303
        assert device.get("/", follow_redirects=False).status_code == 303
        again = session.post(
            f"/settings/devices/{tablet}/revoke", data={"csrf": csrf}, follow_redirects=False
        )
        assert again.status_code in (303, 409), again.text

    def test_a_pairing_link_is_shown_once_and_a_forged_or_signed_out_pairing_writes_nothing(
        self, pages: Pages
    ) -> None:
        session, csrf = _signed_in(pages)
        made, link = _make_link(session, csrf, "Tablet")
        assert (
            'id="new-pairing-url"' in made.text and "works once and is not shown again" in made.text
        )
        assert link.removeprefix("/pair/") not in session.get("/settings").text
        before = _pairings_written(pages)
        with nothing_written(pages.world.store):
            forged = session.post(
                "/settings/devices",
                data={"csrf": "forged", "name": "Forged", "expires_in_days": "5"},
            )
            assert forged.status_code == 403 and "csrf-failed" in forged.text
            signed_out = _browser(pages).post(
                "/settings/devices",
                data={"csrf": csrf, "name": "Anon", "expires_in_days": "5"},
                follow_redirects=False,
            )
            assert signed_out.status_code == 303
            assert SIGN_IN.match(signed_out.headers["location"])
        assert _pairings_written(pages) == before == 1

    def test_a_bad_lifetime_or_name_is_said_beside_its_field_and_writes_nothing(
        self, pages: Pages
    ) -> None:
        session, csrf = _signed_in(pages)
        cases = [
            ("Tablet", "0", "device_days", "Expires after: a whole number of days from 1 to"),
            ("Tablet", "ten", "device_days", "a device that never expires"),
            ("Tablet", "367", "device_days", "got &#39;367&#39;"),
            ("", "5", "device_name", ""),
            ("x" * 121, "5", "device_name", ""),
        ]
        for name, days, field, words in cases:
            with nothing_written(pages.world.store):
                reply = session.post(
                    "/settings/devices",
                    data={"csrf": csrf, "name": name, "expires_in_days": days},
                )
            assert reply.status_code == 422, (name, days, reply.text)
            found = re.search(rf'<p class="error" id="err-{field}">([^<]*)</p>', reply.text)
            assert found is not None, (name, days)
            assert words in found.group(1), found.group(1)
            assert re.search(
                rf'id="f-{field}"[^>]*aria-describedby="hint-{field} err-{field}"'
                r'[^>]*aria-invalid="true"[^>]*autofocus',
                reply.text,
            ), (name, days)
            assert 'id="new-pairing-url"' not in reply.text

    def test_anothers_device_is_not_found(self, pages: Pages) -> None:
        _, _, device, _, tablet = _paired(pages)
        dave, dave_csrf = _signed_in(pages, "dave")
        with nothing_written(pages.world.store):
            reply = dave.post(
                f"/settings/devices/{tablet}/revoke",
                data={"csrf": dave_csrf},
                follow_redirects=False,
            )
        assert reply.status_code == 404, reply.text
        assert "Kitchen tablet" not in dave.get("/settings").text
        assert device.get("/", follow_redirects=False).status_code == 200


class TestADeviceManagesNoCredentials:
    def test_the_forms_are_not_shown_to_it_and_their_posts_are_refused(self, pages: Pages) -> None:
        session, csrf, device, device_csrf, own = _paired(pages, "Tablet")
        _, link = _make_link(session, csrf, "Phone")
        assert _confirm(_browser(pages), link).status_code == 303
        other = _device_id(pages, "Phone")
        bob = _actor(pages, "bob")
        feed = pages.world.services.feeds.create(bob, base_url="http://127.0.0.1:8000")
        (token,) = [t for t in pages.world.accounts.tokens(bob) if not t.device]
        page = device.get("/settings").text
        for action in (
            "/settings/tokens",
            "/settings/devices",
            "/settings/destinations",
            "/settings/feeds",
            f"/settings/tokens/{token.id}/revoke",
            f"/settings/feeds/{feed.feed.id}/revoke",
            f"/settings/devices/{other}/revoke",
        ):
            assert f'action="{action}"' not in page, action
        for said in (
            "A paired device cannot create or revoke API tokens",
            "A paired device cannot pair other devices",
            "A paired device cannot add reminder destinations",
            "A paired device cannot create or revoke calendar feeds",
        ):
            assert said in page, said
        assert f'action="/settings/devices/{own}/revoke"' in page
        posts: list[tuple[str, dict[str, str]]] = [
            ("/settings/tokens", {"name": "stolen", "expires_in_days": "5"}),
            ("/settings/devices", {"name": "another", "expires_in_days": "5"}),
            ("/settings/destinations", {"channel": "push", "url": "json://127.0.0.1:9/x"}),
            ("/settings/feeds", {}),
            (f"/settings/tokens/{token.id}/revoke", {}),
            (f"/settings/feeds/{feed.feed.id}/revoke", {}),
        ]
        with nothing_written(pages.world.store):
            for url, data in posts:
                reply = device.post(url, data={"csrf": device_csrf, **data})
                assert reply.status_code == 403, (url, reply.text)
                assert "a paired device cannot do this; sign in with your password" in reply.text
            # Another device of the same person: a device revokes only itself.
            reply = device.post(f"/settings/devices/{other}/revoke", data={"csrf": device_csrf})
            assert reply.status_code in (403, 404), reply.text
        assert all(d.active for d in _devices(pages))

    def test_it_unpairs_itself_from_settings(self, pages: Pages) -> None:
        _, _, device, device_csrf, own = _paired(pages)
        reply = device.post(
            f"/settings/devices/{own}/revoke", data={"csrf": device_csrf}, follow_redirects=False
        )
        assert (reply.status_code, reply.headers["location"]) == (303, "/login?out=2")
        assert _attributes(_cookie(reply, "kalends_device"))["max-age"] == "0"
        (found,) = _devices(pages)
        assert found.revoked_at is not None
