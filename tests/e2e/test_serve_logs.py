"""What a real `kalends serve` logs on stderr: a line per passage admitted, started and
settled and per reminder batch, beside the request lines; as text for people (the
default), one JSON object per line with ``--log-format json``, and only warnings and
errors with ``--quiet``."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import update
from typer.testing import CliRunner

from kalends.auth.grants import Privilege
from kalends.bootstrap import Services, open_services
from kalends.cli.main import app
from kalends.reminders.outbox import MAX_ATTEMPTS, Outbox
from kalends.storage.task_tables import reminder_intents
from kalends.tasks import parse_schedule

from .conftest import HOST, LOOP_WITHIN, OWNER, Server, finish, poll, start_server

TITLE = "Nightly backup"


@dataclass
class World:
    """A server on a fresh SQLite file, and the services of the test on that file."""

    server: Server
    services: Services

    def schedule(self, workspace: Path) -> UUID:
        """A played schedule that admits one passage at once: ``sh -c 'sleep 0.3; exit 3'``."""
        workspace.mkdir()
        services = self.services
        services.grants.grant(services.directory.actor(OWNER).id, Privilege.RUN)
        home = services.workspaces.add(OWNER, workspace, "home")
        config = {
            "title": TITLE,
            "objective": "Back everything up.",
            "profile": {"command": ["/bin/sh", "-c", "sleep 0.3; exit 3"], "cwd": "."},
            "policy": {"kind": "immediate"},
        }
        made = services.schedules.create(OWNER, home.id, config, request_id="create-0001")
        assert made.mission_id is not None
        revision = services.schedules.detail(OWNER, made.mission_id)["revision"]
        services.schedules.control(
            OWNER, made.mission_id, "play", request_id="play-0001", expected_revision=revision
        )
        return made.mission_id

    def dying_reminder(self) -> None:
        """A reminder due now at its last attempt, whose send is refused: it dies."""
        with socket.socket() as probe:
            probe.bind((HOST, 0))
            port = probe.getsockname()[1]
        services = self.services
        services.destinations.set(OWNER, OWNER, "push", [f"json://{HOST}:{port}/hooks"])
        home = services.directory.create_list(OWNER, "Home")
        task = services.tasks.create(OWNER, home.id, "Renew the passport")
        at = (datetime.now(UTC) - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%S")
        owner = services.directory.actor(OWNER).id
        schedule = parse_schedule(
            {"reminders": [{"channel": "push", "local": at, "zone": "UTC"}]},
            lambda value, field: owner,
        )
        services.tasks.set_schedule(OWNER, task.id, task.revision, schedule)
        with services.store.transaction() as conn:
            conn.execute(update(reminder_intents).values(attempts=MAX_ATTEMPTS - 1))

    def settled(self, schedule: UUID) -> dict[str, Any] | None:
        detail = self.services.schedules.detail(OWNER, schedule)
        latest: dict[str, Any] | None = detail["latestResult"]
        return latest if detail["pending"] is None else None

    def dead(self) -> bool:
        return [i.status for i in Outbox(self.services.store).list(OWNER)] == ["dead"]


@pytest.fixture
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    """``request.param``: the options of the server's log."""
    url = f"sqlite:///{tmp_path / 'kalends.sqlite3'}"
    server = start_server(url, tmp_path, *request.param)
    try:
        services = open_services(url)
        try:
            yield World(server, services)
        finally:
            services.store.close()
    finally:
        finish(server)


def run_both_loops(world: World, tmp_path: Path) -> tuple[dict[str, Any], str]:
    """A passage that settles and a reminder that dies, a request; then the server stops.
    Returns the passage's result and the server's stderr."""
    schedule = world.schedule(tmp_path / "workspace")
    world.dying_reminder()
    with world.server.client() as client:
        assert client.get("/healthz").status_code == 200
    result = poll(lambda: world.settled(schedule), LOOP_WITHIN, "the passage to settle")
    poll(world.dead, LOOP_WITHIN, "the reminder to die")
    code, _ = world.server.stop()
    assert code == 0, world.server.stderr()
    return result, world.server.stderr()


@pytest.mark.parametrize("world", [("--log-format", "json")], indirect=True)
def test_json_logs_each_passage_step_and_the_batch_that_killed_a_reminder(
    world: World, tmp_path: Path
) -> None:
    result, _ = run_both_loops(world, tmp_path)

    entries = world.server.logs()  # fails on a line that is not a JSON object
    passages = [e for e in entries if str(e.get("event", "")).startswith("passage-")]
    assert [e["event"] for e in passages] == [
        "passage-admitted",
        "passage-started",
        "passage-settled",
    ]
    assert {(e["title"], e["slot"], e["passage_id"]) for e in passages} == {
        (TITLE, result["slot"], result["passageId"])
    }
    settled = passages[-1]
    assert (settled["outcome"], settled["reason"]) == ("failed", "exit status 3")
    assert 0.3 <= settled["duration_s"] < LOOP_WITHIN
    assert settled["message"].startswith(f'passage settled: "{TITLE}" slot {result["slot"]}')
    [batch] = [e for e in entries if e.get("event") == "reminder-batch"]
    assert (batch["claimed"], batch["retried"], batch["dead"]) == (1, 0, 1)
    assert any(e.get("path") == "/healthz" for e in entries)


@pytest.mark.parametrize("world", [("--log-format", "text")], indirect=True)
def test_text_says_each_passage_step_and_batch_in_a_line_of_words(
    world: World, tmp_path: Path
) -> None:
    result, stderr = run_both_loops(world, tmp_path)

    said = [line.split(" ", 1)[1] for line in stderr.splitlines()]
    where = f'"{TITLE}" slot {result["slot"]}'
    passages = [line for line in said if line.startswith("passage ")]
    assert passages[:2] == [f"passage admitted: {where}", f"passage started: {where}"]
    assert len(passages) == 3, passages
    assert passages[2].startswith(f"passage settled: {where}: failed (exit status 3) after ")
    assert "reminders claimed 1: delivered 0, retried 0, dead 1, closed 0, released 0" in said
    assert any(line.startswith("request method=GET path=/healthz status=200 ms=") for line in said)
    with pytest.raises(json.JSONDecodeError):
        json.loads(stderr.splitlines()[0])


@pytest.mark.parametrize("world", [("--quiet",)], indirect=True)
def test_quiet_leaves_only_warnings_and_errors(world: World, tmp_path: Path) -> None:
    result, stderr = run_both_loops(world, tmp_path)

    assert result["outcome"] == "failed"  # the loops ran all the same
    assert world.server.lines[-1].startswith("kalends serving on ")  # stdout is for people
    # Each line is JSON here (the launch asks for it): a warning or worse.
    assert [e for e in world.server.logs() if e["level"] not in {"warning", "error"}] == []
    assert "passage" not in stderr and "request" not in stderr


def test_help_names_the_log_options() -> None:
    result = CliRunner().invoke(app, ["serve", "--help"], env={"COLUMNS": "200"})

    assert result.exit_code == 0
    assert "--quiet" in result.stdout and "--log-format" in result.stdout
