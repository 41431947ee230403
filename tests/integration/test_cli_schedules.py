"""`kalends schedule …`: create, controls with request IDs and expected revisions, reads.

In-process (CliRunner) on SQLite and (when reachable) PostgreSQL; one journey runs a real
process. The CLI runs on the real clock, so no test depends on today's date: policies are
daily or weekly, and every assertion about a slot is about its shape.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from rich.console import Console
from sqlalchemy import insert, select, update
from typer.main import get_command
from typer.testing import CliRunner, Result

from kalends.bootstrap import Services, open_services
from kalends.cli.main import app
from kalends.cli.schedules import detail_view
from kalends.clock import FakeClock
from kalends.missions.runtime.process import ProcessRuntime
from kalends.missions.scheduler import Scheduler
from kalends.storage.mission_tables import schedule_wakes, scheduler_leases
from kalends.storage.schema import metadata
from kalends.storage.testing import StorageTarget

runner = CliRunner()
CLEAN_ENV: dict[str, str | None] = {
    "KALENDS_ACTOR": None,
    "KALENDS_DATABASE_URL": None,
    "KALENDS_RUNTIME_DIR": None,
    "COLUMNS": "200",
}
ZONE = "Europe/Berlin"
DAILY = ["--title", "Morning report", "--command", "echo 'hello world'", "--daily", "09:00",
         "--zone", ZONE]  # fmt: skip
GENERATED = re.compile(r"request ID (cli-[0-9a-f]{32}) \(generated\)")
OUTCOME_KEYS = {
    "requestId", "action", "status", "expectedRevision", "revision", "complete", "repeated",
    "schedule",
}  # fmt: skip


def config(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "title": "Nightly build",
        "profile": {"command": ["make", "nightly"], "env": {"CI": "1"}},
        "policy": {"kind": "daily", "time": "02:00", "zone": ZONE},
    }
    data.update(overrides)
    return data


CONTROLS = "schedule_controls"


def snapshot(services: Services) -> dict[str, list[tuple[str, ...]]]:
    with services.store.engine.connect() as conn:
        return {
            table.name: sorted(tuple(str(v) for v in row) for row in conn.execute(select(table)))
            for table in metadata.sorted_tables
        }


@dataclass
class World:
    """alice owns workspace "home" (bob edits, vera views); nora is in no workspace."""

    url: str
    root: Path
    services: Services
    home_id: str

    def invoke(self, *args: str, actor: str = "alice", stdin: str | None = None) -> Result:
        return runner.invoke(
            app, [*args, "--as", actor, "--database", self.url], env=CLEAN_ENV, input=stdin
        )

    def ok(self, *args: str, actor: str = "alice", stdin: str | None = None) -> Result:
        result = self.invoke(*args, actor=actor, stdin=stdin)
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return result

    def json(self, *args: str, actor: str = "alice", stdin: str | None = None) -> Any:
        return json.loads(self.ok(*args, "--json", actor=actor, stdin=stdin).stdout)

    def refused(
        self, code: int, *args: str, actor: str = "alice", kept: bool = False
    ) -> dict[str, Any]:
        """A command that must exit ``code``, write nothing and print one error line (after
        at most one note naming a generated request ID or revision read). ``kept``: a
        control the state refuses, whose refusal alone is kept, under its request ID."""
        before = snapshot(self.services)
        result = self.invoke(*args, "--json", actor=actor)
        assert result.exit_code == code, (result.stdout, result.stderr)
        after = snapshot(self.services)
        if kept:
            records = before.pop(CONTROLS), after.pop(CONTROLS)
            assert len(records[1]) == len(records[0]) + 1, "no refusal kept"
            assert set(records[0]) < set(records[1]), "a record changed"
        assert after == before, "something was written"
        lines = result.stderr.strip().splitlines()
        assert lines[-1].startswith("error: "), result.stderr
        assert len(lines) == 1 or (len(lines) == 2 and "if the reply is lost" in lines[0])
        error: dict[str, Any] = json.loads(result.stdout)["error"]
        assert set(error) == {"code", "message", "details"}
        assert lines[-1] == f"error: {error['message']}"
        return error

    def create(self, *flags: str, actor: str = "alice") -> dict[str, Any]:
        receipt: dict[str, Any] = self.json("schedule", "create", "home", *flags, actor=actor)
        return receipt

    def schedule(self, request_id: str = "create-0001", **overrides: Any) -> str:
        receipt = self.services.schedules.create(
            "alice", "home", config(**overrides), request_id=request_id
        )
        return str(receipt.mission_id)


@contextmanager
def _world(url: str, tmp_path: Path) -> Iterator[World]:
    services = open_services(url)
    for handle in ("alice", "bob", "vera", "nora"):
        services.directory.add_actor(handle, handle.title())
    (tmp_path / "home").mkdir()
    home = services.workspaces.add("alice", tmp_path / "home", "home")
    services.workspaces.set_member("alice", "home", "bob", "editor")
    services.workspaces.set_member("alice", "home", "vera", "viewer")
    for runner in ("alice", "bob"):  # they create schedules: the run privilege
        services.grants.grant(runner, "run")
    try:
        yield World(url=url, root=tmp_path, services=services, home_id=str(home.id))
    finally:
        services.store.close()


@pytest.fixture
def world(storage_target: StorageTarget, tmp_path: Path) -> Iterator[World]:
    """The world on every backend."""
    with _world(storage_target.url, tmp_path) as found:
        yield found


@pytest.fixture
def sqlite_world(tmp_path: Path) -> Iterator[World]:
    """The world on a SQLite file only, for the slower real-process test."""
    with _world(f"sqlite:///{tmp_path / 'kalends.sqlite3'}", tmp_path) as found:
        yield found


POLICY_SHORTCUTS: list[tuple[list[str], dict[str, Any]]] = [
    (["--daily", "07:30", "--zone", ZONE], {"kind": "daily", "time": "07:30", "zone": ZONE}),
    (["--every", "2h"], {"kind": "every", "hours": 2}),
    (["--every", "1d"], {"kind": "every", "hours": 24}),
    (["--after", "45m"], {"kind": "after", "minutes": 45}),
    (["--at", "2099-12-01T09:00:00", "--zone", ZONE],
     {"kind": "at", "local": "2099-12-01T09:00:00", "zone": ZONE}),
    (["--cron", "0 9 * * 1-5", "--zone", ZONE],
     {"kind": "cron", "expression": "0 9 * * 1-5", "zone": ZONE}),
    (["--immediate"], {"kind": "immediate"}),
    (["--policy", '{"kind": "weekdays", "days": [1, 5], "time": "09:00", "zone": "UTC"}'],
     {"kind": "weekdays", "days": [1, 5], "time": "09:00", "zone": "UTC"}),
]  # fmt: skip

# (create flags, the field the error names, a fragment of its message)
BAD_CREATE: list[tuple[list[str], str, str]] = [
    (["--title", "T", "--arg", "x", "--policy", '{"kind": "hourly"}'], "policy.kind",
     "unknown policy kind 'hourly'"),
    (["--title", "T", "--arg", "x", "--every", "5m"], "policy.minutes",
     "must be between 15"),
    (["--title", "x" * 61, "--arg", "x", "--immediate"], "title",
     "must be 1-60 characters, got 61"),
    ([*DAILY, "--request-id", "short"], "request-id", "a request ID is 8-64"),
    ([*DAILY, "--request-id", "has space!"], "request-id", "a request ID is 8-64"),
    (["--title", "T", "--arg", "x", "--daily", "09:00"], "zone", "--daily needs --zone"),
    (["--title", "T", "--arg", "x", "--every", "1h", "--immediate"], "policy",
     "give one policy, got --every and --immediate"),
    (["--title", "T", "--arg", "x", "--every", "soon"], "every", "a duration such as"),
    (["--title", "T", "--arg", "x", "--every", "1h", "--until", "2099-01-01T00:00:00"],
     "until", "give --zone"),
    (["--title", "T", "--arg", "x", "--every", "1h", "--zone", ZONE], "zone",
     "--zone goes with"),
    (["--title", "T", "--command", "a 'b", "--immediate"], "command", "cannot split"),
    (["--title", "T", "--command", "a", "--arg", "b", "--immediate"], "command",
     "not both"),
    (["--title", "T", "--arg", "a", "--env", "NOEQUALS", "--immediate"], "env",
     "NAME=VALUE"),
    (["--title", "T", "--arg", "a", "--immediate", "--max-passages", "-1"],
     "max-passages", "a whole number"),
    (["--title", "T", "--arg", "a", "--policy", "{oops"], "policy", "not valid JSON"),
    (["--arg", "a", "--immediate"], "title", "is required"),
    (["--title", "T", "--immediate"], "profile", "is required"),
    (["--config", "/nonexistent/config.json"], "config", "cannot read"),
    (["--title", "T", "--arg", "x", "--daily", "09:00", "--zone", "Mars/Base"],
     "policy.zone", "Mars/Base"),
    ([*DAILY, "--watch", "nope"], "watch[0]", "must be a conversation ID"),
    ([*DAILY, "--watch", "00000000-0000-4000-8000-000000000000"], "watch[0]",
     "no conversation 00000000-0000-4000-8000-000000000000 in this workspace"),
    ([*DAILY, "--watch", "none", "--watch", "00000000-0000-4000-8000-000000000000"],
     "watch", "or none alone"),
]  # fmt: skip


class TestJourney:
    def test_add_create_play_show_run_now_pause_status_rm_and_ls(self, world: World) -> None:
        (world.root / "proj").mkdir()
        ws = world.json("workspace", "add", str(world.root / "proj"), "--name", "proj")
        world.ok("workspace", "member", "set", "proj", "vera", "--role", "viewer")

        created = world.json("schedule", "create", "proj", *DAILY, "--env", "TOKEN=s3cret",
                             "--max-passages", "3")  # fmt: skip
        assert (created["status"], created["revision"], created["repeated"]) == (
            "created", 1, False,
        )  # fmt: skip
        sid = created["missionId"]
        assert created["workspaceId"] == ws["id"]
        assert created["schedule"]["state"] == "paused"
        assert created["schedule"]["profile"] == {
            "command": ["echo", "hello world"], "envNames": ["TOKEN"], "cwd": ".",
        }  # fmt: skip

        played = world.ok("schedule", "play", sid)
        assert "played 'Morning report': revision 1 → 2, running" in played.stdout
        assert re.search(r"next slot: \d{4}-\d\d-\d\d 09:00 \w{3} Europe/Berlin", played.stdout)
        assert "expected revision 1 (read now)" in played.stderr

        shown = world.ok("schedule", "show", sid, actor="vera").stdout
        assert re.search(r"state\s+running", shown)
        assert re.search(r"next slot\s+\d{4}-\d\d-\d\d 09:00 \w{3} Europe/Berlin", shown)
        assert re.search(r"counters\s+0 admitted, 0 settled, 0 successful", shown)
        assert re.search(r"quota\s+0 of 3 used, 3 left", shown)
        assert re.search(r"pending passage\s+none", shown)
        assert re.search(r"actions\s+pause, stop, run-now, configure, delete", shown)
        assert "history: no passage settled yet" in shown
        assert "TOKEN (values hidden)" in shown and "s3cret" not in shown

        ran = world.json("schedule", "run-now", sid, "--request-id", "run-0001",
                         "--expected-revision", "2")  # fmt: skip
        assert (ran["action"], ran["revision"], ran["complete"]) == ("run-now", 3, False)
        pending = ran["schedule"]["pending"]
        assert (pending["trigger"], pending["requestId"]) == ("manual", "run-0001")

        paused = world.ok("schedule", "pause", sid, "--json")
        pause_id = GENERATED.search(paused.stderr)
        assert pause_id is not None
        pause = json.loads(paused.stdout)
        assert (pause["requestId"], pause["revision"], pause["complete"]) == (
            pause_id[1], 4, True,  # nothing was dispatched: nothing to interrupt
        )  # fmt: skip

        status = world.json("schedule", "control-status", sid, "run-0001", actor="vera")
        assert status == {
            "requestId": "run-0001", "status": "applied", "code": None, "action": "run-now",
            "expectedRevision": 2, "revision": 3, "complete": False, "at": status["at"],
            "reason": None,
        }  # fmt: skip
        shown = world.ok("schedule", "show", sid).stdout
        assert re.search(r"pending passage\s+psg_\w+: manual, starting", shown)
        assert re.search(r"quota\s+1 of 3 used, 2 left", shown)
        assert re.search(r"blocked\s+paused", shown)

        removed = world.json("schedule", "rm", sid, "--request-id", "rm-000001")
        # A pending passage waits on the runtime: the deletion is not complete yet.
        assert (removed["complete"], removed["schedule"]["phase"]) == (False, "deleting")
        quick = world.json("schedule", "create", "proj", "--title", "Quick", "--arg", "true",
                           "--immediate")  # fmt: skip
        gone = world.json("schedule", "rm", quick["missionId"])
        assert (gone["complete"], gone["schedule"]["kind"]) == (True, "tombstone")

        page = world.json("schedule", "ls", "proj", actor="vera")
        assert set(page) == {"items", "nextAfter"} and page["nextAfter"] is None
        by_id = {item["id"]: item for item in page["items"]}
        assert by_id[sid]["phase"] == "deleting"
        assert by_id[quick["missionId"]] == {
            "id": quick["missionId"], "workspaceId": ws["id"], "kind": "tombstone",
            "title": "Quick", "revision": 2, "phase": "tombstone",
            "deletedAt": by_id[quick["missionId"]]["deletedAt"],
            "createdAt": quick["createdAt"],
        }  # fmt: skip
        table = world.ok("schedule", "ls", "proj").stdout
        assert re.search(rf"{quick['missionId']}\s+Quick\s+deleted", table)
        assert re.search(rf"{sid}\s+Morning report\s+deleting", table)

    def test_a_real_process_prints_the_generated_request_id_and_exit_codes(
        self, sqlite_world: World
    ) -> None:
        world = sqlite_world
        env = {k: v for k, v in os.environ.items() if not k.startswith("KALENDS_")}
        env |= {"KALENDS_DATABASE_URL": world.url, "KALENDS_ACTOR": "bob", "COLUMNS": "200"}

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "kalends", "schedule", *args],
                capture_output=True, text=True, timeout=60, check=False, env=env,
            )  # fmt: skip

        made = run("create", "home", *DAILY)
        assert made.returncode == 0, made.stderr
        request = GENERATED.search(made.stderr)
        assert request is not None
        assert f"kalends schedule receipt home {request[1]}" in made.stderr
        sid = re.search(r"id ([0-9a-f-]{36}), revision 1", made.stdout)
        assert sid is not None
        receipt = json.loads(run("receipt", "home", request[1], "--json").stdout)
        assert (receipt["missionId"], receipt["status"]) == (sid[1], "created")

        played = run("play", sid[1], "--expected-revision", "1")
        assert played.returncode == 0, played.stderr
        play_id = GENERATED.search(played.stderr)
        assert play_id is not None and "read now" not in played.stderr
        status = json.loads(run("control-status", sid[1], play_id[1], "--json").stdout)
        assert (status["status"], status["action"], status["revision"]) == ("applied", "play", 2)

        stale = run("pause", sid[1], "--expected-revision", "1", "--request-id", "pause-0001")
        assert stale.returncode == 1
        assert stale.stderr.startswith("error: schedule ") and "not 1" in stale.stderr
        bad = run("pause", sid[1], "--request-id", "no")
        assert (bad.returncode, bad.stdout) == (2, "")
        assert bad.stderr.startswith("error: request-id: a request ID is 8-64 characters")


class TestCreate:
    def test_flags_build_the_configuration(self, world: World) -> None:
        receipt = world.create(
            "--title", "Report", "--objective", "Sum up", "--notes", "Be brief",
            "--arg", "python", "--arg", "-c", "--arg", "print('a b')",
            "--env", "A=1", "--env", "B=x=y", "--cwd", "sub/dir",
            "--every", "1h30m", "--until", "2099-01-01T00:00:00", "--zone", ZONE,
            "--within", "30d", "--max-passages", "5", "--restart", "interrupt",
        )  # fmt: skip
        doc = receipt["schedule"]
        assert (doc["title"], doc["objective"], doc["notes"]) == ("Report", "Sum up", "Be brief")
        assert doc["profile"] == {
            "command": ["python", "-c", "print('a b')"], "envNames": ["A", "B"], "cwd": "sub/dir",
        }  # fmt: skip
        assert doc["policy"] == {"kind": "every", "minutes": 90}
        assert doc["end"] == {
            "until": {"local": "2099-01-01T00:00:00", "zone": ZONE},
            "within": {"days": 30}, "maxPassages": 5,
        }  # fmt: skip
        assert doc["restart"] == "interrupt"

    def test_policy_shortcuts(self, world: World) -> None:
        for flags, policy in POLICY_SHORTCUTS:
            receipt = world.create("--title", "T", "--arg", "true", *flags)
            assert receipt["schedule"]["policy"] == policy, flags

    def test_config_file_and_stdin_with_flags_overriding(self, world: World) -> None:
        path = world.root / "config.json"
        path.write_text(json.dumps(config(notes="from file")), encoding="utf-8")
        receipt = world.create("--config", str(path), "--title", "Overridden")
        doc = receipt["schedule"]
        assert (doc["title"], doc["notes"]) == ("Overridden", "from file")
        assert doc["profile"]["envNames"] == ["CI"]
        piped = world.json(
            "schedule", "create", "home", "--config", "-", "--request-id", "piped-0001",
            stdin=json.dumps(config(template=[{"title": "Check logs"}])),
        )  # fmt: skip
        assert piped["schedule"]["template"] == [{"title": "Check logs"}]
        assert piped["requestId"] == "piped-0001"

    def test_a_repeated_request_id_returns_the_first_receipt(self, world: World) -> None:
        first = world.create(*DAILY, "--request-id", "create-0042")
        before = snapshot(world.services)
        again = world.create(*DAILY, "--request-id", "create-0042")
        assert snapshot(world.services) == before
        assert (again["missionId"], again["repeated"]) == (first["missionId"], True)
        text = world.ok("schedule", "create", "home", *DAILY, "--request-id", "create-0042")
        assert "a repeated request: nothing was created again" in text.stdout
        assert text.stderr == ""  # nothing was generated, so no note
        error = world.refused(1, "schedule", "create", "home", *DAILY[:-4], "--every", "1h",
                              "--request-id", "create-0042")  # fmt: skip
        assert error["code"] == "request-reused"

    def test_the_receipt_of_a_lost_creation(self, world: World) -> None:
        result = world.ok("schedule", "create", "home", *DAILY, "--json")
        generated = GENERATED.search(result.stderr)
        assert generated is not None
        assert json.loads(result.stdout)["requestId"] == generated[1]
        receipt = world.json("schedule", "receipt", "home", generated[1], actor="vera")
        assert set(receipt) == {
            "requestId", "status", "missionId", "workspaceId", "revision", "createdAt",
            "repeated", "schedule",
        }  # fmt: skip
        assert (receipt["status"], receipt["repeated"]) == ("created", False)
        unknown = world.json("schedule", "receipt", "home", "never-sent")
        assert (unknown["status"], unknown["missionId"]) == ("unknown", None)
        assert "unknown" in world.ok("schedule", "receipt", "home", "never-sent").stdout


class TestControls:
    def test_outcome_shape_and_idempotent_repeat(self, world: World) -> None:
        sid = world.schedule()
        first = world.json("schedule", "play", sid, "--request-id", "play-0001",
                           "--expected-revision", "1")  # fmt: skip
        # (an applied first Play also says what it did of service supervision)
        assert set(first) == OUTCOME_KEYS | {"supervision"}
        assert (first["status"], first["revision"], first["repeated"]) == ("applied", 2, False)
        before = snapshot(world.services)
        for extra in (["--expected-revision", "1"], []):
            again = world.ok("schedule", "play", sid, "--request-id", "play-0001", *extra,
                             "--json")  # fmt: skip
            out = json.loads(again.stdout)
            assert (out["repeated"], out["revision"], out["expectedRevision"]) == (True, 2, 1)
            assert set(out) == OUTCOME_KEYS  # (a repeat prepares nothing)
        assert "expected revision 1 (as this request was first sent)" in again.stderr
        assert snapshot(world.services) == before
        text = world.ok("schedule", "play", sid, "--request-id", "play-0001").stdout
        assert "a repeated request: nothing acted again" in text

    def test_generated_request_ids_are_printed_and_found_by_control_status(
        self, world: World
    ) -> None:
        sid = world.schedule()
        result = world.ok("schedule", "play", sid, "--json", actor="bob")
        found = GENERATED.search(result.stderr)
        assert found is not None
        assert f"control-status {sid} {found[1]} --expected-revision 1 --action play" in (
            result.stderr
        )
        assert json.loads(result.stdout)["requestId"] == found[1]
        status = world.json("schedule", "control-status", sid, found[1])
        assert (status["status"], status["action"], status["complete"]) == ("applied", "play", True)
        text = world.ok("schedule", "control-status", sid, found[1]).stdout
        assert f"request {found[1]}: applied: play at revision 1 → 2, complete" in text

    def test_control_status_rejected_and_unknown(self, world: World) -> None:
        sid = world.schedule()
        world.json("schedule", "play", sid)
        rejected = world.json("schedule", "control-status", sid, "lost-0001",
                              "--expected-revision", "1", "--action", "pause")  # fmt: skip
        assert (rejected["status"], rejected["code"]) == ("rejected", "revision-conflict")
        refused = world.json("schedule", "control-status", sid, "lost-0002",
                             "--expected-revision", "2", "--action", "play")  # fmt: skip
        assert (refused["status"], refused["code"]) == ("rejected", "control-conflict")
        unknown = world.json("schedule", "control-status", sid, "lost-0003")
        assert unknown["status"] == "unknown"
        assert (
            "--action can make the answer exact"
            in world.ok("schedule", "control-status", sid, "lost-0003").stdout
        )
        error = world.refused(2, "schedule", "control-status", sid, "lost-0003", "--action", "x")
        assert error["details"] == {"field": "action"}

    def test_stale_expected_revision_is_a_revision_conflict(self, world: World) -> None:
        sid = world.schedule()
        world.json("schedule", "play", sid)
        error = world.refused(1, "schedule", "pause", sid, "--expected-revision", "1")
        assert error["code"] == "revision-conflict"
        assert error["details"] == {"expected": 1, "actual": 2}
        error = world.refused(1, "schedule", "edit", sid, "--notes", "n", "--expected-revision",
                              "1", "--request-id", "edit-0001")  # fmt: skip
        assert error["code"] == "revision-conflict"

    def test_a_control_the_state_forbids_is_a_control_conflict(self, world: World) -> None:
        sid = world.schedule()
        error = world.refused(1, "schedule", "pause", sid, "--request-id", "pause-0001", kept=True)
        assert error["code"] == "control-conflict"
        assert error["message"] == "pause: the schedule is already paused"
        world.json("schedule", "stop", sid)
        for action in ("play", "resume", "check"):
            assert world.refused(1, "schedule", action, sid, kept=True)["code"] == (
                "control-conflict"
            )

    def test_viewers_and_strangers_are_refused(self, world: World) -> None:
        sid = world.schedule()
        for args in (
            ["schedule", "play", sid],
            ["schedule", "edit", sid, "--notes", "n"],
            ["schedule", "rm", sid, "--expected-revision", "1"],
            ["schedule", "create", "home", *DAILY],
        ):
            error = world.refused(1, *args, actor="vera")
            assert error["code"] == "forbidden" and "editor role" in error["message"]
            # To a stranger the workspace and its schedules are not there.
            assert world.refused(1, *args, actor="nora")["code"] == "not-found"
        error = world.refused(1, "schedule", "show", sid, actor="nora")
        assert (error["code"], error["message"]) == ("not-found", f"schedule: no schedule {sid}")
        assert world.json("schedule", "show", sid, actor="vera")["id"] == sid


class TestWatch:
    def test_create_and_edit_set_the_watched_conversations(self, world: World) -> None:
        made = world.json("conversation", "new", "home", "Notes")
        created = world.json("schedule", "create", "home", *DAILY, "--watch", made["id"])
        sid = created["missionId"]
        assert created["schedule"]["watch"] == [made["id"]]
        shown = world.ok("schedule", "show", sid).stdout
        assert re.search(rf"watching\s+{made['id']}", shown)
        edited = world.json("schedule", "edit", sid, "--watch", "none")
        assert edited["schedule"]["watch"] == []


class TestBadInput:
    def test_create_exits_2_and_writes_nothing(self, world: World) -> None:
        for flags, field, fragment in BAD_CREATE:
            error = world.refused(2, "schedule", "create", "home", *flags)
            assert error["details"].get("field") == field, (flags, error)
            assert fragment in error["message"], (flags, error)

    def test_an_unknown_workspace_is_not_found_and_nothing_is_written(self, world: World) -> None:
        # Like an unknown list in `kalends task add`: a refusal (1), not bad input.
        error = world.refused(1, "schedule", "create", "nowhere", *DAILY)
        assert (error["code"], error["message"]) == (
            "not-found",
            "workspace: no workspace 'nowhere'",
        )
        assert world.refused(1, "schedule", "ls", "nowhere")["code"] == "not-found"

    def test_controls_and_reads_refuse_bad_input(self, world: World) -> None:
        sid = world.schedule()
        for args, field in (
            (["schedule", "play", sid, "--request-id", "bad id!"], "request-id"),
            (["schedule", "play", sid, "--expected-revision", "abc"], "expected-revision"),
            (["schedule", "play", sid, "--expected-revision", "0"], "expected-revision"),
            (["schedule", "play", "not-an-id"], "schedule"),
            (["schedule", "show", "not-an-id"], "schedule"),
            (["schedule", "control-status", sid, "x"], "request-id"),
            (["schedule", "ls", "home", "--limit", "9"], "limit"),
            (["schedule", "ls", "home", "--limit", "two"], "limit"),
            (["schedule", "ls", "home", "--after", "nope"], "after"),
            (["schedule", "preview", sid, "--count", "0"], "count"),
            (["schedule", "edit", sid], "edit"),
            (["schedule", "edit", sid, "--set-json", "[1]"], "set-json"),
            (["schedule", "edit", sid, "--set-json", '{"colour": 1}'], "colour"),
            (["schedule", "edit", sid, "--notes", "a", "--set-json", '{"notes": "b"}'], "notes"),
            (["schedule", "edit", sid, "--title", "y" * 61], "title"),
        ):
            error = world.refused(2, *args)
            assert error["details"].get("field") == field, (args, error)
        missing = "00000000-0000-7000-8000-000000000000"
        assert world.refused(1, "schedule", "play", missing)["code"] == "not-found"


class TestEdit:
    def test_only_changed_fields_are_sent(self, world: World) -> None:
        sid = world.schedule()
        result = world.ok("schedule", "edit", sid, "--title", "Nightly build", "--notes", "new",
                          "--set-json", '{"objective": "Ship it"}')  # fmt: skip
        assert "edited 'Nightly build': revision 1 → 2" in result.stdout
        assert "changed: notes, objective" in result.stdout
        doc = world.json("schedule", "show", sid)
        assert (doc["notes"], doc["objective"], doc["revision"]) == ("new", "Ship it", 2)
        assert doc["temporalGeneration"] == 1  # no timing field was sent

        moved = world.json("schedule", "edit", sid, "--daily", "03:00", "--zone", ZONE)
        assert moved["schedule"]["policy"] == {"kind": "daily", "time": "03:00", "zone": ZONE}
        assert moved["schedule"]["temporalGeneration"] == 2
        ended = world.json("schedule", "edit", sid, "--max-passages", "4")
        assert ended["schedule"]["end"] == {"until": None, "within": None, "maxPassages": 4}
        cleared = world.json("schedule", "edit", sid, "--max-passages", "none")
        assert cleared["schedule"]["end"]["maxPassages"] is None

    def test_nothing_to_change_writes_nothing(self, world: World) -> None:
        sid = world.schedule()
        before = snapshot(world.services)
        out = world.json("schedule", "edit", sid, "--title", "Nightly build")
        assert (out["status"], out["revision"], out["requestId"]) == ("unchanged", 1, None)
        assert snapshot(world.services) == before
        assert "nothing to change" in world.ok("schedule", "edit", sid, "--daily", "02:00",
                                               "--zone", ZONE).stdout  # fmt: skip

    def test_a_repeated_edit_reports_the_first_outcome(self, world: World) -> None:
        sid = world.schedule()
        first = world.json("schedule", "edit", sid, "--notes", "once", "--request-id", "edit-0007")
        assert (first["repeated"], first["revision"]) == (False, 2)
        before = snapshot(world.services)
        again = world.json("schedule", "edit", sid, "--notes", "once", "--request-id", "edit-0007")
        assert (again["status"], again["repeated"], again["revision"]) == ("applied", True, 2)
        assert snapshot(world.services) == before

    def test_a_profile_change_keeps_the_environment(self, world: World) -> None:
        sid = world.schedule()
        kept = world.json("schedule", "edit", sid, "--command", "make all")
        assert kept["schedule"]["profile"] == {
            "command": ["make", "all"], "envNames": ["CI"], "cwd": ".",
        }  # fmt: skip
        done = world.json("schedule", "edit", sid, "--env", "TOKEN=2")
        assert done["schedule"]["profile"]["envNames"] == ["TOKEN"]
        cleared = world.json("schedule", "edit", sid, "--clear-env")
        assert cleared["schedule"]["profile"]["envNames"] == []

    def test_only_instructions_change_while_a_passage_is_pending(self, world: World) -> None:
        sid = world.schedule()
        world.json("schedule", "run-now", sid)
        error = world.refused(1, "schedule", "edit", sid, "--every", "1h", kept=True)
        assert (
            error["code"] == "control-conflict"
            and "only the objective and notes" in (error["message"])
        )
        assert world.json("schedule", "edit", sid, "--notes", "ok")["schedule"]["notes"] == "ok"


class TestReads:
    def test_ls_pages_of_eight_follow_the_cursor(self, world: World) -> None:
        ids = [world.schedule(f"create-{i:04d}", title=f"S{i}") for i in range(10)]
        first = world.json("schedule", "ls", "home")
        assert [d["id"] for d in first["items"]] == ids[:8]
        assert first["nextAfter"] == ids[7]
        rest = world.json("schedule", "ls", "home", "--after", ids[7])
        assert ([d["id"] for d in rest["items"]], rest["nextAfter"]) == (ids[8:], None)
        everything = world.json("schedule", "ls", world.home_id, "--all", "--limit", "3")
        assert ([d["id"] for d in everything["items"]], everything["nextAfter"]) == (ids, None)
        text = world.ok("schedule", "ls", "home").stdout
        assert f"more: kalends schedule ls home --after {ids[7]}" in text
        assert re.search(rf"{ids[0]}\s+S0\s+paused\s+—\s+0/0/0\s+1", text)
        assert "runs: admitted/settled/successful" in text

    def test_ls_shows_the_next_slot_in_the_policy_zone(self, world: World) -> None:
        sid = world.schedule(policy={"kind": "daily", "time": "23:30", "zone": "Asia/Tokyo"})
        world.json("schedule", "play", sid)
        text = world.ok("schedule", "ls", "home").stdout
        # (the state that holds: no scheduler runs here)
        assert re.search(
            r"interrupted \(no scheduler\)\s+\d{4}-\d\d-\d\d 23:30 \w{3} Asia/Tokyo", text
        )
        doc = world.json("schedule", "show", sid)
        assert doc["nextDueAt"].endswith(":30:00Z")  # 14:30 UTC

    def test_show_json_is_the_detail_projection(self, world: World) -> None:
        sid = world.schedule()
        doc = world.json("schedule", "show", sid, actor="vera")
        for key in ("state", "nextDueAt", "counters", "quota", "pending", "results",
                    "availableActions", "blockReason", "technical", "observation"):  # fmt: skip
            assert key in doc
        assert "1" not in doc["profile"].get("env", {})  # env values never shown
        assert doc["profile"]["envNames"] == ["CI"]

    def test_show_says_the_policy_in_words_and_keeps_its_json(self, world: World) -> None:
        sid = world.schedule(policy={"kind": "cron", "expression": "0 9 1,15 * 1", "zone": ZONE})
        sentence = "At 09:00 on day-of-month 1 and 15, or on Monday (Europe/Berlin)"
        assert world.json("schedule", "show", sid)["sentence"] == sentence
        text = world.ok("schedule", "show", sid).stdout
        assert re.search(rf"^policy\s+{re.escape(sentence)}\s*$", text, re.MULTILINE)
        assert '"expression": "0 9 1,15 * 1"' in text

    def test_preview_marks_dst_affected_slots(self, world: World) -> None:
        # Sundays at 02:30 in Berlin: within 60 weeks there is a spring gap and an autumn fold.
        sid = world.schedule(policy={"kind": "cron", "expression": "30 2 * * 0", "zone": ZONE})
        slots = world.json("schedule", "preview", sid, "--count", "60")
        assert len(slots) == 60
        assert set(slots[0]) == {"at", "local", "zone", "dst"}
        marks = {s["dst"] for s in slots}
        assert {"shifted", "earlier-of-two"} <= marks
        shifted = next(s for s in slots if s["dst"] == "shifted")
        assert shifted["local"].endswith("T03:00:00")  # 02:30 does not exist that day
        text = world.ok("schedule", "preview", sid, "-n", "60").stdout
        assert "(not played yet: as if Play happened now)" in text
        assert text.splitlines()[0] == "At 02:30 on Sunday (Europe/Berlin)"
        assert re.search(r"03:00:00 Sun\s+Europe/Berlin\s+\S+Z\s+\* shifted", text)
        assert "* shifted: the wall time does not exist that day" in text
        assert "* earlier-of-two: the wall time occurs twice that day" in text
        assert len(world.json("schedule", "preview", sid)) == 5

    def test_preview_respects_the_quota(self, world: World) -> None:
        sid = world.schedule(end={"maxPassages": 2})
        assert len(world.json("schedule", "preview", sid, "-n", "10")) == 2
        once = world.schedule("create-0002", policy={"kind": "after", "hours": 1})
        assert len(world.json("schedule", "preview", once, "-n", "10")) == 1

    def test_show_renders_a_pending_passage_and_the_history(self, world: World) -> None:
        sid = world.schedule()
        world.json("schedule", "play", sid)
        doc = world.json("schedule", "show", sid)
        slot = "2030-07-01T07:00:00Z"
        doc["pending"] = {"passageId": "psg_next", "trigger": "scheduled", "slot": slot,
                          "status": "running", "reservedAt": slot}  # fmt: skip
        doc["results"] = [
            {"passageId": "psg_1", "trigger": "scheduled", "slot": "2030-06-30T07:00:00Z",
             "outcome": "failed", "reason": "exit 2", "summary": "tests broke",
             "settledAt": "2030-06-30T07:05:00Z"},
            {"passageId": "psg_0", "trigger": "manual", "slot": None, "outcome": "completed",
             "reason": None, "summary": "all good", "settledAt": "2030-06-29T10:00:00Z"},
        ]  # fmt: skip
        out = Console(width=200, record=True, file=io.StringIO())
        out.print(detail_view(doc))
        text = out.export_text()
        assert re.search(
            r"pending passage\s+psg_next: scheduled, running, slot 2030-07-01 09:00 Mon "
            r"Europe/Berlin", text
        )  # fmt: skip
        assert re.search(
            r"2030-06-30 09:05 Sun Europe/Berlin\s+scheduled\s+2030-06-30 09:00 Sun "
            r"Europe/Berlin\s+failed \(exit 2\)\s+tests broke", text
        )  # fmt: skip
        assert re.search(r"manual\s+—\s+completed\s+all good", text)

    def test_a_deleted_schedule_shows_as_a_tombstone_and_refuses_edits(self, world: World) -> None:
        sid = world.schedule()
        world.json("schedule", "rm", sid)
        text = world.ok("schedule", "show", sid).stdout
        assert re.search(r"state\s+deleted \(tombstone\)", text)
        error = world.refused(1, "schedule", "edit", sid, "--notes", "late")
        assert error["code"] == "control-conflict"
        assert world.refused(1, "schedule", "play", sid)["code"] == "control-conflict"
        assert world.json("schedule", "preview", sid) == []


# Prints, then waits (at most a minute) for a file named "go" in its directory.
WAITS = (
    "import os, time\n"
    "print('hello from the passage', flush=True)\n"
    "deadline = time.time() + 60\n"
    "while not os.path.exists('go') and time.time() < deadline:\n"
    "    time.sleep(0.02)\n"
    "print('bye', flush=True)\n"
)


def _set_wake(world: World, sid: str, **values: Any) -> None:
    with world.services.store.engine.begin() as conn:
        conn.execute(
            update(schedule_wakes).where(schedule_wakes.c.schedule_id == UUID(sid)).values(values)
        )


class TestRuntimeView:
    def test_running_without_a_scheduler_shows_interrupted_and_the_last_error(
        self, world: World
    ) -> None:
        sid = world.schedule()
        world.json("schedule", "play", sid)
        text = world.ok("schedule", "show", sid).stdout
        assert re.search(
            r"state\s+running \(desired\) — Interrupted: no scheduler holds it; start "
            r"`kalends worker`",
            text,
        )
        assert "last error" not in text
        doc = world.json("schedule", "show", sid)
        assert (doc["state"], doc["displayState"], doc["displayReason"]) == (
            "running",
            "interrupted",
            "no-scheduler",
        )

        at = datetime(2030, 7, 1, 7, 0, tzinfo=UTC)
        _set_wake(
            world,
            sid,
            last_error_code="runtime-unavailable",
            last_error_message="cannot launch session ses_x: disk full",
            last_error_at=at,
        )
        text = world.ok("schedule", "show", sid).stdout
        assert re.search(
            r"last error\s+runtime-unavailable at 2030-07-01 09:00 Mon Europe/Berlin: "
            r"cannot launch session ses_x: disk full",
            text,
        )
        assert world.json("schedule", "show", sid)["lastError"] == {
            "code": "runtime-unavailable",
            "at": "2030-07-01T07:00:00Z",
            "message": "cannot launch session ses_x: disk full",
        }

        # A live scheduler holds it: the desired state is what holds.
        lease = datetime.now(UTC) + timedelta(minutes=5)
        _set_wake(world, sid, owner="host:1/scheduler", lease_token="t")
        with world.services.store.engine.begin() as conn:
            conn.execute(
                insert(scheduler_leases).values(
                    token="t", owner="host:1/scheduler", expires_at=lease
                )
            )
        text = world.ok("schedule", "show", sid).stdout
        assert re.search(r"state\s+running *\n", text) and "Interrupted" not in text
        assert world.json("schedule", "show", sid)["technical"]["scheduler"]["live"] is True

    def test_show_renders_reasons_and_an_output_tail(self, world: World) -> None:
        sid = world.schedule()
        doc = world.json("schedule", "show", sid)
        doc.update(state="interrupted", desiredState="running", displayState="interrupted",
                   displayReason="restart", interruptionReason="restart")  # fmt: skip
        doc["pending"] = {"passageId": "psg_p", "sessionId": "ses_p", "trigger": "manual",
                          "slot": None, "status": "uncertain", "reason": "not-observed",
                          "reservedAt": "2030-07-01T07:00:00Z",
                          "logTail": "".join(f"line {i}\n" for i in range(30))}  # fmt: skip
        out = Console(width=200, record=True, file=io.StringIO())
        out.print(detail_view(doc))
        text = out.export_text()
        assert re.search(
            rf"state\s+running \(desired\) — Interrupted: its scheduler restarted; "
            rf"`kalends schedule resume {sid}` goes on",
            text,
        )
        assert re.search(
            r"pending passage\s+psg_p: manual, uncertain \(not-observed: the runtime cannot "
            r"tell whether it started; retrying\), slot none \(run now\)",
            text,
        )
        assert re.search(r"session\s+ses_p \(`kalends passage log psg_p`\)", text)
        assert "output of psg_p (last 10 lines; `kalends passage log psg_p` prints it all):" in (
            text
        )
        assert "  line 20\n" in text and "  line 29\n" in text and "line 19" not in text

    def test_a_pending_passage_shows_its_output_and_then_its_result(
        self, sqlite_world: World
    ) -> None:
        world = sqlite_world
        runtime_dir = world.root / "runtime"
        sid = world.schedule(profile={"command": [sys.executable, "-c", WAITS]})
        world.json("schedule", "play", sid)
        world.json("schedule", "run-now", sid)
        clock = FakeClock(datetime.now(UTC))
        services = open_services(world.url, clock=clock)
        runtime = ProcessRuntime(runtime_dir, grace=1.0)
        go = world.root / "home" / "go"
        session = None
        try:
            scheduler = Scheduler(services.store, runtime, owner="test/scheduler")
            assert scheduler.run_once().admitted == 1
            scheduler.release()  # no scheduler holds it now
            pending = world.json("schedule", "show", sid)["pending"]
            session, passage = pending["sessionId"], pending["passageId"]
            assert (pending["status"], pending["admitted"]) == ("running", True)
            deadline = time.monotonic() + 30
            while "hello from the passage" not in runtime.observe(session).log_tail:
                assert time.monotonic() < deadline, "the passage never printed"
                time.sleep(0.02)

            shown = world.ok("schedule", "show", sid, "--runtime-dir", str(runtime_dir)).stdout
            assert re.search(r"state\s+running \(desired\) — Interrupted: no scheduler", shown)
            assert re.search(
                rf"pending passage\s+{passage}: manual, running, slot none \(run now\)", shown
            )
            assert re.search(rf"session\s+{session} \(`kalends passage log {passage}`\)", shown)
            assert f"output of {passage} (last 10 lines" in shown
            assert "  hello from the passage\n" in shown
            doc = world.json("schedule", "show", sid, "--runtime-dir", str(runtime_dir))
            assert doc["pending"]["logTail"] == "hello from the passage\n"
            # Another machine's runtime (or none): the output is left out.
            elsewhere = world.json("schedule", "show", sid, "--runtime-dir", str(world.root / "x"))
            assert "logTail" not in elsewhere["pending"]
            assert not (world.root / "x").exists()
            assert "output of" not in world.ok("schedule", "show", sid).stdout

            runtime.report(runtime.token(passage, session), "completed", "said hello")
            go.touch()
            deadline = time.monotonic() + 30
            while not runtime.observe(session).settled:
                assert time.monotonic() < deadline, "the passage never settled"
                time.sleep(0.05)
            clock.advance(timedelta(seconds=40))
            assert Scheduler(services.store, runtime, owner="test/2").run_once().settled == 1

            shown = world.ok("schedule", "show", sid, "--runtime-dir", str(runtime_dir)).stdout
            assert re.search(r"pending passage\s+none", shown) and "output of" not in shown
            assert re.search(rf"manual\s+—\s+completed\s+said hello\s+{passage}", shown)
            result = world.json("schedule", "show", sid)["results"][0]
            assert (result["outcome"], result["summary"], result["trigger"]) == (
                "completed",
                "said hello",
                "manual",
            )
        finally:
            go.touch()
            if session is not None:
                deadline = time.monotonic() + 30
                while not runtime.observe(session).settled and time.monotonic() < deadline:
                    time.sleep(0.05)
            services.store.close()


def _leaves(group: str) -> dict[str, Any]:
    root: Any = get_command(app)
    found: dict[str, Any] = {}
    pending = [(group, root.commands[group])]
    while pending:
        name, command = pending.pop()
        children = getattr(command, "commands", None)
        if children:
            pending.extend((f"{name} {n}", c) for n, c in children.items())
        else:
            found[name] = command
    return found


class TestHelp:
    def test_every_schedule_command_documents_itself_and_takes_json_database_and_as(
        self,
    ) -> None:
        leaves = _leaves("schedule")
        assert sorted(n.split()[1] for n in leaves) == sorted(
            ["create", "ls", "show", "play", "pause", "stop", "resume", "run-now", "check",
             "edit", "rm", "preview", "control-status", "receipt", "ledger", "why"]
        )  # fmt: skip
        for name, command in leaves.items():
            options = {o for p in command.params for o in getattr(p, "opts", [])}
            assert {"--json", "--database", "--as"} <= options, name
            assert command.help, name
            if name.split()[1] in {"play", "pause", "stop", "resume", "run-now", "check",
                                   "edit", "rm"}:  # fmt: skip
                assert {"--request-id", "--expected-revision"} <= options, name
        result = runner.invoke(app, ["schedule", "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0
        assert "Exit codes: 0 done; 1 refused" in result.stdout
