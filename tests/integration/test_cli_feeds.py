"""`kalends feed create|ls|revoke` in local mode, in-process (CliRunner), on SQLite and
(when reachable) PostgreSQL; the address printed is checked against what the feed then
answers through the service. Server mode: tests/integration/test_cli_remote_server.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any

import pytest
from sqlalchemy import select
from typer.testing import CliRunner, Result

from kalends.bootstrap import Services, open_services
from kalends.cli.main import app
from kalends.errors import NotFound
from kalends.storage.meta import SERVER_BASE_URL, write_meta
from kalends.storage.schema import metadata
from kalends.storage.testing import StorageTarget
from kalends.tasks import Schedule

runner = CliRunner()
CLEAN_ENV: dict[str, str | None] = {
    "KALENDS_ACTOR": None,
    "KALENDS_DATABASE_URL": None,
    "KALENDS_BASE_URL": None,
    "KALENDS_SERVER": None,
    "COLUMNS": "80",
}
BASE = "https://cal.example.org"


@dataclass
class World:
    """alice and bob exist; alice has a list with a task due on 2026-05-04."""

    url: str
    services: Services

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
        """A command that must fail with exit ``code`` and write nothing; its JSON error."""
        before = snapshot(self.services)
        result = self.invoke(*args, "--json", actor=actor)
        assert result.exit_code == code, (result.stdout, result.stderr)
        assert snapshot(self.services) == before
        error: dict[str, Any] = json.loads(result.stdout)["error"]
        assert result.stderr.strip() == f"error: {error['message']}"
        return error


def snapshot(services: Services) -> dict[str, list[tuple[str, ...]]]:
    with services.store.engine.connect() as conn:
        return {
            table.name: sorted(tuple(str(v) for v in row) for row in conn.execute(select(table)))
            for table in metadata.sorted_tables
        }


@pytest.fixture
def world(storage_target: StorageTarget) -> Iterator[World]:
    services = open_services(storage_target.url)
    for handle in ("alice", "bob"):
        services.directory.add_actor(handle, handle.title())
    chores = services.directory.create_list("alice", "chores")
    task = services.tasks.create("alice", chores.id, "Renew passport")
    services.tasks.set_schedule("alice", task.id, task.revision, Schedule(due=date(2026, 5, 4)))
    try:
        yield World(url=storage_target.url, services=services)
    finally:
        services.store.close()


def secret_of(url: str) -> str:
    return url.rsplit("/", 1)[1].removesuffix(".ics")


class TestCreate:
    def test_the_address_is_under_the_base_url_given_or_recorded_and_the_feed_reads_there(
        self, world: World
    ) -> None:
        made = world.json("feed", "create", "--base-url", BASE)
        assert set(made) == {"feed", "url", "secret"}
        assert made["url"] == f"{BASE}/feeds/{made['secret']}.ics"
        body = world.services.feeds.render(secret_of(made["url"])).body
        assert b"SUMMARY:Renew passport" in body
        assert b"DTSTART;VALUE=DATE:20260504" in body
        [stored] = world.services.feeds.list("alice")
        assert str(stored.id) == made["feed"]["id"] and stored.active
        assert world.services.feeds.list("bob") == []
        # Without --base-url: the address the last `kalends serve` recorded.
        write_meta(world.services.store, SERVER_BASE_URL, "http://127.0.0.1:8123")
        out = world.ok("feed", "create").stdout
        [address] = [line for line in out.splitlines() if line.startswith("http")]
        assert address.startswith("http://127.0.0.1:8123/feeds/kcal_")
        assert address.endswith(".ics") and " " not in address
        newest = world.services.feeds.list("alice")[0]
        assert f"id {newest.id}" in out and "shown this once" in out
        world.services.feeds.render(secret_of(address))

    # No address known yet; one that is not an http(s) URL.
    @pytest.mark.parametrize("extra", [(), ("--base-url", "ftp://example.org")])
    def test_without_a_usable_base_url_it_exits_2_and_writes_nothing(
        self, world: World, extra: tuple[str, ...]
    ) -> None:
        error = world.refused(2, "feed", "create", *extra)
        assert error["details"]["field"] == "base_url"
        error = world.refused(1, "feed", "create", "--base-url", BASE, actor="ghost")
        assert error["code"] == "not-found"


class TestLsAndRevoke:
    def test_ls_lists_ones_own_feeds_and_revoke_closes_one_for_good(self, world: World) -> None:
        assert "has no calendar feed" in world.ok("feed", "ls").stdout
        first = world.json("feed", "create", "--base-url", BASE)
        second = world.json("feed", "create", "--base-url", BASE)
        world.json("feed", "create", "--base-url", BASE, actor="bob")
        listed = world.json("feed", "ls")
        assert {f["id"] for f in listed} == {first["feed"]["id"], second["feed"]["id"]}
        assert all("url" not in f and "secret" not in f for f in listed)
        revoked = world.json("feed", "revoke", first["feed"]["id"])
        assert revoked["active"] is False and revoked["revokedAt"] is not None
        with pytest.raises(NotFound):
            world.services.feeds.render(first["secret"])
        world.services.feeds.render(second["secret"])
        # Revoking again changes nothing.
        assert world.json("feed", "revoke", first["feed"]["id"]) == revoked
        text = world.ok("feed", "ls").stdout
        assert "revoked" in text and "active" in text and first["feed"]["id"] in text
        assert all(len(line) <= 80 for line in text.splitlines())

    def test_another_actors_feed_and_a_malformed_id_are_refused_and_write_nothing(
        self, world: World
    ) -> None:
        bobs = world.json("feed", "create", "--base-url", BASE, actor="bob")
        error = world.refused(1, "feed", "revoke", bobs["feed"]["id"])
        assert error["code"] == "not-found"
        [stored] = world.services.feeds.list("bob")
        assert stored.active
        for malformed in ("not-an-id", ""):
            error = world.refused(2, "feed", "revoke", malformed)
            assert error["details"]["field"] == "feed"
