"""What `kalends task` and `kalends reminders` show a person (issue 17): the next date of a
series as completing would give it, skipped occurrences as skipped, the checklist bound of
a live series refused when a task is added, reminder times in their recipient's zone with
a warning for one already past, `reminders ls` laid out for 80 columns, and `task history`
as lines of text.

In-process (CliRunner) on a fresh SQLite file per test; the CLI runs on the real clock,
so series start in the past (2020) where "today" matters, and in 2040 where it must not.
"""

from __future__ import annotations

import json
import re
import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, select
from typer.testing import CliRunner, Result

from kalends.bootstrap import Services, open_services
from kalends.cli.main import app
from kalends.storage.task_tables import tasks
from kalends.storage.testing import nothing_written
from kalends.tasks import Task, parse_schedule
from kalends.tasks.refs import ALPHABET, REF_LENGTH
from kalends.tasks.series_rules import MAX_CHECKLIST_TASKS

runner = CliRunner()
ZONE = "Europe/Paris"
# A UUID as printed: 8-4-4-4-12 hex digits.
UUID_TEXT = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def env(columns: int) -> dict[str, str | None]:
    # Keep the caller's environment from choosing the database or the actor.
    return {"KALENDS_ACTOR": None, "KALENDS_DATABASE_URL": None, "COLUMNS": str(columns)}


@dataclass
class Db:
    url: str
    services: Services

    def invoke(self, *args: str, columns: int = 120) -> Result:
        return runner.invoke(
            app, [*args, "--as", "alice", "--database", self.url], env=env(columns)
        )

    def ok(self, *args: str, columns: int = 120) -> str:
        result = self.invoke(*args, columns=columns)
        assert result.exit_code == 0, result.output
        return result.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "--json"))

    def task(self, ref: str) -> Task:
        return self.services.tasks.get("alice", ref).task


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Db]:
    url = f"sqlite:///{tmp_path / 'kalends.sqlite3'}"
    services = open_services(url)
    for handle in ("alice", "bob"):
        services.directory.add_actor(handle, handle.title())
    services.directory.create_list("alice", "Home")
    services.directory.share("alice", "Home", "bob", "editor")
    yield Db(url=url, services=services)
    services.store.close()


def plant(db: Db, due: str, title: str = "Water plants") -> Task:
    """A root task due at ``due`` (Paris) with two checklist items, "Soil" and "Leaves"."""
    task = db.services.tasks.create("alice", "Home", title)
    for item in ("Soil", "Leaves"):
        db.services.tasks.create("alice", "Home", item, parent=task.ref)
    schedule = parse_schedule({"due": {"local": due, "zone": ZONE}}, lambda v, f: task.id)
    return db.services.tasks.set_schedule("alice", task.ref, task.revision, schedule)


def row_of(out: str, name: str) -> str:
    found = re.search(rf"^{name}  +(.*?) *$", out, re.MULTILINE)
    assert found is not None, out
    return found[1]


class TestNextDate:
    def test_series_show_gives_the_date_completing_then_gives(self, db: Db) -> None:
        # Every second day from Monday 2 March 2020: completing it now catches up to the
        # latest date of the rule up to today, not 4 March 2020.
        task = plant(db, "2020-03-02T09:00:00")
        db.ok("task", "repeat", task.ref, "--expect", "2", "--daily", "--every", "2",
              "--time", "09:00", "--zone", ZONE)  # fmt: skip
        shown = row_of(db.ok("task", "series", "show", task.ref), "next date")
        as_json = db.json("task", "series", "show", task.ref)["next_date"]
        in_task = row_of(db.ok("task", "show", task.ref), "next date")
        assert shown == as_json == in_task != "2020-03-04"

        db.ok("task", "done", task.ref, "--expect", "3", "--subtree")
        series = db.json("task", "series", "show", task.ref)
        successor = db.json("task", "show", series["outstanding_task_id"])
        assert successor["due"] == {"local": f"{shown}T09:00:00", "zone": ZONE}


class TestSkipped:
    def skipped(self, db: Db) -> tuple[Task, Task]:
        """A daily series whose first occurrence was skipped after "Soil" was completed
        by hand; the skipped root and the outstanding successor."""
        task = plant(db, "2040-01-02T09:00:00")
        soil = db.services.tasks.tree("alice", "Home")[0].children[0].task
        db.services.tasks.complete("alice", soil.ref, soil.revision)
        db.ok("task", "repeat", task.ref, "--expect", "2", "--daily")
        out = db.ok("task", "skip", task.ref, "--expect", "3")
        assert f"skipped occurrence #1: {task.ref}" in out
        view = db.services.series.get("alice", task.ref)
        assert view.outstanding_task_id is not None
        return db.task(task.ref), db.services.tasks.get("alice", view.outstanding_task_id).task

    def test_ls_marks_skipped_tasks_apart_from_completed_ones(self, db: Db) -> None:
        root, successor = self.skipped(db)
        out = db.ok("task", "ls", "Home")
        assert re.search(rf"{root.ref} \[-\] Water plants +\(skipped\)", out), out
        assert re.search(r"\w{6} \[-\] Leaves +\(skipped\)", out), out
        assert re.search(r"\w{6} \[x\] Soil", out), out
        assert re.search(rf"{successor.ref} \[ \] Water plants", out), out
        assert "[x] Water plants" not in out

    def test_show_says_skipped_and_json_too(self, db: Db) -> None:
        root, _ = self.skipped(db)
        assert row_of(db.ok("task", "show", root.ref), "status") == "skipped"
        assert db.json("task", "show", root.ref)["status"] == "skipped"
        trees = db.json("task", "ls", "Home")
        first = next(t for t in trees if t["ref"] == root.ref)
        assert [(c["title"], c["status"]) for c in first["children"]] == [
            ("Soil", "completed"),
            ("Leaves", "skipped"),
        ]
        # The seed's rule stands: the skip settled the occurrence (stored as completed).
        assert root.status.value == "completed" and root.skipped

    def test_status_filters_tell_skipped_from_completed(self, db: Db) -> None:
        root, _ = self.skipped(db)
        skipped = db.json("task", "ls", "Home", "--status", "skipped")
        assert [(t["ref"], t["status"]) for t in skipped] == [(root.ref, "skipped")]
        assert [c["title"] for c in skipped[0]["children"]] == ["Leaves"]
        completed = db.json("task", "ls", "Home", "--status", "completed")
        assert [c["title"] for c in completed[0]["children"]] == ["Soil"]

    def test_the_skip_answer_says_skipped(self, db: Db) -> None:
        task = plant(db, "2040-01-02T09:00:00")
        db.ok("task", "repeat", task.ref, "--expect", "2", "--daily")
        answer = db.json("task", "skip", task.ref, "--expect", "3")
        assert answer["skipped"]["status"] == "skipped"
        assert answer["successor"]["status"] == "open"


def insert_children(db: Db, parent: Task, count: int) -> None:
    """``count`` open checklist items under ``parent`` in one Core insert (set-up only)."""
    now = db.services.store.clock.now()
    refs: set[str] = set()
    while len(refs) < count:
        refs.add("".join(secrets.choice(ALPHABET) for _ in range(REF_LENGTH)))
    rows = [
        {
            "id": uuid.uuid4(),
            "ref": ref,
            "list_id": parent.list_id,
            "parent_id": parent.id,
            "position": (n + 1) * 1024,
            "title": f"Item {n}",
            "description": "",
            "status": "open",
            "trashed": False,
            "revision": 1,
            "schedule_revision": 0,
            "created_by": db.services.directory.actor("alice").id,
            "created_at": now,
            "updated_at": now,
        }
        for n, ref in enumerate(sorted(refs))
    ]
    with db.services.store.transaction() as conn:
        taken = set(conn.execute(select(tasks.c.ref).where(tasks.c.ref.in_(refs))).scalars())
        assert not taken, "a drawn reference is already used: run again"
        conn.execute(insert(tasks), rows)


class TestChecklistBound:
    def test_adding_the_501st_task_is_refused_with_the_limit_and_writes_nothing(
        self, db: Db
    ) -> None:
        root = db.services.tasks.create("alice", "Home", "Big chore")
        insert_children(db, root, MAX_CHECKLIST_TASKS - 1)  # 500 with the root
        db.ok("task", "repeat", root.ref, "--expect", "1", "--daily")

        with nothing_written(db.services.store):
            refused = db.invoke("task", "add", "Home", "One too many", "--parent", root.ref)
        assert refused.exit_code == 1, refused.output
        assert refused.stdout == ""
        assert refused.stderr.strip() == (
            "error: parent: the checklist of a recurring series holds at most 500 live "
            "tasks; this would make it 501"
        )
        with nothing_written(db.services.store):
            as_json = db.invoke("task", "add", "Home", "One too many", "--parent", root.ref,
                                "--json")  # fmt: skip
        assert json.loads(as_json.stdout)["error"]["code"] == "checklist-too-large"


class TestReminderTimes:
    def scheduled(self, db: Db) -> Task:
        task = db.services.tasks.create("alice", "Home", "Pay the rent")
        db.ok("task", "schedule", task.ref, "--expect", "1",
              "--due-local", "2040-01-05T09:00:00", "--zone", ZONE,
              "--remind", "email@2040-01-05T08:00:00",
              "--remind", "push@2040-01-04T20:30:00@America/New_York:bob")  # fmt: skip
        return task

    def test_ls_and_show_give_the_wall_time_and_zone_json_gives_utc(self, db: Db) -> None:
        self.scheduled(db)
        listed = db.json("reminders", "ls")
        assert [(i["at"], i["local"], i["zone"]) for i in listed] == [
            ("2040-01-05T01:30:00Z", "2040-01-04T20:30:00", "America/New_York"),
            ("2040-01-05T07:00:00Z", "2040-01-05T08:00:00", ZONE),
        ]
        out = db.ok("reminders", "ls", columns=200)
        assert "2040-01-05 08:00 Europe/Paris" in out
        assert "2040-01-04 20:30 America/New_York" in out
        assert "UTC" not in out
        shown = db.ok("reminders", "show", listed[1]["id"])
        assert row_of(shown, "at") == "2040-01-05 08:00 Europe/Paris"

    def test_a_past_reminder_is_kept_with_a_warning(self, db: Db) -> None:
        task = db.services.tasks.create("alice", "Home", "Call mum")
        result = db.invoke("task", "schedule", task.ref, "--expect", "1",
                           "--remind", f"email@2020-01-05T08:00:00@{ZONE}")  # fmt: skip
        assert result.exit_code == 0, result.output
        assert f"scheduled: {task.ref}" in result.stdout
        assert result.stderr.strip() == (
            "warning: reminders[0]: the email reminder at 2020-01-05 08:00 Europe/Paris is "
            "more than a day past: it will never be sent (it is closed as expired)"
        )
        answer = db.json("task", "schedule", task.ref, "--expect", "2", "--priority", "1")
        assert [w["code"] for w in answer["warnings"]] == ["reminder-in-the-past"]
        assert answer["priority"] == 1 and len(answer["reminders"]) == 1

    def test_a_reminder_to_come_gets_no_warning(self, db: Db) -> None:
        task = self.scheduled(db)
        result = db.invoke("task", "schedule", task.ref, "--expect", "2", "--priority", "2")
        assert result.exit_code == 0 and result.stderr == "", result.output
        assert (
            db.json("task", "schedule", task.ref, "--expect", "3", "--priority", "3")["warnings"]
            == []
        )


class TestRemindersAt80Columns:
    def test_ls_fits_80_columns_and_keeps_every_id_whole(self, db: Db) -> None:
        TestReminderTimes().scheduled(db)
        ids = [i["id"] for i in db.json("reminders", "ls")]
        out = db.ok("reminders", "ls", columns=80)
        lines = out.splitlines()
        assert all(len(line) <= 80 for line in lines), out
        assert "…" not in out
        for reminder_id in ids:
            assert any(line.strip().startswith(reminder_id) for line in lines), out
        assert "2040-01-05 08:00" in out and "Europe/Paris" in out
        assert "email to alice" in out and "push to bob" in out
        assert re.search(r"pending 0/5", out), out

    def test_wide_shows_every_column_however_narrow_the_terminal(self, db: Db) -> None:
        TestReminderTimes().scheduled(db)
        ids = [i["id"] for i in db.json("reminders", "ls")]
        out = db.ok("reminders", "ls", "--wide", columns=80)
        header = next(line for line in out.splitlines() if re.search(r"\bid\b", line))
        for column in ("task", "title", "channel", "at", "recipient", "status", "attempts"):
            assert re.search(rf"\b{column}\b", header), out
        assert "…" not in out
        assert re.search(rf"{ids[1]} +\w{{6}} +Pay the rent +email +2040-01-05 08:00 "
                         rf"Europe/Paris +alice +pending +0/5", out), out  # fmt: skip

    def test_a_wide_terminal_gets_the_full_table_anyway(self, db: Db) -> None:
        TestReminderTimes().scheduled(db)
        out = db.ok("reminders", "ls", columns=200)
        assert re.search(rf"{UUID_TEXT} +\w{{6}} +Pay the rent +push", out), out


class TestHistory:
    def test_history_is_lines_of_text_unless_json(self, db: Db) -> None:
        task = TestReminderTimes().scheduled(db)
        db.ok("task", "done", task.ref, "--expect", "2")
        out = db.ok("task", "history", task.ref, columns=80)
        assert "{" not in out and '"' not in out
        lines = out.splitlines()
        head = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC ")
        heads = [line for line in lines if head.match(line)]
        assert [h.split()[-1] for h in heads] == ["created", "schedule-set", "completed"]
        assert all(h.split()[3] == "alice" for h in heads)
        assert "    title: Pay the rent" in lines
        assert "    due: 2040-01-05 09:00 Europe/Paris" in lines
        assert "    reminder: email 2040-01-05 08:00 Europe/Paris to alice" in lines
        assert "    reminder: push 2040-01-04 20:30 America/New_York to bob" in lines
        assert "    complete subtree: no" in lines
        as_json = db.json("task", "history", task.ref)
        assert [e["kind"] for e in as_json] == ["created", "schedule-set", "completed"]
