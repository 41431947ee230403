"""`kalends serve` as a real process: the first start, the login link, health, logs.

One server per backend serves the whole module, first started on a fresh database.
"""

from __future__ import annotations

import signal
from http.cookies import SimpleCookie
from pathlib import Path

import httpx
from sqlalchemy import select

from kalends.auth import Accounts
from kalends.storage.auth_tables import accounts
from kalends.storage.identity_tables import actors
from kalends.storage.migrate import open_store

from .conftest import LINK, OWNER, SERVING, Server, start_server, wait_until


def set_cookies(response: httpx.Response) -> dict[str, SimpleCookie]:
    """Each Set-Cookie header of ``response``, parsed, by cookie name."""
    found: dict[str, SimpleCookie] = {}
    for header in response.headers.get_list("set-cookie"):
        cookie = SimpleCookie()
        cookie.load(header)
        [name] = list(cookie)
        found[name] = cookie
    return found


class TestFirstStart:
    def test_it_prints_one_login_link_then_where_it_serves(self, shared_server: Server) -> None:
        link_line, serving_line = shared_server.lines

        link = LINK.fullmatch(link_line)
        assert link is not None, link_line
        assert link.group(1) == OWNER
        assert link.group(2).startswith(f"{shared_server.base}/api/auth/link?token=")
        assert len(link.group(3)) >= 40
        serving = SERVING.fullmatch(serving_line)
        assert serving is not None and int(serving.group(1)) == shared_server.port != 0

    def test_the_link_logs_the_owner_in_once_with_an_httponly_samesite_cookie(
        self, shared_server: Server
    ) -> None:
        with shared_server.client() as client:
            assert client.get("/api/auth/me").status_code == 401

            redeemed = client.get(shared_server.link, follow_redirects=False)

            assert redeemed.status_code == 303, redeemed.text
            cookies = set_cookies(redeemed)
            session = cookies["kalends_session"]["kalends_session"]
            assert session.value and session["httponly"] is True
            assert session["samesite"].lower() == "lax"
            assert session["path"] == "/"
            csrf = cookies["kalends_csrf"]["kalends_csrf"]
            assert csrf.value and not csrf["httponly"]

            # The client keeps the cookie as a browser would, and sends it back.
            assert client.cookies.get("kalends_session") == session.value
            me = client.get("/api/auth/me")
            assert me.status_code == 200, me.text
            body = me.json()
            assert (body["actor"]["handle"], body["kind"]) == (OWNER, "session")
            assert body["account"]["isOwner"] is True

            again = client.get(shared_server.link, follow_redirects=False)
            assert again.status_code == 401, again.text
            assert again.json()["code"] == "unauthenticated"
            assert "set-cookie" not in again.headers

        # The database holds the owner's account, found as the server found it.
        store = open_store(shared_server.database)
        try:
            accounts = Accounts(store)
            assert accounts.has_owner()
            assert accounts.account(OWNER)["isOwner"] is True
        finally:
            store.close()


class TestHealth:
    def test_healthz_answers_ok(self, shared_server: Server) -> None:
        with shared_server.client() as client:
            reply = client.get("/healthz")
        assert (reply.status_code, reply.json()) == (200, {"status": "ok"})

    def test_readyz_checks_the_database_and_both_loops(self, shared_server: Server) -> None:
        with shared_server.client() as client:
            reply = client.get("/readyz")
        assert reply.status_code == 200, reply.text
        assert reply.json() == {
            "status": "ready",
            "checks": {"database": True, "scheduler": True, "reminders": True},
        }


class TestLogs:
    def test_every_stderr_line_is_a_json_log_with_the_requests_in_it(
        self, shared_server: Server
    ) -> None:
        with shared_server.client() as client:
            assert client.get("/healthz?from=logs").status_code == 200
            assert client.get("/no/such/route").status_code == 404

        def logged(path: str) -> bool:
            return any(e.get("path") == path for e in shared_server.logs())

        # The access line is written as the response goes out: it may come just after.
        wait_until(lambda: logged("/no/such/route"), 5.0, "the access log line")
        logs = shared_server.logs()

        assert logs and all({"at", "level", "logger", "message"} <= set(e) for e in logs)
        access = [e for e in logs if e["logger"] == "kalends.api.access"]
        assert {"method": "GET", "path": "/healthz", "status": 200} in [
            {k: e[k] for k in ("method", "path", "status")} for e in access
        ]
        assert any(e["path"] == "/no/such/route" and e["status"] == 404 for e in access)
        serving = [e for e in logs if e["message"] == "serving"]
        assert [e["url"] for e in serving] == [shared_server.base]
        # Startup's objects are exempt from the collector once it serves (kalends.cli.heap).
        assert serving[0]["settled_objects"] > 10_000
        assert {e["message"] for e in logs} >= {"scheduler running", "reminders running"}
        # The login link is printed for the person, never logged.
        token = shared_server.links()[0].group(3)
        assert token not in shared_server.stderr()


class TestLaterStart:
    def test_a_second_start_on_the_same_database_prints_no_link(
        self, shared_server: Server, servers: list[Server], tmp_path: Path
    ) -> None:
        second = start_server(shared_server.database, tmp_path)
        servers.append(second)

        assert second.port not in (0, shared_server.port)
        assert second.links() == []
        assert [line for line in second.lines if "/api/auth/link" in line] == []
        assert any("kalends login-link --as HANDLE" in line for line in second.lines)
        with second.client() as client:
            assert client.get("/readyz").status_code == 200
        code, _ = second.stop(signal.SIGTERM)
        assert code == 0, second.stderr()
        # Still one owner account: the first start's.
        store = open_store(shared_server.database)
        try:
            with store.engine.connect() as conn:
                owners = conn.execute(
                    select(actors.c.handle)
                    .join(accounts, accounts.c.actor_id == actors.c.id)
                    .where(accounts.c.is_owner.is_(True))
                ).all()
        finally:
            store.close()
        assert [row.handle for row in owners] == [OWNER]
        with shared_server.client() as client:
            assert client.get("/healthz").status_code == 200
