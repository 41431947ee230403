"""`kalends actor|list|task`, driven as a user drives them: real processes on a SQLite file."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kalends.bootstrap import open_services
from kalends.cli.main import app

ENV_ACTOR, ENV_DATABASE = "KALENDS_ACTOR", "KALENDS_DATABASE_URL"


class Cli:
    """Runs ``python -m kalends`` against one database file."""

    def __init__(self, database: Path) -> None:
        self.database = database

    def run(self, *args: str, actor: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in {ENV_ACTOR, ENV_DATABASE}}
        env[ENV_DATABASE] = str(self.database)
        env["COLUMNS"] = "120"
        if actor is not None:
            env[ENV_ACTOR] = actor
        return subprocess.run(
            [sys.executable, "-m", "kalends", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=env,
        )

    def json(self, *args: str, actor: str | None = None) -> Any:
        done = self.run(*args, "--json", actor=actor)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path / "kalends.sqlite3")


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


class TestJourney:
    def test_a_shared_checklist_is_scheduled_completed_as_a_whole_and_reopened(
        self, cli: Cli
    ) -> None:
        alice = cli.json("actor", "add", "alice", "--name", "Alice", "--email", "a@example.com")
        bob = cli.json("actor", "add", "bob", "--name", "Bob")
        assert [a["handle"] for a in cli.json("actor", "ls")] == ["alice", "bob"]

        home = cli.json("list", "add", "Home", "--as", "alice")
        assert (home["name"], home["role"], home["revision"]) == ("Home", "owner", 1)
        shared = cli.json("list", "share", "Home", "bob", "--role", "editor", actor="alice")
        assert shared["revision"] == 2
        done = cli.run("list", "section", "add", "Home", "Kitchen", actor="alice")
        assert done.returncode == 0, done.stderr
        assert "local mode: acting as alice" in done.stdout

        parent = cli.json(
            "task", "add", "Home", "Clean kitchen", "--section", "Kitchen", "--tag", "chores",
            actor="alice",
        )  # fmt: skip
        child = cli.json("task", "add", "Home", "Wipe counters", "--parent", parent["ref"],
                         actor="bob")  # fmt: skip
        assert child["parent_id"] == parent["id"]

        scheduled = cli.json(
            "task", "schedule", parent["ref"], "--expect", "1",
            "--due-local", "2026-03-29T18:00:00", "--zone", "Europe/Paris", "--priority", "2",
            "--remind", "email@2026-03-29T17:00:00", "--remind", "push@2026-03-29T17:30:00:bob",
            actor="alice",
        )  # fmt: skip
        assert scheduled["revision"] == 2
        shown = cli.json("task", "show", parent["ref"].lower(), actor="bob")
        assert shown["due"] == {"local": "2026-03-29T18:00:00", "zone": "Europe/Paris"}
        assert shown["priority"] == 2
        assert shown["section"] == "Kitchen"
        assert shown["children"] == 1
        assert shown["reminders"] == [
            {"channel": "email", "local": "2026-03-29T17:00:00", "zone": "Europe/Paris",
             "at": "2026-03-29T15:00:00Z", "recipient_id": alice["id"]},
            {"channel": "push", "local": "2026-03-29T17:30:00", "zone": "Europe/Paris",
             "at": "2026-03-29T15:30:00Z", "recipient_id": bob["id"]},
        ]  # fmt: skip

        tree = cli.run("task", "ls", "Home", actor="bob")
        assert tree.returncode == 0, tree.stderr
        lines = tree.stdout.splitlines()
        assert lines[0].startswith("Home")
        parent_line = next(i for i, line in enumerate(lines) if parent["ref"] in line)
        child_line = lines[parent_line + 1]
        for part in ("[ ] Clean kitchen", "P2", "due 2026-03-29 18:00 Europe/Paris", "#chores"):
            assert part in lines[parent_line]
        assert f"{child['ref']} [ ] Wipe counters" in child_line
        assert child_line.index(child["ref"]) > lines[parent_line].index(parent["ref"])

        refused = cli.run("task", "done", parent["ref"], "--expect", "2", actor="alice")
        assert refused.returncode == 1
        assert "pass --subtree" in one_error_line(refused)
        completed = cli.json("task", "done", parent["ref"], "--expect", "2", "--subtree",
                             actor="alice")  # fmt: skip
        assert (completed["status"], completed["revision"]) == ("completed", 3)
        [root] = cli.json("task", "ls", "Home", actor="alice")
        assert [root["status"], root["children"][0]["status"]] == ["completed", "completed"]

        reopened = cli.json("task", "reopen", child["ref"], "--expect", "2", actor="bob")
        assert reopened["status"] == "open"
        [root] = cli.json("task", "ls", "Home", "--status", "open", actor="bob")
        assert root["status"] == "open"  # reopening an item reopens its checklist

        comment = cli.json("task", "comment", parent["ref"], "Use the blue cloth", actor="bob")
        assert comment["author_id"] == bob["id"]
        history = cli.json("task", "history", parent["ref"], actor="alice")
        assert [e["kind"] for e in history] == [
            "created", "schedule-set", "completed", "reopened", "commented",
        ]  # fmt: skip
        assert history[-1]["actor_id"] == bob["id"]
        members = cli.json("list", "members", "Home", actor="bob")
        assert [(m["handle"], m["role"]) for m in members] == [
            ("alice", "owner"),
            ("bob", "editor"),
        ]

    def test_edit_move_trash_restore_and_attach_keep_one_revision_per_change(
        self, cli: Cli, tmp_path: Path
    ) -> None:
        services = open_services(str(cli.database))
        services.directory.add_actor("alice", "Alice")
        services.directory.create_list("alice", "Home")
        services.directory.create_list("alice", "Errands")
        first = services.tasks.create("alice", "Home", "First")
        second = services.tasks.create("alice", "Home", "Second")
        services.store.close()

        edited = cli.json(
            "task", "edit", second.ref, "--expect", "1", "--title", "Buy soap",
            "--description", "the green one", "--tag", "shop", actor="alice",
        )  # fmt: skip
        # one command, three changes, one transaction: three revisions
        assert (edited["title"], edited["tags"], edited["revision"]) == ("Buy soap", ["shop"], 4)
        moved = cli.json("task", "move", second.ref, "--expect", "4", "--parent", first.ref,
                         actor="alice")  # fmt: skip
        assert moved["parent_id"] == str(first.id)
        moved = cli.json("task", "move", second.ref, "--expect", "5", "--root", actor="alice")
        moved = cli.json("task", "move", second.ref, "--expect", "6", "--list", "Errands",
                         actor="alice")  # fmt: skip
        assert moved["tags"] == ["shop"]
        trashed = cli.json("task", "trash", second.ref, "--expect", "7", actor="alice")
        assert trashed["trashed"] is True
        assert cli.json("task", "ls", "Errands", actor="alice") == []
        assert len(cli.json("task", "ls", "Errands", "--trashed", actor="alice")) == 1
        restored = cli.json("task", "restore", second.ref, "--expect", "8", actor="alice")
        assert restored["trashed"] is False

        note = tmp_path / "receipt.txt"
        note.write_text("soap 2.50\n", encoding="utf-8")
        attached = cli.json("task", "attach", second.ref, str(note), actor="alice")
        assert (attached["name"], attached["media_type"], attached["size"]) == (
            "receipt.txt", "text/plain", 10,
        )  # fmt: skip


class TestLocalModeAndErrors:
    def test_without_an_actor_it_explains_local_mode_and_creates_nothing(self, cli: Cli) -> None:
        done = cli.run("task", "ls", "Home")
        assert done.returncode == 2
        assert done.stdout == ""
        assert one_error_line(done) == (
            "error: say who is acting: --as HANDLE or KALENDS_ACTOR=HANDLE in local mode, "
            "or `kalends login` and --server URL"
        )
        assert not cli.database.exists()

    def test_a_stale_revision_exits_1_with_json_and_leaves_the_task_unchanged(
        self, cli: Cli
    ) -> None:
        services = open_services(str(cli.database))
        services.directory.add_actor("alice", "Alice")
        services.directory.create_list("alice", "Home")
        task = services.tasks.create("alice", "Home", "Sweep")
        services.tasks.rename("alice", task.ref, 1, "Sweep the floor")

        done = cli.run("task", "edit", task.ref, "--expect", "1", "--title", "Mop", "--json",
                       actor="alice")  # fmt: skip
        assert done.returncode == 1
        assert json.loads(done.stdout)["error"] == {
            "code": "revision-conflict",
            "message": "the task changed: expected revision 1, it is 2",
            "details": {"expected": 1, "actual": 2},
        }
        assert one_error_line(done) == "error: the task changed: expected revision 1, it is 2"
        after = services.tasks.get("alice", task.ref).task
        assert (after.title, after.revision) == ("Sweep the floor", 2)
        services.store.close()

    def test_a_viewer_is_refused_with_exit_1_and_nothing_is_written(self, cli: Cli) -> None:
        services = open_services(str(cli.database))
        services.directory.add_actor("alice", "Alice")
        services.directory.add_actor("vera", "Vera")
        services.directory.create_list("alice", "Home")
        services.directory.share("alice", "Home", "vera", "viewer")

        done = cli.run("task", "add", "Home", "Sneaky", "--as", "vera")
        assert done.returncode == 1
        assert one_error_line(done) == (
            "error: this needs the editor role on the list; you are viewer"
        )
        assert services.tasks.tree("alice", "Home") == []
        services.store.close()


class TestHumanOutput:
    """The Rich views, rendered in-process: user text is shown as typed, never as markup."""

    def test_show_and_history_print_the_revision_schedule_and_events(self, cli: Cli) -> None:
        services = open_services(str(cli.database))
        services.directory.add_actor("alice", "Alice")
        services.directory.create_list("alice", "Home")
        task = services.tasks.create("alice", "Home", "Fix [bold]lamp[/bold]")
        services.tasks.comment("alice", task.ref, "needs a [red] bulb")
        services.store.close()
        runner = CliRunner()
        env = {ENV_ACTOR: "alice", ENV_DATABASE: str(cli.database), "COLUMNS": "120"}
        scheduled = runner.invoke(
            app, ["task", "schedule", task.ref, "--expect", "1", "--due", "2026-04-01"], env=env
        )
        assert scheduled.exit_code == 0, scheduled.output
        assert "revision 2" in scheduled.stdout
        assert "local mode: acting as alice\n" in scheduled.stdout

        shown = runner.invoke(app, ["task", "show", task.ref], env=env)
        assert shown.exit_code == 0, shown.output
        assert f"{task.ref} [ ] Fix [bold]lamp[/bold]  due 2026-04-01" in shown.stdout
        assert re.search(r"^revision +2 *$", shown.stdout, re.MULTILINE)
        assert "alice" in shown.stdout and "needs a [red] bulb" in shown.stdout

        history = runner.invoke(app, ["task", "history", task.ref], env=env)
        assert history.exit_code == 0, history.output
        for kind in ("created", "commented", "schedule-set"):
            assert kind in history.stdout
