"""Login, sessions with CSRF, logout, password change, login links and API tokens over HTTP."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

import anyio
import httpx2
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from api.conftest import PASSWORD, ApiWorld
from kalends.api import ApiContext
from kalends.api.dispatch import dispatched
from kalends.api.security import DeferredPrincipal
from kalends.auth import Principal
from kalends.errors import Unauthenticated
from kalends.storage.auth_tables import api_tokens, auth_sessions
from kalends.storage.testing import nothing_written


def _sessions(api: ApiWorld) -> int:
    return int(
        api.store.run(
            lambda c: c.execute(select(func.count()).select_from(auth_sessions)).scalar_one(),
            write=False,
        )
    )


def test_login_sets_an_httponly_samesite_cookie_and_me_answers(api: ApiWorld) -> None:
    reply = api.client.post("/api/auth/login", json={"handle": "bob", "password": PASSWORD})
    assert reply.status_code == 200
    body = reply.json()
    assert body["actor"]["handle"] == "bob"
    assert body["actor"]["id"] == str(api.actors["bob"].id)
    cookies = reply.headers.get_list("set-cookie")
    session = next(c for c in cookies if c.startswith("kalends_session="))
    assert "HttpOnly" in session and "SameSite=lax" in session
    csrf = next(c for c in cookies if c.startswith("kalends_csrf="))
    assert "HttpOnly" not in csrf
    me = api.client.get("/api/auth/me")
    assert me.status_code == 200
    assert me.json()["actor"]["handle"] == "bob" and me.json()["kind"] == "session"


def test_wrong_password_and_unknown_handle_answer_the_same_401(api: ApiWorld) -> None:
    with nothing_written(api.store):
        wrong = api.client.post("/api/auth/login", json={"handle": "bob", "password": "nope-nope"})
        ghost = api.client.post("/api/auth/login", json={"handle": "ghost", "password": "x" * 12})
    assert wrong.status_code == ghost.status_code == 401
    assert wrong.json()["code"] == ghost.json()["code"] == "unauthenticated"
    assert wrong.json()["message"] == ghost.json()["message"]
    assert "kalends_session" not in api.client.cookies


def test_login_attempts_are_rate_limited_with_retry_after(api: ApiWorld) -> None:
    for _ in range(5):
        reply = api.client.post(
            "/api/auth/login", json={"handle": "carol", "password": "bad-bad-1"}
        )
        assert reply.status_code == 401
    before = _sessions(api)
    limited = api.client.post("/api/auth/login", json={"handle": "carol", "password": PASSWORD})
    assert limited.status_code == 429
    assert limited.json()["code"] == "rate-limited"
    assert int(limited.headers["Retry-After"]) >= 1
    assert _sessions(api) == before
    api.clock.advance(timedelta(minutes=10))
    assert (
        api.client.post("/api/auth/login", json={"handle": "carol", "password": PASSWORD})
    ).status_code == 200


def test_cookie_session_writes_need_the_csrf_header(api: ApiWorld) -> None:
    csrf = api.login("alice")
    with nothing_written(api.store):
        refused = api.client.post("/api/tokens", json={"name": "laptop"})
        wrong = api.client.post(
            "/api/tokens", json={"name": "laptop"}, headers={"X-CSRF-Token": "forged"}
        )
    assert refused.status_code == wrong.status_code == 403
    assert refused.json()["code"] == wrong.json()["code"] == "csrf-failed"
    made = api.client.post("/api/tokens", json={"name": "laptop"}, headers=csrf)
    assert made.status_code == 201, made.text
    secret = made.json()["secret"]
    # The new token works on its own, without the cookie.
    api.client.cookies.clear()
    me = api.client.get("/api/auth/me", headers={"Authorization": f"Bearer {secret}"})
    assert me.status_code == 200 and me.json()["kind"] == "token"


def test_a_token_never_poses_as_a_session(api: ApiWorld) -> None:
    with nothing_written(api.store):
        create = api.client.post("/api/tokens", json={"name": "x"}, headers=api.headers("bob"))
        password = api.client.post(
            "/api/auth/password",
            json={"currentPassword": PASSWORD, "newPassword": "another long one"},
            headers=api.headers("bob"),
        )
    assert create.status_code == password.status_code == 403
    assert create.json()["code"] == password.json()["code"] == "session-required"


def test_a_bad_authorization_header_is_401_even_with_a_valid_cookie(api: ApiWorld) -> None:
    api.login("alice")
    for header in ("Basic YWxpY2U6eA==", "Bearer", "Bearer kal_not-a-token", "Token abc"):
        reply = api.client.get("/api/auth/me", headers={"Authorization": header})
        assert reply.status_code == 401, header
        assert reply.json()["code"] == "unauthenticated"


def test_expired_and_revoked_tokens_are_refused(api: ApiWorld) -> None:
    for who in ("erin", "frank"):
        reply = api.client.get("/api/auth/me", headers=api.headers(who))
        assert reply.status_code == 401, who
    assert api.client.get("/api/auth/me").status_code == 401


def test_tokens_list_and_revoke_own_only(api: ApiWorld) -> None:
    mine = api.client.get("/api/tokens", headers=api.headers("bob"))
    assert mine.status_code == 200
    assert [t["name"] for t in mine.json()] == ["tests"]
    token_id = mine.json()[0]["id"]
    with nothing_written(api.store):
        foreign = api.client.delete(f"/api/tokens/{token_id}", headers=api.headers("carol"))
        malformed = api.client.delete("/api/tokens/not-a-uuid", headers=api.headers("carol"))
    assert foreign.status_code == 404
    assert malformed.status_code == 422 and malformed.json()["details"]["field"] == "token_id"
    revoked = api.client.delete(f"/api/tokens/{token_id}", headers=api.headers("bob"))
    assert revoked.status_code == 200 and revoked.json()["active"] is False
    assert api.client.get("/api/tokens", headers=api.headers("bob")).status_code == 401


def test_token_bodies_are_validated_before_anything_is_written(api: ApiWorld) -> None:
    csrf = api.login("alice")
    bad = [
        {},
        {"name": ""},
        {"name": "x" * 121},
        {"name": "ok", "expiresInDays": 0},
        {"name": "ok", "expiresInDays": 367},
        {"name": "ok", "expiresInDays": "soon"},
        {"name": "ok", "extra": 1},
    ]
    with nothing_written(api.store):
        for body in bad:
            reply = api.client.post("/api/tokens", json=body, headers=csrf)
            assert reply.status_code == 422, body
            assert reply.json()["code"] == "invalid-input"
            assert reply.json()["details"]["field"]


def test_exchange_trades_a_password_for_a_token_and_leaves_no_session(api: ApiWorld) -> None:
    sessions = _sessions(api)
    reply = api.client.post(
        "/api/auth/tokens/exchange",
        json={"handle": "dave", "password": PASSWORD, "name": "cli", "expiresInDays": 30},
    )
    assert reply.status_code == 201, reply.text
    assert reply.json()["secret"].startswith("kal_")
    assert reply.json()["token"]["name"] == "cli"
    headers = {"Authorization": f"Bearer {reply.json()['secret']}"}
    assert api.client.get("/api/auth/me", headers=headers).json()["actor"]["handle"] == "dave"
    live = api.store.run(
        lambda c: c.execute(
            select(func.count())
            .select_from(auth_sessions)
            .where(auth_sessions.c.revoked_at.is_(None))
        ).scalar_one(),
        write=False,
    )
    assert live == sessions - (sessions - live)  # the exchange's own session ended
    assert "kalends_session" not in reply.cookies
    tokens_of_dave = api.store.run(
        lambda c: c.execute(
            select(func.count())
            .select_from(api_tokens)
            .where(api_tokens.c.actor_id == api.actors["dave"].id)
        ).scalar_one(),
        write=False,
    )
    assert tokens_of_dave == 2


def test_logout_ends_the_session(api: ApiWorld) -> None:
    csrf = api.login("bob")
    assert api.client.get("/api/auth/me").status_code == 200
    cookie = api.client.cookies.get("kalends_session")
    out = api.client.post("/api/auth/logout", headers=csrf)
    assert out.status_code == 204
    api.client.cookies.set("kalends_session", cookie or "")
    assert api.client.get("/api/auth/me").status_code == 401


def test_password_change_keeps_this_session_and_ends_the_others(api: ApiWorld) -> None:
    other = api.client.post("/api/auth/login", json={"handle": "bob", "password": PASSWORD})
    other_cookie = other.cookies.get("kalends_session")
    api.client.cookies.clear()
    csrf = api.login("bob")
    with nothing_written(api.store):
        wrong = api.client.post(
            "/api/auth/password",
            json={"currentPassword": "not it at all", "newPassword": "a brand new secret"},
            headers=csrf,
        )
        short = api.client.post(
            "/api/auth/password",
            json={"currentPassword": PASSWORD, "newPassword": "short"},
            headers=csrf,
        )
    assert wrong.status_code == 401
    assert short.status_code == 422 and short.json()["details"]["field"] == "password"
    changed = api.client.post(
        "/api/auth/password",
        json={"currentPassword": PASSWORD, "newPassword": "a brand new secret"},
        headers=csrf,
    )
    assert changed.status_code == 204
    assert api.client.get("/api/auth/me").status_code == 200
    mine = api.client.cookies.get("kalends_session")
    api.client.cookies.clear()
    api.client.cookies.set("kalends_session", other_cookie or "")
    assert api.client.get("/api/auth/me").status_code == 401
    api.client.cookies.clear()
    api.client.cookies.set("kalends_session", mine or "")
    assert api.client.get("/api/auth/me").status_code == 200
    api.client.cookies.clear()
    old = api.client.post("/api/auth/login", json={"handle": "bob", "password": PASSWORD})
    assert old.status_code == 401
    new = api.client.post(
        "/api/auth/login", json={"handle": "bob", "password": "a brand new secret"}
    )
    assert new.status_code == 200


def test_a_login_link_works_once_and_redirects_with_a_session(api: ApiWorld) -> None:
    secret = api.accounts.issue_login_link(api.actors["carol"].id)
    first = api.client.get(f"/api/auth/link?token={secret}", follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"] == "/"
    assert "kalends_session=" in first.headers["set-cookie"]
    assert api.client.get("/api/auth/me").json()["actor"]["handle"] == "carol"
    api.client.cookies.clear()
    again = api.client.get(f"/api/auth/link?token={secret}", follow_redirects=False)
    assert again.status_code == 401
    assert api.client.get("/api/auth/link", follow_redirects=False).status_code == 422


async def _loop_thread_name() -> str:
    return threading.current_thread().name


def _spy_on_token_checks(api: ApiWorld) -> list[str]:
    """The threads the token lookups run in, and (as ``touch:…``) those of the writes
    recording a use."""
    seen: list[str] = []
    real = api.accounts.check_token

    def spy(secret: str) -> tuple[Principal, Callable[[], None] | None]:
        seen.append(threading.current_thread().name)
        found, touch = real(secret)
        if touch is None:
            return found, None
        recorded = touch

        def spied_touch() -> None:
            seen.append("touch:" + threading.current_thread().name)
            recorded()

        return found, spied_touch

    api.accounts.check_token = spy  # type: ignore[method-assign]
    return seen


def test_a_pooled_route_looks_its_credentials_up_once_in_its_own_thread(api: ApiWorld) -> None:
    seen = _spy_on_token_checks(api)
    loop = api.client.portal.call(_loop_thread_name)  # type: ignore[union-attr]
    # A write runs in the thread pool on every database: the lookup and the use with it.
    reply = api.client.post("/api/lists", json={"name": "Errands"}, headers=api.headers("bob"))
    assert reply.status_code == 201
    assert len(seen) == 2 and seen[0] != loop
    assert seen[1] == "touch:" + seen[0]


def test_a_short_read_runs_on_the_event_loop_on_sqlite_only(api: ApiWorld) -> None:
    seen = _spy_on_token_checks(api)
    loop = api.client.portal.call(_loop_thread_name)  # type: ignore[union-attr]
    first = api.client.get("/api/lists", headers=api.headers("bob"))
    second = api.client.get("/api/lists", headers=api.headers("bob"))
    assert first.status_code == second.status_code == 200
    assert first.json() == second.json()
    lookups = [name for name in seen if not name.startswith("touch:")]
    touches = [name for name in seen if name.startswith("touch:")]
    assert len(lookups) == 2
    # The first use in a minute is recorded once, never on the event loop.
    assert len(touches) == 1 and touches[0] != "touch:" + loop
    ctx: ApiContext = api.client.app.state.kalends  # type: ignore[attr-defined]
    if api.store.dialect == "sqlite":
        assert ctx.inline_routes
        assert lookups == [loop, loop]
    else:
        assert not ctx.inline_routes
        assert loop not in lookups


def test_a_deferred_principal_resolves_before_the_route_body_runs() -> None:
    calls: list[str] = []

    def lookup() -> tuple[Principal, Callable[[], None] | None]:
        calls.append("lookup")
        raise Unauthenticated("the API token is unknown, expired or revoked")

    def route(who: Principal) -> str:
        calls.append("route")
        return who.handle

    wrapped = dispatched(route)
    with pytest.raises(Unauthenticated):
        anyio.run(lambda: wrapped(who=DeferredPrincipal("token", lookup)))
    assert calls == ["lookup"]


def test_an_expired_token_on_a_session_route_is_401_before_403(api: ApiWorld) -> None:
    with nothing_written(api.store):
        reply = api.client.post("/api/tokens", json={"name": "x"}, headers=api.headers("erin"))
    assert reply.status_code == 401 and reply.json()["code"] == "unauthenticated"


def _from(api: ApiWorld, address: str) -> TestClient:
    """A client of the same application connecting from ``address``."""
    return TestClient(api.client.app, client=(address, 50000), raise_server_exceptions=False)


def _login(client: TestClient, handle: str, password: str) -> httpx2.Response:
    return client.post("/api/auth/login", json={"handle": handle, "password": password})


def test_dave_logs_in_from_his_own_address_after_25_failures_as_DAVE_from_other_addresses(
    api: ApiWorld,
) -> None:
    for n in range(25):
        spelling = " DAVE " if n % 2 else "dave"
        assert _login(_from(api, f"203.0.113.{n}"), spelling, "wrong guess").status_code == 401
    # An address that failed on the account waits for all 25 failures, whatever the spelling.
    limited = _login(_from(api, "203.0.113.0"), "dave", PASSWORD)
    assert limited.status_code == 429 and limited.json()["code"] == "rate-limited"
    assert 1 <= int(limited.headers["Retry-After"]) <= 300
    home = _login(_from(api, "192.0.2.44"), " DAVE ", PASSWORD)
    assert home.status_code == 200, home.text
    assert home.json()["actor"]["handle"] == "dave"


def test_the_login_link_works_while_throttled_and_lets_the_password_in_again(
    api: ApiWorld,
) -> None:
    for _ in range(5):
        assert _login(api.client, "carol", "bad-bad-1").status_code == 401
    assert _login(api.client, "carol", PASSWORD).status_code == 429
    secret = api.accounts.issue_login_link(api.actors["carol"].id)
    redeemed = api.client.get(f"/api/auth/link?token={secret}", follow_redirects=False)
    assert redeemed.status_code == 303
    assert api.client.get("/api/auth/me").json()["actor"]["handle"] == "carol"
    api.client.cookies.clear()
    assert _login(api.client, "carol", PASSWORD).status_code == 200
