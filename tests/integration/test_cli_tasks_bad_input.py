"""Bad input to every `kalends actor|list|task` command: one clear line, the right exit
code, and nothing written. In-process (CliRunner) to keep the many cases fast; the
real-process contract is checked in test_cli_tasks.py.
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

from kalends.bootstrap import open_services
from kalends.cli.main import app
from kalends.storage.schema import metadata

runner = CliRunner()
# Keep the caller's environment from choosing the database or the actor.
CLEAN_ENV: dict[str, str | None] = {"KALENDS_ACTOR": None, "KALENDS_DATABASE_URL": None}


@dataclass(frozen=True)
class World:
    """Alice owns Home (section Kitchen) and Errands; vera views Home; nora is in no list."""

    url: str
    home_id: str
    parent: str
    child: str
    files: Path

    def invoke(self, args: list[str]) -> Result:
        refs = {"parent": self.parent, "child": self.child, "home": self.home_id}
        expanded = [a.format(**refs, files=self.files) for a in args]
        return runner.invoke(app, [*expanded, "--database", self.url], env=CLEAN_ENV)

    def snapshot(self) -> dict[str, list[tuple[str, ...]]]:
        """Every row of every table: any write at all shows up as a difference."""
        services = open_services(self.url)
        try:
            with services.store.engine.connect() as conn:
                return {
                    table.name: sorted(
                        tuple(str(v) for v in row) for row in conn.execute(select(table))
                    )
                    for table in metadata.sorted_tables
                }
        finally:
            services.store.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    base = tmp_path_factory.mktemp("cli-bad-input")
    url = f"sqlite:///{base / 'kalends.sqlite3'}"
    services = open_services(url)
    directory, tasks = services.directory, services.tasks
    for handle in ("alice", "vera", "nora"):
        directory.add_actor(handle, handle.title())
    home = directory.create_list("alice", "Home")
    directory.create_list("alice", "Errands")
    directory.share("alice", "Home", "vera", "viewer")
    directory.add_section("alice", "Home", "Kitchen")
    parent = tasks.create("alice", "Home", "Clean kitchen")
    child = tasks.create("alice", "Home", "Wipe counters", parent=parent.ref)
    services.store.close()
    (base / "note.txt").write_text("hello", encoding="utf-8")
    (base / "bad.json").write_text("{nope", encoding="utf-8")
    (base / "extra.json").write_text('{"when": "2026-03-01"}', encoding="utf-8")
    yield World(url=url, home_id=str(home.id), parent=parent.ref, child=child.ref, files=base)


AS_ALICE = ["--as", "alice"]
CHILD_SCHEDULE = ["task", "schedule", "{child}", "--expect", "1", *AS_ALICE]
REMIND_AT = "email@2026-03-10T08:00:00@UTC"

# (arguments, exit code, a fragment of the one-line error)
CASES: list[tuple[list[str], int, str]] = [
    # --- actor add ---
    # a handle with a capital and a space
    (["actor", "add", "Bad Handle", "--name", "X"], 2, "handle: 1-64 lowercase"),
    # a blank display name
    (["actor", "add", "newbie", "--name", "  "], 2, "display_name: a name cannot be blank"),
    # not an e-mail address
    (["actor", "add", "newbie", "--name", "N", "--email", "nope"], 2, "email: 'nope'"),
    # the handle is taken
    (["actor", "add", "alice", "--name", "Again"], 1, "an actor 'alice' already exists"),
    # --- list add / share / archive / members / section ---
    # nobody says who acts
    (["list", "add", "Chores"], 2, "say who is acting: --as HANDLE or KALENDS_ACTOR"),
    # an unknown actor
    (["list", "add", "Chores", "--as", "ghost"], 1, "no actor 'ghost'"),
    # a blank list name
    (["list", "add", "   ", *AS_ALICE], 2, "name: a name cannot be blank"),
    # an unknown member
    (["list", "share", "Home", "ghost", "--role", "editor", *AS_ALICE], 1, "no actor 'ghost'"),
    # a role that does not exist
    (["list", "share", "Home", "nora", "--role", "admin", *AS_ALICE], 2, "role: owner, editor"),
    # neither --role nor --remove
    (["list", "share", "Home", "nora", *AS_ALICE], 2, "give --role"),
    # a stale list revision
    (["list", "share", "Home", "nora", "--role", "viewer", "--expect", "99", *AS_ALICE], 1,
     "the list changed: expected revision 99"),
    # a viewer sharing
    (["list", "share", "Home", "nora", "--role", "editor", "--as", "vera"], 1,
     "needs the owner role"),
    # the last owner demoting herself
    (["list", "share", "Home", "alice", "--role", "editor", *AS_ALICE], 1, "last owner"),
    # a viewer archiving
    (["list", "archive", "Home", "--as", "vera"], 1, "needs the owner role"),
    # a non-member naming a list she cannot see
    (["list", "members", "Home", "--as", "nora"], 1, "you have no list named 'Home'"),
    # a non-member naming the list by ID
    (["list", "members", "{home}", "--as", "nora"], 1, "list: no list "),
    # a section name taken
    (["list", "section", "add", "Home", "Kitchen", *AS_ALICE], 1, "already has a section"),
    # a blank section name
    (["list", "section", "add", "Home", " ", *AS_ALICE], 2, "section: a name cannot be blank"),
    # a viewer adding a section
    (["list", "section", "add", "Home", "Garage", "--as", "vera"], 1, "needs the editor role"),
    # --- task add ---
    # an unknown list
    (["task", "add", "Nowhere", "Sweep", *AS_ALICE], 1, "you have no list named 'Nowhere'"),
    # a blank title
    (["task", "add", "Home", "   ", *AS_ALICE], 2, "title: a title cannot be blank"),
    # a title too long
    (["task", "add", "Home", "x" * 501, *AS_ALICE], 2, "title: at most 500 characters"),
    # an unknown parent
    (["task", "add", "Home", "Sweep", "--parent", "ZZZZZZ", *AS_ALICE], 1, "no task ZZZZZZ"),
    # an unknown section
    (["task", "add", "Home", "Sweep", "--section", "Attic", *AS_ALICE], 1, "no section 'Attic'"),
    # a parent in another list than the one named
    (["task", "add", "Errands", "Sweep", "--parent", "{parent}", *AS_ALICE], 2,
     "parent: the parent task is in another list"),
    # a viewer writing
    (["task", "add", "Home", "Sweep", "--as", "vera"], 1, "needs the editor role"),
    # a non-member writing
    (["task", "add", "{home}", "Sweep", "--as", "nora"], 1, "list: no list "),
    # nobody says who acts
    (["task", "add", "Home", "Sweep"], 2, "in local mode"),
    # --- task ls / show / history ---
    # a date that is not in the calendar
    (["task", "ls", "Home", "--due-from", "2026-02-30", *AS_ALICE], 2,
     "due_from: '2026-02-30' is not a calendar date"),
    # a status that does not exist
    (["task", "ls", "Home", "--status", "done", *AS_ALICE], 2,
     "status: open, completed or skipped"),
    # a non-member reading
    (["task", "ls", "{home}", "--as", "nora"], 1, "list: no list "),
    # an unknown task
    (["task", "show", "ZZZZZZ", *AS_ALICE], 1, "no task ZZZZZZ"),
    # a non-member reading a task
    (["task", "show", "{parent}", "--as", "nora"], 1, "task: no task "),
    # a non-member reading the history
    (["task", "history", "{parent}", "--as", "nora"], 1, "task: no task "),
    # --- task edit ---
    # no --expect
    (["task", "edit", "{parent}", "--title", "New", *AS_ALICE], 2,
     "pass the task's current revision with --expect REV"),
    # a revision that is not a number
    (["task", "edit", "{parent}", "--expect", "abc", "--title", "New", *AS_ALICE], 2,
     "expect: a revision is a whole number"),
    # a stale revision
    (["task", "edit", "{parent}", "--expect", "99", "--title", "New", *AS_ALICE], 1,
     "the task changed: expected revision 99, it is 1"),
    # a blank title
    (["task", "edit", "{parent}", "--expect", "1", "--title", " ", *AS_ALICE], 2,
     "title: a title cannot be blank"),
    # nothing to change
    (["task", "edit", "{parent}", "--expect", "1", *AS_ALICE], 2, "say what to change"),
    # a viewer writing
    (["task", "edit", "{parent}", "--expect", "1", "--title", "New", "--as", "vera"], 1,
     "needs the editor role"),
    # the rename would succeed, the blank tag fails: the whole edit is rolled back
    (["task", "edit", "{parent}", "--expect", "1", "--title", "New", "--tag", " ", *AS_ALICE],
     2, "tags: a name cannot be blank"),
    # --- task move ---
    # nowhere to go
    (["task", "move", "{child}", "--expect", "1", *AS_ALICE], 2, "move: say where"),
    # under its own descendant
    (["task", "move", "{parent}", "--expect", "1", "--parent", "{child}", *AS_ALICE], 2,
     "cannot move under itself or its own descendant"),
    # an unknown target list
    (["task", "move", "{parent}", "--expect", "1", "--list", "Nowhere", *AS_ALICE], 1,
     "you have no list named 'Nowhere'"),
    # a checklist item cannot change list alone
    (["task", "move", "{child}", "--expect", "1", "--list", "Errands", *AS_ALICE], 2,
     "only a root task moves to another list"),
    # contradicting options
    (["task", "move", "{parent}", "--expect", "1", "--section", "Kitchen", "--no-section",
      *AS_ALICE], 2, "not both"),
    # the reparent would succeed, the unknown section fails: the whole move is rolled back
    (["task", "move", "{child}", "--expect", "1", "--root", "--section", "Attic", *AS_ALICE], 1,
     "no section 'Attic'"),
    # --- task done / reopen / trash / restore ---
    # open checklist items
    (["task", "done", "{parent}", "--expect", "1", *AS_ALICE], 1,
     "1 open checklist item(s) remain; complete them or pass --subtree"),
    # a stale revision
    (["task", "done", "{child}", "--expect", "2", "--subtree", *AS_ALICE], 1,
     "expected revision 2, it is 1"),
    # reopening an open task
    (["task", "reopen", "{child}", "--expect", "1", *AS_ALICE], 1, "the task is not completed"),
    # restoring a task that is not in the trash
    (["task", "restore", "{child}", "--expect", "1", *AS_ALICE], 1, "not in the trash"),
    # trashing without --expect
    (["task", "trash", "{child}", *AS_ALICE], 2, "--expect REV"),
    # a viewer trashing
    (["task", "trash", "{child}", "--expect", "1", "--as", "vera"], 1, "needs the editor role"),
    # --- task comment / attach ---
    # a blank comment
    (["task", "comment", "{child}", "  ", *AS_ALICE], 2, "body: a comment cannot be blank"),
    # a viewer commenting
    (["task", "comment", "{child}", "hi", "--as", "vera"], 1, "needs the editor role"),
    # a missing file
    (["task", "attach", "{child}", "/nonexistent/file.txt", *AS_ALICE], 2, "file: cannot read"),
    # not a media type
    (["task", "attach", "{child}", "{files}/note.txt", "--type", "text", *AS_ALICE], 2,
     "media_type: 'text' is not a media type"),
    # a media type with a line break, which no download could send back
    (["task", "attach", "{child}", "{files}/note.txt", "--type", "text/plain\n", *AS_ALICE], 2,
     "media_type: 'text/plain\\n' is not a media type"),
    # a non-member attaching
    (["task", "attach", "{child}", "{files}/note.txt", "--as", "nora"], 1, "task: no task"),
    # --- task schedule ---
    # a date that is not in the calendar
    ([*CHILD_SCHEDULE, "--planned", "2026-02-30"], 2, "planned: '2026-02-30' is not a calendar"),
    # a due time without a zone, written as a date
    ([*CHILD_SCHEDULE, "--due", "2026-03-01T09:00:00"], 2, "a due time needs its IANA zone"),
    # a due wall time without --zone
    ([*CHILD_SCHEDULE, "--due-local", "2026-03-01T09:00:00"], 2,
     "due: a timed value needs an IANA zone"),
    # an offset is not a zone
    ([*CHILD_SCHEDULE, "--due-local", "2026-03-01T09:00:00", "--zone", "+02:00"], 2,
     "'+02:00' is not an IANA zone name"),
    # a wall time the DST gap skips
    ([*CHILD_SCHEDULE, "--due-local", "2026-03-08T02:30:00", "--zone", "America/New_York"], 2,
     "2026-03-08T02:30:00 does not exist in America/New_York: clocks jump from 02:00 to 03:00"),
    # a wall time the DST overlap repeats
    ([*CHILD_SCHEDULE, "--due-local", "2026-11-01T01:30:00", "--zone", "America/New_York"], 2,
     "is ambiguous in America/New_York"),
    # --zone alone
    ([*CHILD_SCHEDULE, "--zone", "UTC"], 2, "zone: --zone goes with --due-local"),
    # both kinds of due value
    ([*CHILD_SCHEDULE, "--due", "2026-03-01", "--due-local", "2026-03-01T09:00:00", "--zone",
      "UTC"], 2, "not both"),
    # priorities are 1-3
    ([*CHILD_SCHEDULE, "--priority", "0"], 2, "priority: must be between 1 and 3, got 0"),
    ([*CHILD_SCHEDULE, "--priority", "4"], 2, "priority: must be between 1 and 3, got 4"),
    ([*CHILD_SCHEDULE, "--priority", "high"], 2, "priority: must be a whole number 1-3"),
    # a channel kalends does not deliver on
    ([*CHILD_SCHEDULE, "--remind", "sms@2026-03-10T08:00:00@UTC"], 2,
     "reminders[0].channel: channel must be 'email' or 'push', got 'sms'"),
    # a reminder in the DST gap
    ([*CHILD_SCHEDULE, "--remind", "push@2026-03-08T02:30:00@America/New_York"], 2,
     "does not exist in America/New_York"),
    # a reminder without any zone
    ([*CHILD_SCHEDULE, "--remind", "email@2026-03-10T08:00:00"], 2,
     "reminders[0]: a reminder needs an IANA zone"),
    # a malformed reminder
    ([*CHILD_SCHEDULE, "--remind", "email@tomorrow"], 2, "reminders[0]: expected CHANNEL@"),
    # an unknown recipient: a mistake in the schedule, as on a server (invalid input)
    ([*CHILD_SCHEDULE, "--remind", f"{REMIND_AT}:ghost"], 2,
     "reminders[0].recipient: no actor 'ghost'"),
    # a recipient who is not a member of the list
    ([*CHILD_SCHEDULE, "--remind", f"{REMIND_AT}:nora"], 1,
     "every recipient must be a member of the task's list"),
    # nothing to set
    (CHILD_SCHEDULE, 2, "schedule: say what to set"),
    # no --expect
    (["task", "schedule", "{child}", "--priority", "1", *AS_ALICE], 2, "--expect REV"),
    # a stale revision
    (["task", "schedule", "{child}", "--expect", "5", "--priority", "1", *AS_ALICE], 1,
     "expected revision 5, it is 1"),
    # a viewer scheduling
    (["task", "schedule", "{child}", "--expect", "1", "--priority", "1", "--as", "vera"], 1,
     "needs the editor role"),
    # JSON that does not parse
    ([*CHILD_SCHEDULE, "--json-input", "{files}/bad.json"], 2, "json-input: not valid JSON"),
    # JSON with a field a schedule does not have
    ([*CHILD_SCHEDULE, "--json-input", "{files}/extra.json"], 2,
     "when: not a field of a schedule"),
    # JSON and options together
    ([*CHILD_SCHEDULE, "--json-input", "{files}/extra.json", "--priority", "1"], 2,
     "json-input: the JSON is the whole schedule"),
]  # fmt: skip


class TestBadInput:
    @pytest.mark.parametrize(("args", "exit_code", "fragment"), CASES)
    def test_bad_input_is_one_clear_line_and_writes_nothing(
        self, world: World, args: list[str], exit_code: int, fragment: str
    ) -> None:
        before = world.snapshot()
        result = world.invoke(args)
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            result.exception
        )
        assert result.exit_code == exit_code, result.output
        assert result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("error: ")
        assert fragment in lines[0]
        assert world.snapshot() == before


class TestJsonErrors:
    def test_with_json_the_error_is_also_a_json_object_on_stdout(self, world: World) -> None:
        result = world.invoke(["task", "show", "ZZZZZZ", "--json", *AS_ALICE])
        assert result.exit_code == 1
        assert json.loads(result.stdout) == {
            "error": {
                "code": "not-found",
                "message": "task: no task ZZZZZZ",
                "details": {"field": "task"},
            }
        }
        assert result.stderr == "error: task: no task ZZZZZZ\n"

    def test_a_stale_revision_reports_both_revisions_as_json(self, world: World) -> None:
        args = ["task", "trash", "{child}", "--expect", "7", "--json", *AS_ALICE]
        result = world.invoke(args)
        assert result.exit_code == 1
        error: dict[str, Any] = json.loads(result.stdout)["error"]
        assert error["code"] == "revision-conflict"
        assert error["details"] == {"expected": 7, "actual": 1}


class TestHelp:
    def test_every_command_documents_itself_and_takes_json_and_database(self) -> None:
        root = get_command(app)
        groups: Any = root.commands  # type: ignore[attr-defined]
        leaves: list[tuple[str, Any]] = []
        pending = [(name, groups[name]) for name in ("actor", "list", "task", "reminders")]
        while pending:
            name, command = pending.pop()
            children = getattr(command, "commands", None)
            if children:
                pending.extend((f"{name} {n}", c) for n, c in children.items())
            else:
                leaves.append((name, command))
        assert len(leaves) == 37  # actor grant and actor revoke among them
        for name, command in leaves:
            options = {o for p in command.params for o in getattr(p, "opts", [])}
            assert {"--json", "--database"} <= options, name
            assert command.help, name

    def test_task_help_explains_local_mode_and_exit_codes(self) -> None:
        result = runner.invoke(app, ["task", "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0
        assert "Local mode (no --server)" in result.stdout
        assert "Exit codes: 0 done; 1 refused" in result.stdout
