"""`kalends workspace add|ls|show|rm|member set|rm|ls`, in-process (CliRunner), on SQLite
and (when reachable) PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from typer.main import get_command
from typer.testing import CliRunner, Result

from kalends.bootstrap import Services, open_services
from kalends.cli.main import app
from kalends.storage.schema import metadata
from kalends.storage.testing import StorageTarget

runner = CliRunner()
CLEAN_ENV: dict[str, str | None] = {
    "KALENDS_ACTOR": None,
    "KALENDS_DATABASE_URL": None,
    "COLUMNS": "200",
}


@dataclass
class World:
    """alice, bob, vera and nora exist; no workspace yet; ``root`` holds directories."""

    url: str
    root: Path
    services: Services

    def invoke(self, *args: str, actor: str = "alice") -> Result:
        return runner.invoke(app, [*args, "--as", actor, "--database", self.url], env=CLEAN_ENV)

    def ok(self, *args: str, actor: str = "alice") -> Result:
        result = self.invoke(*args, actor=actor)
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return result

    def json(self, *args: str, actor: str = "alice") -> Any:
        return json.loads(self.ok(*args, "--json", actor=actor).stdout)

    def refused(self, code: int, *args: str, actor: str = "alice") -> dict[str, Any]:
        """Runs a command that must fail with exit ``code`` and write nothing; returns the
        JSON error object after checking the one-line error on stderr."""
        before = snapshot(self.services)
        result = self.invoke(*args, "--json", actor=actor)
        assert result.exit_code == code, (result.stdout, result.stderr)
        assert snapshot(self.services) == before
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        error: dict[str, Any] = json.loads(result.stdout)["error"]
        assert set(error) == {"code", "message", "details"}
        assert lines[0] == f"error: {error['message']}"
        return error

    def directory(self, name: str) -> str:
        path = self.root / name
        path.mkdir(exist_ok=True)
        return str(path)


def snapshot(services: Services) -> dict[str, list[tuple[str, ...]]]:
    with services.store.engine.connect() as conn:
        return {
            table.name: sorted(tuple(str(v) for v in row) for row in conn.execute(select(table)))
            for table in metadata.sorted_tables
        }


@pytest.fixture
def world(storage_target: StorageTarget, tmp_path: Path) -> Iterator[World]:
    services = open_services(storage_target.url)
    for handle in ("alice", "bob", "vera", "nora"):
        services.directory.add_actor(handle, handle.title())
    (tmp_path / "dirs").mkdir()
    try:
        yield World(url=storage_target.url, root=tmp_path / "dirs", services=services)
    finally:
        services.store.close()


class TestJourney:
    def test_register_share_list_show_unshare_and_remove(self, world: World) -> None:
        path = world.directory("project")
        added = world.json("workspace", "add", path + "/./", "--name", "Project")
        assert set(added) == {"id", "name", "path", "role", "schedules", "createdAt"}
        assert (added["name"], added["role"], added["schedules"]) == ("Project", "owner", 0)
        assert added["path"] == str(Path(path).resolve())

        bob = world.json("workspace", "member", "set", "Project", "bob", "--role", "editor")
        assert (bob["handle"], bob["role"]) == ("bob", "editor")
        assert set(bob) == {"actorId", "handle", "role"}
        vera = world.json("workspace", "member", "set", added["id"], "vera", "--role", "Viewer")
        assert vera["role"] == "viewer"

        members = world.json("workspace", "member", "ls", "Project", actor="vera")
        assert [(m["handle"], m["role"]) for m in members] == [
            ("alice", "owner"),
            ("bob", "editor"),
            ("vera", "viewer"),
        ]
        [seen] = world.json("workspace", "ls", actor="bob")
        assert (seen["id"], seen["role"]) == (added["id"], "editor")
        assert world.json("workspace", "ls", actor="nora") == []

        shown = world.json("workspace", "show", added["id"], actor="vera")
        assert shown["role"] == "viewer"
        assert [m["handle"] for m in shown["members"]] == ["alice", "bob", "vera"]

        text = world.ok("workspace", "show", "Project").stdout
        for part in ("Project", added["id"], added["path"], "owner", "bob", "editor"):
            assert part in text
        table = world.ok("workspace", "ls").stdout
        assert "Project" in table and added["path"] in table
        assert (
            "local mode: acting as alice"
            in world.ok("workspace", "member", "rm", "Project", "vera").stdout
        )
        assert [m["handle"] for m in world.json("workspace", "member", "ls", "Project")] == [
            "alice",
            "bob",
        ]

        removed = world.json("workspace", "rm", "Project")
        assert removed == {"removed": {**added, "role": "owner", "schedules": 0}}
        assert world.json("workspace", "ls") == []
        assert Path(path).is_dir()  # the directory itself is left alone

    def test_the_name_defaults_to_the_directory_name(self, world: World) -> None:
        added = world.json("workspace", "add", world.directory("checkout"))
        assert added["name"] == "checkout"
        out = world.ok("workspace", "add", world.directory("other")).stdout
        assert "added workspace other" in out and "you are owner" in out


class TestRefusals:
    def test_bad_input_exits_2_and_writes_nothing(self, world: World) -> None:
        world.json("workspace", "add", world.directory("home"), "--name", "home")
        missing = str(world.root / "missing")
        error = world.refused(2, "workspace", "add", missing)
        assert error["code"] == "invalid-input"
        assert "is not an existing directory" in error["message"]
        error = world.refused(2, "workspace", "add", world.directory("x"), "--name", " ")
        assert error["details"] == {"field": "name"}
        error = world.refused(2, "workspace", "member", "set", "home", "bob", "--role", "admin")
        assert error["message"].startswith("role: must be owner, editor or viewer")
        error = world.refused(2, "workspace", "ls", actor=" ")
        assert "say who is acting" in error["message"]

    def test_refusals_exit_1_and_write_nothing(self, world: World) -> None:
        home = world.json("workspace", "add", world.directory("home"), "--name", "home")
        world.json("workspace", "member", "set", "home", "vera", "--role", "viewer")

        assert world.refused(1, "workspace", "add", home["path"])["code"] == "conflict"
        error = world.refused(1, "workspace", "show", "nowhere")
        assert (error["code"], error["message"]) == (
            "not-found",
            "workspace: no workspace 'nowhere'",
        )
        # A stranger is told what a name nobody uses is told.
        error = world.refused(1, "workspace", "show", "home", actor="nora")
        assert (error["code"], error["message"]) == ("not-found", "workspace: no workspace 'home'")
        error = world.refused(1, "workspace", "member", "set", "home", "nora", "--role", "viewer",
                              actor="vera")  # fmt: skip
        assert error["code"] == "forbidden" and "owner role" in error["message"]
        assert world.refused(1, "workspace", "rm", "home", actor="vera")["code"] == "forbidden"
        error = world.refused(1, "workspace", "member", "rm", "home", "alice")
        assert error["message"] == "member: a workspace keeps at least one owner"
        error = world.refused(1, "workspace", "member", "set", "home", "ghost", "--role", "viewer")
        assert error["code"] == "not-found"
        assert world.refused(1, "workspace", "member", "rm", "home", "bob")["code"] == "not-found"
        assert world.refused(1, "workspace", "ls", actor="ghost")["code"] == "not-found"

    def test_a_workspace_holding_schedules_is_not_removed(self, world: World) -> None:
        world.json("workspace", "add", world.directory("home"), "--name", "home")
        world.services.grants.grant("alice", "run")
        world.services.schedules.create(
            "alice",
            "home",
            {"title": "T", "profile": {"command": ["true"]}, "policy": {"kind": "immediate"}},
            request_id="create-0001",
        )
        error = world.refused(1, "workspace", "rm", "home")
        assert error["code"] == "conflict" and "holds 1 schedule" in error["message"]
        assert error["details"] == {"field": "workspace", "schedules": 1}


class TestHelp:
    def test_every_workspace_command_documents_itself_and_takes_json_and_database(
        self,
    ) -> None:
        root: Any = get_command(app)
        leaves: dict[str, Any] = {}
        pending = [("workspace", root.commands["workspace"])]
        while pending:
            name, command = pending.pop()
            children = getattr(command, "commands", None)
            if children:
                pending.extend((f"{name} {n}", c) for n, c in children.items())
            else:
                leaves[name] = command
        assert sorted(leaves) == [
            "workspace add", "workspace ls", "workspace member ls", "workspace member rm",
            "workspace member set", "workspace rm", "workspace show",
        ]  # fmt: skip
        for name, command in leaves.items():
            options = {o for p in command.params for o in getattr(p, "opts", [])}
            assert {"--json", "--database", "--as"} <= options, name
            assert command.help, name
