"""`kalends task repeat|skip|series show|pause|resume|stop` and the series in `task show`.

In-process (CliRunner) for the many cases; one journey runs real processes. Every
series starts on a root due 2040-01-02 (a Monday) so the dates do not depend on today.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from typer.testing import CliRunner, Result

from kalends.bootstrap import Services, open_services
from kalends.cli.main import app
from kalends.storage.schema import metadata
from kalends.tasks import Task, parse_schedule

runner = CliRunner()
# Keep the caller's environment from choosing the database or the actor.
CLEAN_ENV: dict[str, str | None] = {
    "KALENDS_ACTOR": None,
    "KALENDS_DATABASE_URL": None,
    "COLUMNS": "120",
}
FIRST_DUE = "2040-01-02T09:00:00"
ZONE = "Europe/Paris"


def plant(services: Services, title: str = "Water plants", item: str = "Check soil") -> Task:
    """An open root task due 2040-01-02 09:00 Paris with one checklist item."""
    task = services.tasks.create("alice", "Home", title)
    services.tasks.create("alice", "Home", item, parent=task.ref)
    schedule = parse_schedule(
        {"due": {"local": FIRST_DUE, "zone": ZONE}}, recipient=lambda value, field: task.id
    )  # no reminders: the recipient resolver is never called
    return services.tasks.set_schedule("alice", task.ref, task.revision, schedule)


def people(services: Services) -> None:
    """Alice owns Home; vera views it; nora is in no list."""
    for handle in ("alice", "vera", "nora"):
        services.directory.add_actor(handle, handle.title())
    services.directory.create_list("alice", "Home")
    services.directory.share("alice", "Home", "vera", "viewer")


@dataclass
class Db:
    url: str
    services: Services

    def invoke(self, *args: str, actor: str = "alice") -> Result:
        return runner.invoke(app, [*args, "--as", actor, "--database", self.url], env=CLEAN_ENV)

    def ok(self, *args: str, actor: str = "alice") -> str:
        result = self.invoke(*args, actor=actor)
        assert result.exit_code == 0, result.output
        return result.stdout

    def json(self, *args: str, actor: str = "alice") -> Any:
        return json.loads(self.ok(*args, "--json", actor=actor))


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Db]:
    url = f"sqlite:///{tmp_path / 'kalends.sqlite3'}"
    services = open_services(url)
    people(services)
    yield Db(url=url, services=services)
    services.store.close()


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ")
    return lines[0]


class TestRepeatAndShow:
    def test_repeat_prints_the_series_and_task_show_adds_rule_occurrence_and_next_date(
        self, db: Db
    ) -> None:
        task = plant(db.services)
        child = db.services.tasks.tree("alice", "Home")[0].children[0].task
        series = db.json(
            "task", "repeat", task.ref, "--expect", "2", "--daily", "--every", "2",
            "--time", "09:00", "--zone", ZONE, "--count", "3",
        )  # fmt: skip
        assert series["rule"] == {"kind": "daily", "interval_days": 2}
        assert (series["time"], series["zone"], series["status"]) == ("09:00:00", ZONE, "active")
        assert (series["anchor_date"], series["next_date"]) == ("2040-01-02", "2040-01-04")
        assert (series["count"], series["emitted"], series["revision"]) == (3, 1, 1)
        assert series["outstanding_task_id"] == str(task.id)
        assert series["outstanding_ordinal"] == 1

        expected = {
            "id": series["id"],
            "rule": {"kind": "daily", "interval_days": 2},
            "time": "09:00:00",
            "zone": ZONE,
            "status": "active",
            "revision": 1,
            "next_date": "2040-01-04",
            "occurrence": 1,
            "outstanding_ordinal": 1,
        }
        shown = db.json("task", "show", task.ref)
        assert shown["series"] == expected
        assert shown["revision"] == 3  # starting the series is a change of the task
        assert db.json("task", "show", child.ref)["series"] == expected

        human = db.ok("task", "show", task.ref)
        assert re.search(
            r"^series +every 2 days at 09:00 Europe/Paris, active \(series revision 1\)",
            human,
            re.MULTILINE,
        )
        assert re.search(rf"^series id +{series['id']}", human, re.MULTILINE)
        assert re.search(r"^occurrence +1 \(outstanding: 1\)", human, re.MULTILINE)
        assert re.search(r"^next date +2040-01-04", human, re.MULTILINE)

    def test_a_task_outside_any_series_shows_series_null(self, db: Db) -> None:
        task = db.services.tasks.create("alice", "Home", "Sweep")
        assert db.json("task", "show", task.ref)["series"] is None
        assert "series" not in db.ok("task", "show", task.ref)

    def test_the_human_repeat_names_the_rule_and_the_task_revision_to_expect_next(
        self, db: Db
    ) -> None:
        task = plant(db.services)
        out = db.ok("task", "repeat", task.ref, "--expect", "2", "--daily", "--until", "2040-01-03")
        assert f"{task.ref} now repeats: every day" in out
        assert re.search(r"^until +2040-01-03", out, re.MULTILINE)
        assert re.search(rf"^outstanding +#1 {task.ref} \[ \] Water plants", out, re.MULTILINE)
        assert re.search(r"^next date +2040-01-03", out, re.MULTILINE)
        assert "task revision 3" in out
        assert "local mode: acting as alice" in out

    @pytest.mark.parametrize(
        "days",
        [
            "mon,wed,fri",  # short names
            "1,3,5",  # ISO numbers
            " Monday, wednesday ,FRI",  # full names, any case, spaces
            "5,1,3",  # any order: the rule keeps the order given
        ],
    )
    def test_weekdays_by_name_or_number(self, db: Db, days: str) -> None:
        task = plant(db.services)
        series = db.json("task", "repeat", task.ref, "--expect", "2", "--weekdays", days)
        assert sorted(series["rule"]["days"]) == [1, 3, 5]
        assert series["next_date"] == "2040-01-04"

    def test_after_completion_has_no_next_date_until_an_occurrence_is_settled(self, db: Db) -> None:
        task = plant(db.services)
        series = db.json("task", "repeat", task.ref, "--expect", "2", "--after-completion", "3")
        assert series["rule"] == {"kind": "completion_relative", "days": 3}
        assert series["next_date"] is None
        out = db.ok("task", "series", "show", task.ref)
        assert re.search(r"^rule +3 days after each completion", out, re.MULTILINE)
        assert re.search(r"^next date +counted from the next completion", out, re.MULTILINE)


class TestSkipAndLifecycle:
    def test_skip_pause_resume_stop(self, db: Db) -> None:
        task = plant(db.services)
        started = db.json("task", "repeat", task.ref, "--expect", "2", "--weekdays", "mon,wed,fri",
                          "--time", "09:00", "--zone", ZONE)  # fmt: skip
        series_id = started["id"]

        out = db.ok("task", "skip", task.ref, "--expect", "3")
        view = db.services.series.get("alice", series_id)
        assert view.outstanding_task_id is not None
        second = db.services.tasks.get("alice", view.outstanding_task_id).task
        assert f"skipped occurrence #1: {task.ref}" in out
        assert f"next, occurrence #2: {second.ref} [ ] Water plants" in out
        assert "due 2040-01-04 09:00 Europe/Paris" in out
        skipped = db.services.tasks.get("alice", task.ref).task
        assert skipped.status.value == "completed"

        by_ref = db.json("task", "series", "show", second.ref.lower())
        assert by_ref == db.json("task", "series", "show", series_id)
        assert (by_ref["outstanding_ordinal"], by_ref["next_date"]) == (2, "2040-01-06")
        shown = db.ok("task", "series", "show", series_id)
        assert re.search(rf"^series +{series_id}", shown, re.MULTILINE)
        assert re.search(r"^revision +1", shown, re.MULTILINE)
        assert re.search(r"^rule +every Mon, Wed, Fri at 09:00 Europe/Paris", shown, re.MULTILINE)
        assert re.search(rf"^outstanding +#2 {second.ref}", shown, re.MULTILINE)

        paused = db.json("task", "series", "pause", second.ref, "--expect", "1")
        assert (paused["status"], paused["revision"]) == ("paused", 2)
        skip = db.json("task", "skip", second.ref, "--expect", "1")
        assert skip["successor"] is None
        assert skip["skipped"]["ref"] == second.ref
        assert skip["skipped"]["status"] == "skipped"
        assert (skip["series"]["status"], skip["series"]["outstanding_ordinal"]) == ("paused", None)

        resumed = db.ok("task", "series", "resume", series_id, "--expect", "2")
        assert f"resumed series {series_id}" in resumed
        assert re.search(r"^outstanding +#3 \w{6} \[ \] Water plants", resumed, re.MULTILINE)
        stopped = db.json("task", "series", "stop", series_id, "--expect", "3")
        assert (stopped["status"], stopped["revision"]) == ("stopped", 4)
        assert stopped["outstanding_task_id"] is None
        assert stopped["next_date"] is None
        third = [n.task for n in db.services.tasks.tree("alice", "Home", status="open")]
        assert [t.occurrence for t in third] == [3]
        assert db.json("task", "show", third[0].ref)["series"]["status"] == "stopped"

    def test_skipping_while_paused_says_so(self, db: Db) -> None:
        task = plant(db.services)
        view = db.services.series.start_series("alice", task.ref, 2, {"kind": "daily"})
        db.services.series.pause("alice", view.id, 1)
        out = db.ok("task", "skip", task.ref, "--expect", "3")
        assert "the series is paused: the next occurrence comes when it resumes" in out

    def test_a_series_that_reaches_its_count_ends_on_the_last_skip(self, db: Db) -> None:
        task = plant(db.services)
        db.json("task", "repeat", task.ref, "--expect", "2", "--daily", "--count", "1")
        out = db.ok("task", "skip", task.ref, "--expect", "3")
        assert "the series is ended: no next occurrence" in out
        shown = db.json("task", "series", "show", task.ref)
        assert (shown["status"], shown["next_date"], shown["emitted"]) == ("ended", None, 1)

    def test_done_of_an_occurrence_root_needs_subtree_which_creates_the_next(self, db: Db) -> None:
        task = plant(db.services)
        db.json("task", "repeat", task.ref, "--expect", "2", "--daily")
        refused = db.invoke("task", "done", task.ref, "--expect", "3")
        assert refused.exit_code == 1
        assert one_error_line(refused.stderr) == (
            "error: a recurring checklist is completed only as a whole: pass --subtree"
        )
        db.ok("task", "done", task.ref, "--expect", "3", "--subtree")
        shown = db.json("task", "series", "show", task.ref)
        assert (shown["emitted"], shown["outstanding_ordinal"]) == (2, 2)


# --- bad input --------------------------------------------------------------------------


@dataclass(frozen=True)
class World:
    """Home: a plain task with an item, a recurring task with an item, a stopped series'
    task and a completed task. Alice owns Home, vera views it, nora is in no list."""

    url: str
    services: Services
    refs: dict[str, str]

    def invoke(self, args: list[str]) -> Result:
        expanded = [a.format(**self.refs) for a in args]
        return runner.invoke(app, [*expanded, "--database", self.url], env=CLEAN_ENV)

    def snapshot(self) -> dict[str, list[tuple[str, ...]]]:
        """Every row of every table: any write at all shows up as a difference."""
        with self.services.store.engine.connect() as conn:
            return {
                table.name: sorted(
                    tuple(str(v) for v in row) for row in conn.execute(select(table))
                )
                for table in metadata.sorted_tables
            }


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    url = f"sqlite:///{tmp_path_factory.mktemp('cli-series') / 'kalends.sqlite3'}"
    services = open_services(url)
    people(services)
    tasks, series = services.tasks, services.series
    plain = tasks.create("alice", "Home", "Sweep")
    item = tasks.create("alice", "Home", "Corners", parent=plain.ref)
    recurring = plant(services)  # revision 2
    view = series.start_series("alice", recurring.ref, 2, {"kind": "daily"})  # task at 3
    recurring_item = tasks.tree("alice", "Home")[1].children[0].task
    old = plant(services, "Old chore", "Old item")
    stopped = series.start_series("alice", old.ref, 2, {"kind": "daily"})
    series.stop("alice", stopped.id, 1)
    finished = tasks.create("alice", "Home", "Finished")
    tasks.complete("alice", finished.ref, 1)
    refs = {
        "plain": plain.ref,
        "item": item.ref,
        "rec": recurring.ref,
        "rec_item": recurring_item.ref,
        "series": str(view.id),
        "stopped": str(stopped.id),
        "old": old.ref,
        "done": finished.ref,
    }
    yield World(url=url, services=services, refs=refs)
    services.store.close()


A = ["--as", "alice"]
REPEAT = ["task", "repeat", "{plain}", "--expect", "1", *A]
PAUSE = ["task", "series", "pause", "{series}", *A]

# (arguments, exit code, a fragment of the one-line error)
CASES: list[tuple[list[str], int, str]] = [
    # --- task repeat ---
    # an unknown task
    (["task", "repeat", "ZZZZZZ", "--expect", "1", "--daily", *A], 1, "task: no task ZZZZZZ"),
    # a checklist item cannot start a series
    (["task", "repeat", "{item}", "--expect", "1", "--daily", *A], 2,
     "a series starts on a root task, not a subtask"),
    # a task already in a series
    (["task", "repeat", "{rec}", "--expect", "3", "--daily", *A], 1,
     "the task already belongs to a series"),
    # a completed task
    (["task", "repeat", "{done}", "--expect", "2", "--daily", *A], 1,
     "a series starts on an unfinished task"),
    # two rules at once
    ([*REPEAT, "--daily", "--weekdays", "1"], 2, "rule: give exactly one of --daily"),
    ([*REPEAT, "--weekdays", "1", "--after-completion", "2"], 2, "rule: give exactly one"),
    # no rule at all
    (REPEAT, 2, "rule: give exactly one of --daily [--every N], --weekdays DAYS"),
    # weekday 8 does not exist
    ([*REPEAT, "--weekdays", "1,8"], 2,
     "weekdays: ISO weekdays 1-7 (Monday = 1) or mon…sun, got '8'"),
    # weekday 0 neither
    ([*REPEAT, "--weekdays", "0"], 2, "got '0'"),
    # a name that is not a weekday
    ([*REPEAT, "--weekdays", "mon,funday"], 2, "got 'funday'"),
    # an empty list
    ([*REPEAT, "--weekdays", ""], 2, "weekdays: ISO weekdays 1-7"),
    # the same day twice, by number and by name
    ([*REPEAT, "--weekdays", "1,mon"], 2, "weekdays: 'mon' is listed twice"),
    # every 0 days
    ([*REPEAT, "--daily", "--every", "0"], 2, "every: a whole number 1-3650, got 0"),
    # every few days
    ([*REPEAT, "--daily", "--every", "few"], 2, "every: a whole number, got 'few'"),
    # --every alone
    ([*REPEAT, "--every", "2"], 2, "rule: give exactly one"),
    # --every with another rule
    ([*REPEAT, "--weekdays", "1", "--every", "2"], 2, "every: --every goes with --daily"),
    # a negative offset after completion
    ([*REPEAT, "--after-completion", "-1"], 2, "after-completion: a whole number 0-3650, got -1"),
    # a time without its zone
    ([*REPEAT, "--daily", "--time", "09:00"], 2, "zone: a series with a time needs its IANA zone"),
    # not a time
    ([*REPEAT, "--daily", "--time", "9am", "--zone", "UTC"], 2,
     "time: HH:MM or HH:MM:SS, got '9am'"),
    # an unknown zone
    ([*REPEAT, "--daily", "--time", "09:00", "--zone", "Mars/Olympus"], 2,
     "zone: unknown time zone 'Mars/Olympus'"),
    # an offset is not a zone
    ([*REPEAT, "--daily", "--zone", "+02:00"], 2, "'+02:00' is not an IANA zone name"),
    # an end before the start
    ([*REPEAT, "--daily", "--until", "2020-01-01"], 2, "until: the series would end before it"),
    # an end that is not a date
    ([*REPEAT, "--daily", "--until", "2040-02-30"], 2, "until: '2040-02-30' is not a calendar"),
    # no occurrence at all
    ([*REPEAT, "--daily", "--count", "0"], 2, "count: a whole number ≥ 1, got 0"),
    ([*REPEAT, "--daily", "--count", "many"], 2, "count: a whole number, got 'many'"),
    # a stale revision
    (["task", "repeat", "{plain}", "--expect", "9", "--daily", *A], 1,
     "the task changed: expected revision 9, it is 1"),
    # no revision
    (["task", "repeat", "{plain}", "--daily", *A], 2, "--expect REV"),
    # a viewer
    (["task", "repeat", "{plain}", "--expect", "1", "--daily", "--as", "vera"], 1,
     "needs the editor role"),
    # a non-member: as for a task nobody has
    (["task", "repeat", "{plain}", "--expect", "1", "--daily", "--as", "nora"], 1,
     "task: no task "),
    # --- task skip ---
    # an unknown task
    (["task", "skip", "ZZZZZZ", "--expect", "1", *A], 1, "task: no task ZZZZZZ"),
    # a task outside any series
    (["task", "skip", "{plain}", "--expect", "1", *A], 1,
     "only the outstanding occurrence of a series can be skipped"),
    # an item of the occurrence, not its root
    (["task", "skip", "{rec_item}", "--expect", "1", *A], 1, "only the outstanding occurrence"),
    # the task of a stopped series is an ordinary task
    (["task", "skip", "{old}", "--expect", "3", *A], 1, "only the outstanding occurrence"),
    # a stale revision
    (["task", "skip", "{rec}", "--expect", "2", *A], 1, "expected revision 2, it is 3"),
    # no revision
    (["task", "skip", "{rec}", *A], 2, "--expect REV"),
    # a viewer
    (["task", "skip", "{rec}", "--expect", "3", "--as", "vera"], 1, "needs the editor role"),
    # --- task series show ---
    # an unknown task
    (["task", "series", "show", "ZZZZZZ", *A], 1, "series: no series or task ZZZZZZ"),
    # a task outside any series
    (["task", "series", "show", "{plain}", *A], 1, "series: the task belongs to no series"),
    # a non-member, by series ID: as for a series nobody has
    (["task", "series", "show", "{series}", "--as", "nora"], 1, "series: no series or task "),
    # --- task series pause / resume / stop ---
    # a stale series revision
    ([*PAUSE, "--expect", "9"], 1, "the series changed: expected revision 9, it is 1"),
    # no revision: the series', not the task's
    (PAUSE, 2, "pass the series' current revision with --expect REV (`kalends task series show"),
    # not a revision
    ([*PAUSE, "--expect", "one"], 2, "expect: a revision is a whole number"),
    # a viewer, by series ID and by task
    (["task", "series", "pause", "{series}", "--expect", "1", "--as", "vera"], 1,
     "needs the editor role"),
    (["task", "series", "stop", "{rec}", "--expect", "1", "--as", "vera"], 1,
     "needs the editor role"),
    # a non-member
    (["task", "series", "stop", "{series}", "--expect", "1", "--as", "nora"], 1,
     "series: no series or task "),
    # resuming an active series
    (["task", "series", "resume", "{series}", "--expect", "1", *A], 1,
     "series: the series is already active"),
    # resuming a stopped series
    (["task", "series", "resume", "{stopped}", "--expect", "2", *A], 1,
     "series: the series is stopped; that is final"),
    # stopping it again
    (["task", "series", "stop", "{stopped}", "--expect", "2", *A], 1, "that is final"),
    # a task outside any series
    (["task", "series", "pause", "{plain}", "--expect", "1", *A], 1,
     "series: the task belongs to no series"),
    # an unknown reference
    (["task", "series", "pause", "ZZZZZZ", "--expect", "1", *A], 1,
     "series: no series or task ZZZZZZ"),
    # --- task done ---
    # a recurring occurrence root without --subtree
    (["task", "done", "{rec}", "--expect", "3", *A], 1,
     "a recurring checklist is completed only as a whole: pass --subtree"),
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
        assert fragment in one_error_line(result.stderr)
        assert world.snapshot() == before

    def test_with_json_a_stale_series_revision_is_a_json_error(self, world: World) -> None:
        result = world.invoke([*PAUSE, "--expect", "5", "--json"])
        assert result.exit_code == 1
        assert json.loads(result.stdout)["error"] == {
            "code": "revision-conflict",
            "message": "the series changed: expected revision 5, it is 1",
            "details": {"expected": 5, "actual": 1},
        }

    def test_with_json_a_bad_rule_option_names_the_option(self, world: World) -> None:
        result = world.invoke([*REPEAT, "--daily", "--every", "0", "--json"])
        assert result.exit_code == 2
        assert json.loads(result.stdout)["error"] == {
            "code": "invalid-input",
            "message": "every: a whole number 1-3650, got 0",
            "details": {"field": "every"},
        }


# --- real processes -----------------------------------------------------------------------


def run(database: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KALENDS_DATABASE_URL"}
    env |= {"KALENDS_ACTOR": "alice", "COLUMNS": "120"}
    return subprocess.run(
        [sys.executable, "-m", "kalends", *args, "--database", str(database)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )


class TestRealProcesses:
    def test_repeat_skip_show_pause_and_done_as_a_user_runs_them(self, tmp_path: Path) -> None:
        database = tmp_path / "kalends.sqlite3"
        services = open_services(str(database))
        people(services)
        task = plant(services)
        services.store.close()

        repeat = run(database, "task", "repeat", task.ref, "--expect", "2", "--daily",
                     "--time", "09:00", "--zone", ZONE, "--json")  # fmt: skip
        assert repeat.returncode == 0, repeat.stderr
        series = json.loads(repeat.stdout)
        assert (series["next_date"], series["outstanding_ordinal"]) == ("2040-01-03", 1)

        skip = run(database, "task", "skip", task.ref, "--expect", "3")
        assert skip.returncode == 0, skip.stderr
        successor = re.search(r"next, occurrence #2: (\w{6}) \[ \] Water plants", skip.stdout)
        assert successor is not None, skip.stdout
        assert "due 2040-01-03 09:00 Europe/Paris" in skip.stdout

        show = run(database, "task", "series", "show", successor[1])
        assert show.returncode == 0, show.stderr
        assert re.search(r"^rule +every day at 09:00 Europe/Paris", show.stdout, re.MULTILINE)
        assert re.search(r"^next date +2040-01-04", show.stdout, re.MULTILINE)

        pause = run(database, "task", "series", "pause", series["id"], "--expect", "1", "--json")
        assert pause.returncode == 0, pause.stderr
        assert json.loads(pause.stdout)["status"] == "paused"

        shown = run(database, "task", "show", successor[1], "--json")
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["series"] == {
            "id": series["id"],
            "rule": {"kind": "daily", "interval_days": 1},
            "time": "09:00:00",
            "zone": ZONE,
            "status": "paused",
            "revision": 2,
            "next_date": "2040-01-04",
            "occurrence": 2,
            "outstanding_ordinal": 2,
        }

        done = run(database, "task", "done", successor[1], "--expect", "1")
        assert done.returncode == 1
        assert done.stdout == ""
        assert "pass --subtree" in one_error_line(done.stderr)
