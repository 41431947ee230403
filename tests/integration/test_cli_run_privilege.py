"""`kalends actor grant|revoke run` and the run privilege in local mode: whoever runs the
command line may grant it (they own the database file), and without it creating a
schedule or changing what it runs is refused here as on a server (exit 1,
``run-privilege-required``, nothing written). In-process on SQLite and (when reachable)
PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from kalends.bootstrap import Services, open_services
from kalends.cli.main import app
from kalends.storage.testing import StorageTarget, nothing_written

runner = CliRunner()
CLEAN_ENV: dict[str, str | None] = {
    "KALENDS_ACTOR": None,
    "KALENDS_DATABASE_URL": None,
    "KALENDS_SERVER": None,
    "KALENDS_TOKEN": None,
    "COLUMNS": "200",
}
CREATE = ("schedule", "create", "home", "--title", "T", "--command", "make nightly",
          "--daily", "09:00", "--zone", "Europe/Berlin")  # fmt: skip


@dataclass
class World:
    """alice owns workspace "home" and bob edits it; nobody holds the run privilege."""

    url: str
    services: Services

    def invoke(self, *args: str, actor: str | None = "alice") -> Result:
        who = ["--as", actor] if actor is not None else []
        return runner.invoke(app, [*args, *who, "--database", self.url], env=CLEAN_ENV)

    def json(self, *args: str, actor: str | None = "alice") -> Any:
        result = self.invoke(*args, "--json", actor=actor)
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return json.loads(result.stdout)

    def refused(self, code: int, *args: str, actor: str | None = "alice") -> dict[str, Any]:
        """The command exits ``code``, writes nothing and says why on one stderr line."""
        with nothing_written(self.services.store):
            result = self.invoke(*args, "--json", actor=actor)
        assert result.exit_code == code, (result.stdout, result.stderr)
        error: dict[str, Any] = json.loads(result.stdout)["error"]
        assert result.stderr.strip().splitlines()[-1] == f"error: {error['message']}"
        return error

    def may_run(self) -> dict[str, bool]:
        return {a["handle"]: a["mayRun"] for a in self.json("actor", "ls", actor=None)}


@pytest.fixture
def world(storage_target: StorageTarget, tmp_path: Path) -> Iterator[World]:
    services = open_services(storage_target.url)
    for handle in ("alice", "bob"):
        services.directory.add_actor(handle, handle.title())
    (tmp_path / "home").mkdir()
    services.workspaces.add("alice", tmp_path / "home", "home")
    services.workspaces.set_member("alice", "home", "bob", "editor")
    try:
        yield World(url=storage_target.url, services=services)
    finally:
        services.store.close()


class TestLocalMode:
    def test_creating_a_schedule_without_the_privilege_exits_1_and_writes_nothing(
        self, world: World
    ) -> None:
        error = world.refused(1, *CREATE)
        assert error["code"] == "run-privilege-required"
        assert "kalends actor grant run" in error["message"]

    def test_the_local_user_grants_themselves_the_privilege_and_then_creates(
        self, world: World
    ) -> None:
        text = world.invoke("actor", "grant", "run", "alice", actor=None)
        assert text.exit_code == 0, text.stderr
        assert "granted run to alice" in text.stdout
        assert world.may_run() == {"alice": True, "bob": False}
        assert world.json(*CREATE)["status"] == "created"

    def test_an_editor_changes_the_notes_but_not_the_command_until_granted(
        self, world: World
    ) -> None:
        world.json("actor", "grant", "run", "alice", actor=None)
        sid = world.json(*CREATE)["missionId"]
        for change in (("--command", "sh -c id"), ("--env", "A=1"), ("--cwd", "sub")):
            error = world.refused(1, "schedule", "edit", sid, *change, actor="bob")
            assert error["code"] == "run-privilege-required"
        edited = world.json("schedule", "edit", sid, "--notes", "be quick", actor="bob")
        assert edited["schedule"]["notes"] == "be quick"

        granted = world.json("actor", "grant", "run", "bob", actor=None)
        assert (granted["handle"], granted["mayRun"]) == ("bob", True)
        changed = world.json("schedule", "edit", sid, "--command", "make report", actor="bob")
        assert changed["schedule"]["profile"]["command"] == ["make", "report"]

        revoked = world.json("actor", "revoke", "run", "bob", actor=None)
        assert revoked["mayRun"] is False
        error = world.refused(1, "schedule", "edit", sid, "--cwd", "sub", actor="bob")
        assert error["code"] == "run-privilege-required"

    def test_the_listing_shows_who_may_run(self, world: World) -> None:
        world.json("actor", "grant", "run", "bob", actor=None)
        result = world.invoke("actor", "ls", actor=None)
        assert result.exit_code == 0
        assert "may run" in result.stdout
        [bob] = [line for line in result.stdout.splitlines() if line.strip().startswith("bob")]
        assert bob.rstrip().endswith("yes")
        text = world.invoke("actor", "revoke", "run", "bob", actor=None).stdout
        assert "revoked run from bob" in text

    def test_granting_an_unknown_actor_exits_1(self, world: World) -> None:
        error = world.refused(1, "actor", "grant", "run", "nobody", actor=None)
        assert error["code"] == "not-found"

    def test_an_unknown_privilege_exits_2(self, world: World) -> None:
        with nothing_written(world.services.store):
            result = world.invoke("actor", "grant", "root", "bob", actor=None)
        assert result.exit_code == 2

    @pytest.mark.parametrize("name", ["LD_PRELOAD", "PYTHONPATH", "ld_library_path"])
    def test_loader_and_python_variables_exit_2_naming_profile_env(
        self, world: World, name: str
    ) -> None:
        world.json("actor", "grant", "run", "alice", actor=None)
        error = world.refused(2, *CREATE, "--env", f"{name}=/tmp/x.so")
        assert error["details"] == {"field": "profile.env"}
        assert name in error["message"]

    def test_the_help_says_what_the_privilege_allows(self) -> None:
        result = runner.invoke(app, ["actor", "grant", "--help"], env=CLEAN_ENV)
        assert result.exit_code == 0
        text = " ".join(result.stdout.split())
        assert "anything the passage user can" in text
        assert "they own the database file" in text
