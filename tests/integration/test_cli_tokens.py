"""`kalends token create|ls|revoke` and `kalends login-link`, in-process (CliRunner), on
SQLite and (when reachable) PostgreSQL; what they print is checked against what
the accounts then accept.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import select
from typer.testing import CliRunner, Result

from kalends.auth import Accounts
from kalends.auth.tokens import MAX_ACTIVE_TOKENS
from kalends.bootstrap import Services, open_services
from kalends.cli.main import app
from kalends.cli.tokens import DEFAULT_TOKEN_DAYS
from kalends.errors import Unauthenticated
from kalends.storage.meta import SERVER_BASE_URL, write_meta
from kalends.storage.schema import metadata
from kalends.storage.testing import StorageTarget

runner = CliRunner()
CLEAN_ENV: dict[str, str | None] = {
    "KALENDS_ACTOR": None,
    "KALENDS_DATABASE_URL": None,
    "KALENDS_BASE_URL": None,
    "COLUMNS": "200",
}


@dataclass
class World:
    """alice and bob exist; nobody has a token or an account yet."""

    url: str
    services: Services

    @property
    def accounts(self) -> Accounts:
        return Accounts(self.services.store)

    def invoke(self, *args: str, actor: str | None = "alice") -> Result:
        who = () if actor is None else ("--as", actor)
        return runner.invoke(app, [*args, *who, "--database", self.url], env=CLEAN_ENV)

    def ok(self, *args: str, actor: str = "alice") -> Result:
        result = self.invoke(*args, actor=actor)
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return result

    def json(self, *args: str, actor: str = "alice") -> Any:
        return json.loads(self.ok(*args, "--json", actor=actor).stdout)

    def refused(self, code: int, *args: str, actor: str | None = "alice") -> dict[str, Any]:
        """Runs a command that must fail with exit ``code`` and write nothing; returns the
        JSON error after checking the one-line error on stderr."""
        before = snapshot(self.services)
        result = self.invoke(*args, "--json", actor=actor)
        assert result.exit_code == code, (result.stdout, result.stderr)
        assert snapshot(self.services) == before
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        error: dict[str, Any] = json.loads(result.stdout)["error"]
        assert lines[0] == f"error: {error['message']}"
        return error


def snapshot(services: Services) -> dict[str, list[tuple[str, ...]]]:
    with services.store.engine.connect() as conn:
        return {
            table.name: sorted(tuple(str(v) for v in row) for row in conn.execute(select(table)))
            for table in metadata.sorted_tables
        }


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture
def world(storage_target: StorageTarget) -> Iterator[World]:
    services = open_services(storage_target.url)
    for handle in ("alice", "bob"):
        services.directory.add_actor(handle, handle.title())
    try:
        yield World(url=storage_target.url, services=services)
    finally:
        services.store.close()


class TestCreate:
    def test_json_prints_the_secret_once_and_the_token_authenticates_as_its_actor(
        self, world: World
    ) -> None:
        created = world.json("token", "create", "  laptop  ")

        assert set(created) == {"token", "secret"}
        token = created["token"]
        assert set(token) == {
            "id",
            "name",
            "createdAt",
            "expiresAt",
            "revokedAt",
            "lastUsedAt",
            "active",
            "device",
        }
        assert (token["name"], token["active"], token["revokedAt"]) == ("laptop", True, None)
        lifetime = instant(token["expiresAt"]) - instant(token["createdAt"])
        assert lifetime == timedelta(days=DEFAULT_TOKEN_DAYS)
        who = world.accounts.authenticate_token(created["secret"])
        assert (who.handle, who.kind, str(who.credential_id)) == ("alice", "token", token["id"])
        [stored] = world.accounts.tokens("alice")
        assert str(stored.id) == token["id"]
        assert world.accounts.tokens("bob") == []

    # The shortest, the longest, and one with spaces around it.
    @pytest.mark.parametrize(("days", "lifetime"), [("1", 1), ("366", 366), (" 7 ", 7)])
    def test_expires_in_days(self, world: World, days: str, lifetime: int) -> None:
        token = world.json("token", "create", "ci", "--expires-in-days", days)["token"]
        assert instant(token["expiresAt"]) - instant(token["createdAt"]) == timedelta(days=lifetime)

    def test_never_expiring(self, world: World) -> None:
        created = world.json("token", "create", "ci", "--expires-in-days", "never")
        assert created["token"]["expiresAt"] is None
        [stored] = world.accounts.tokens("alice")
        assert stored.expires_at is None and stored.active

    def test_text_shows_the_secret_on_a_line_of_its_own_and_the_id(self, world: World) -> None:
        out = world.ok("token", "create", "phone", "--expires-in-days", "never").stdout

        [stored] = world.accounts.tokens("alice")
        lines = out.splitlines()
        assert lines[0] == "created token phone for alice, expires never"
        assert lines[1] == f"id {stored.id}"
        secret = lines[2]
        assert secret.startswith("kal_")
        assert world.accounts.authenticate_token(secret).handle == "alice"
        assert "shown this once" in out

    @pytest.mark.parametrize(
        ("args", "field"),
        [
            (("token", "create", "ci", "--expires-in-days", "0"), "expires_in_days"),  # too short
            (
                ("token", "create", "ci", "--expires-in-days", "367"),
                "expires_in_days",
            ),  # past a year
            (("token", "create", "ci", "--expires-in-days", "-3"), "expires_in_days"),  # negative
            (("token", "create", "ci", "--expires-in-days", "1.5"), "expires_in_days"),  # not whole
            (
                ("token", "create", "ci", "--expires-in-days", "soon"),
                "expires_in_days",
            ),  # not a number
            (("token", "create", "ci", "--expires-in-days", ""), "expires_in_days"),  # empty
            (("token", "create", "   "), "name"),  # blank
            (("token", "create", "x" * 121), "name"),  # one past the longest name
        ],
    )
    def test_bad_input_exits_2_and_writes_nothing(
        self, world: World, args: tuple[str, ...], field: str
    ) -> None:
        error = world.refused(2, *args)
        assert (error["code"], error["details"]["field"]) == ("invalid-input", field)

    def test_an_unknown_actor_exits_1_and_writes_nothing(self, world: World) -> None:
        error = world.refused(1, "token", "create", "ci", actor="mallory")
        assert (error["code"], error["details"]["field"]) == ("not-found", "actor")

    def test_without_an_actor_exits_2(self, world: World) -> None:
        error = world.refused(2, "token", "create", "ci", actor=None)
        assert (error["code"], error["details"]["field"]) == ("invalid-input", "actor")

    def test_past_the_limit_of_active_tokens_exits_1(self, world: World) -> None:
        for n in range(MAX_ACTIVE_TOKENS):
            world.accounts.create_token("alice", f"t{n}", expires_in=None)

        error = world.refused(1, "token", "create", "one more")

        assert error["code"] == "limit-reached"
        assert len(world.accounts.tokens("alice")) == MAX_ACTIVE_TOKENS


class TestListAndRevoke:
    def test_ls_lists_ones_own_tokens_newest_first_revoked_included(self, world: World) -> None:
        first = world.json("token", "create", "first")["token"]
        second = world.json("token", "create", "second")["token"]
        world.json("token", "create", "bobs", actor="bob")
        world.json("token", "revoke", first["id"])

        listed = world.json("token", "ls")

        assert [(t["id"], t["name"], t["active"]) for t in listed] == [
            (second["id"], "second", True),
            (first["id"], "first", False),
        ]
        assert listed[1]["revokedAt"] is not None
        assert [t["name"] for t in world.json("token", "ls", actor="bob")] == ["bobs"]

    def test_ls_as_text_shows_name_status_and_id(self, world: World) -> None:
        assert "alice has no API token" in world.ok("token", "ls").stdout
        kept = world.json("token", "create", "kept", "--expires-in-days", "never")["token"]
        gone = world.json("token", "create", "gone")["token"]
        world.ok("token", "revoke", gone["id"])

        out = world.ok("token", "ls").stdout

        rows = {line.split()[0]: line for line in out.splitlines() if line.split()}
        assert "active" in rows["kept"] and kept["id"] in rows["kept"]
        assert "never" in rows["kept"]
        assert "revoked" in rows["gone"] and gone["id"] in rows["gone"]

    def test_revoke_refuses_the_token_from_then_on_and_is_idempotent(self, world: World) -> None:
        created = world.json("token", "create", "laptop")
        token_id = created["token"]["id"]

        revoked = world.json("token", "revoke", token_id)

        assert (revoked["id"], revoked["active"]) == (token_id, False)
        assert revoked["revokedAt"] is not None
        with pytest.raises(Unauthenticated):
            world.accounts.authenticate_token(created["secret"])
        again = world.json("token", "revoke", token_id)
        assert again == revoked

    def test_revoke_as_text(self, world: World) -> None:
        token_id = world.json("token", "create", "laptop")["token"]["id"]
        out = world.ok("token", "revoke", token_id).stdout
        assert out.startswith("revoked token laptop (revoked ")
        assert f"id {token_id}" in out

    def test_another_actors_token_is_not_found_and_stays_active(self, world: World) -> None:
        created = world.json("token", "create", "alices")

        error = world.refused(1, "token", "revoke", created["token"]["id"], actor="bob")

        assert (error["code"], error["details"]["field"]) == ("not-found", "token")
        assert world.accounts.authenticate_token(created["secret"]).handle == "alice"

    # A word, a number, a task reference, nothing: none of them is a token ID.
    @pytest.mark.parametrize("token_id", ["nope", "12345", "K7Q2XW", ""])
    def test_a_malformed_id_exits_2(self, world: World, token_id: str) -> None:
        world.json("token", "create", "laptop")
        error = world.refused(2, "token", "revoke", token_id)
        assert (error["code"], error["details"]["field"]) == ("invalid-input", "token")

    def test_an_unknown_id_exits_1(self, world: World) -> None:
        world.json("token", "create", "laptop")
        error = world.refused(1, "token", "revoke", "00000000-0000-4000-8000-000000000000")
        assert error["code"] == "not-found"

    def test_ls_for_an_unknown_actor_exits_1(self, world: World) -> None:
        error = world.refused(1, "token", "ls", actor="mallory")
        assert error["code"] == "not-found"


# The base URL a `kalends serve` on a port of its own recorded in the database.
RECORDED = "http://127.0.0.1:8123"


class TestLoginLink:
    def test_it_gives_the_actor_an_account_and_a_link_that_logs_in_once(self, world: World) -> None:
        write_meta(world.services.store, SERVER_BASE_URL, RECORDED)

        printed = world.json("login-link", actor="bob")

        assert set(printed) == {"handle", "url", "expiresAt", "baseUrlFrom"}
        assert printed["handle"] == "bob"
        url = urlsplit(printed["url"])
        assert (f"{url.scheme}://{url.netloc}", printed["baseUrlFrom"]) == (RECORDED, "server")
        assert url.path == "/api/auth/link"
        [secret] = parse_qs(url.query)["token"]
        assert world.accounts.account("bob")["isOwner"] is False
        left = instant(printed["expiresAt"]) - world.services.store.clock.now()
        assert timedelta(minutes=14) < left <= timedelta(minutes=15)

        grant = world.accounts.redeem_login_link(secret)

        assert grant.principal.handle == "bob"
        with pytest.raises(Unauthenticated):
            world.accounts.redeem_login_link(secret)

    def test_text_prints_the_line_serve_prints_with_the_base_url(self, world: World) -> None:
        write_meta(world.services.store, SERVER_BASE_URL, RECORDED)  # --base-url comes first

        out = world.ok("login-link", "--base-url", "https://kalends.example.org/").stdout

        line = out.splitlines()[0]
        prefix = "open this link once to log in as alice: "
        assert line.startswith(prefix + "https://kalends.example.org/api/auth/link?token=")
        [secret] = parse_qs(urlsplit(line.removeprefix(prefix)).query)["token"]
        assert world.accounts.redeem_login_link(secret).principal.handle == "alice"
        assert "valid for 15 minutes; the address --base-url" in out
        assert world.json("login-link", "--base-url", "http://x.org")["baseUrlFrom"] == "option"

    def test_text_says_the_link_is_to_the_address_serve_recorded(self, world: World) -> None:
        write_meta(world.services.store, SERVER_BASE_URL, RECORDED)

        out = world.ok("login-link").stdout

        assert out.splitlines()[0].startswith(
            f"open this link once to log in as alice: {RECORDED}/api/auth/link?token="
        )
        assert "the address `kalends serve` recorded on this database" in out

    def test_without_a_recorded_address_or_base_url_it_exits_2_and_writes_nothing(
        self, world: World
    ) -> None:
        error = world.refused(2, "login-link", actor="bob")

        assert (error["code"], error["details"]["field"]) == ("invalid-input", "base_url")
        assert "--base-url" in error["message"]  # and refused() saw nothing written

    def test_an_unknown_actor_exits_1_and_writes_nothing(self, world: World) -> None:
        error = world.refused(1, "login-link", "--base-url", RECORDED, actor="mallory")
        assert error["code"] == "not-found"

    # Not http(s), no scheme, a query.
    @pytest.mark.parametrize("base", ["ftp://example.org", "example.org", "http://x/?a=b"])
    def test_a_bad_base_url_exits_2_and_writes_nothing(self, world: World, base: str) -> None:
        error = world.refused(2, "login-link", "--base-url", base)
        assert (error["code"], error["details"]["field"]) == ("invalid-input", "base_url")


def _password(world: World, text: str, *extra: str, actor: str = "alice") -> Result:
    return runner.invoke(
        app,
        ["password", "--password-stdin", *extra, "--as", actor, "--database", world.url],
        env=CLEAN_ENV,
        input=text,
    )


def test_password_sets_one_that_logs_in_and_resets_a_forgotten_one(world: World) -> None:
    first = _password(world, "first long secret\n", "--json")
    assert first.exit_code == 0, (first.stdout, first.stderr)
    assert json.loads(first.stdout) == {"handle": "alice", "passwordSet": True}
    grant = world.accounts.login("alice", "first long secret")
    assert grant.principal.handle == "alice"
    # Local mode resets without the current password; the old one stops working and the
    # sessions opened with it end.
    second = _password(world, "second long secret\n")
    assert second.exit_code == 0 and "password set for alice" in second.stdout
    with pytest.raises(Unauthenticated):
        world.accounts.login("alice", "first long secret")
    with pytest.raises(Unauthenticated):
        world.accounts.authenticate_session(grant.secret)
    assert world.accounts.login("alice", "second long secret").principal.handle == "alice"


@pytest.mark.parametrize(
    ("text", "actor", "code"),
    [("short\n", "alice", 2), ("x" * 1025 + "\n", "alice", 2), ("long enough pw\n", "nobody", 1)],
)
def test_password_refusals_write_nothing(world: World, text: str, actor: str, code: int) -> None:
    before = snapshot(world.services)
    result = _password(world, text, "--json", actor=actor)
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert snapshot(world.services) == before
    assert result.stderr.startswith("error: ")
