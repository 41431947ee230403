"""The mission journeys against a real `kalends serve`, as a user goes through them.

The owner registers a workspace (a temporary directory) and creates schedules, paused.
Played with an ``at`` policy a few seconds ahead, a schedule's passage is started by the
scheduler inside the server: a real command, a Python script of the workspace that
reads ``$KALENDS_INPUT_FILE`` and runs the environment's own ``kalends report``, which
sends its report to the server over HTTP. The passage is archived in the history, and
its log is read over HTTP.

Run now on its own route: a repeated request ID makes one passage, and another Run now
while that passage is pending is refused. A Pause whose reply the client never reads is
recovered by the status read of its request ID; repeating it acts no second time. A
stopped schedule admits nothing later.
"""

from __future__ import annotations

import json
import socket
import sys
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import (
    CSRF_HEADER,
    HOST,
    LOOP_WITHIN,
    Server,
    finish,
    kalends_executable,
    owner_session,
    poll,
    requests_logged,
    start_server,
)

# How far ahead the one-shot falls: room to create and play the schedules first.
AHEAD = timedelta(seconds=4)
GATE = "gate.open"

# The passage's command: what it was given, a word in its conversation through `kalends
# say`, then its report through `kalends report`.
# With "gate" it waits (at most a minute) for the file gate.open before it reports.
PASSAGE_SCRIPT = textwrap.dedent(
    """\
    import json, os, subprocess, sys, time
    from pathlib import Path

    kalends, mode = sys.argv[1], sys.argv[2]
    doc = json.loads(Path(os.environ["KALENDS_INPUT_FILE"]).read_text())
    print(f"passage {doc['passageId']} of {doc['scheduleId']}: {doc['objective']}", flush=True)
    if mode == "gate":
        end = time.monotonic() + 60
        while not Path("gate.open").exists():
            if time.monotonic() > end:
                sys.exit(3)
            time.sleep(0.05)
    subprocess.run([kalends, "say", "counting: " + doc["objective"]], check=True)
    subprocess.run(
        [kalends, "report", "completed", "--summary", "done: " + doc["objective"]], check=True
    )
    print("reported", flush=True)
    """
)


@dataclass
class World:
    server: Server
    client: httpx.Client
    workspace: Path
    workspace_id: str

    @property
    def scheduled(self) -> str:
        return f"/api/workspaces/{self.workspace_id}/missions/scheduled"

    def schedule(self, mission: str) -> str:
        return f"/api/workspaces/{self.workspace_id}/missions/{mission}/schedule"

    def passage_log(self, mission: str, passage: str) -> str:
        return f"/api/workspaces/{self.workspace_id}/missions/{mission}/passages/{passage}/log"

    def create(self, title: str, policy: dict[str, Any], mode: str = "report") -> str:
        """A new schedule (paused) running the passage script; its mission ID."""
        body = {
            "requestID": f"create-{uuid.uuid4().hex}",
            "config": {
                "title": title,
                "objective": f"{title.lower()} objective",
                "profile": {
                    "command": [sys.executable, "passage.py", kalends_executable(), mode],
                    "cwd": ".",
                },
                "policy": policy,
            },
        }
        receipt = ok(self.client.post(self.scheduled, json=body), 201)
        assert (receipt["status"], receipt["repeated"]) == ("created", False)
        return str(receipt["missionId"])

    def detail(self, mission: str) -> dict[str, Any]:
        found: dict[str, Any] = ok(self.client.get(self.schedule(mission)))
        return found

    def control(self, mission: str, action: str, request_id: str | None = None) -> httpx.Response:
        """``action`` at the current revision, with a fresh request ID unless given."""
        return self.client.post(
            self.schedule(mission),
            json={
                "action": action,
                "requestID": request_id or f"{action}-{uuid.uuid4().hex}",
                "expectedRevision": self.detail(mission)["revision"],
            },
        )

    def run_now(self, mission: str, request_id: str, revision: int) -> httpx.Response:
        return self.client.post(
            self.schedule(mission) + "/run-now",
            json={"requestID": request_id, "expectedRevision": revision},
        )

    def results(self, mission: str) -> list[dict[str, Any]]:
        history = ok(self.client.get(self.schedule(mission) + "/history"))
        assert history["missionId"] == mission
        found: list[dict[str, Any]] = history["results"]
        return found

    def passages_of(self, mission: str) -> list[str]:
        """The passage IDs the server's runtime directory holds for ``mission``."""
        root = self.server.directory / "runtime" / "passages"
        found = []
        for start in root.glob("*/start.json"):
            doc = json.loads(start.read_text())
            if doc["scheduleId"] == mission:
                found.append(doc["passageId"])
        return sorted(found)


def ok(response: httpx.Response, status: int = 200) -> Any:
    """The JSON of ``response``, which must have ``status``."""
    assert response.status_code == status, (response.status_code, response.text)
    return response.json()


def refused(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert (response.status_code, response.json()["code"]) == (status, code), response.text
    found: dict[str, Any] = response.json()
    return found


def soon() -> datetime:
    """Real now plus :data:`AHEAD`, on a whole second, in UTC."""
    return (datetime.now(UTC) + AHEAD).replace(microsecond=0)


def iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """A server on a fresh SQLite file (both loops), its owner logged in, and a workspace
    holding the passage script, registered by the owner."""
    directory = tmp_path_factory.mktemp("journey-missions")
    workspace = directory / "workspace"
    workspace.mkdir()
    (workspace / "passage.py").write_text(PASSAGE_SCRIPT)
    server = start_server(f"sqlite:///{directory / 'kalends.sqlite3'}", directory)
    try:
        with owner_session(server) as client:
            added = ok(client.post("/api/workspaces", json={"path": str(workspace)}), 201)
            assert (added["path"], added["role"]) == (str(workspace.resolve()), "owner")
            yield World(server, client, workspace, added["id"])
    finally:
        finish(server)


def test_a_played_schedule_runs_a_real_command_that_reports_over_http(world: World) -> None:
    at = soon()
    policy = {"kind": "at", "local": at.strftime("%Y-%m-%dT%H:%M:%S"), "zone": "UTC"}
    mission = world.create("Count files", policy)
    stopped = world.create("Never runs", policy)
    created = world.detail(mission)
    assert (created["state"], created["nextDueAt"], created["pending"]) == ("paused", None, None)

    played = ok(world.control(mission, "play"))
    assert (played["action"], played["status"], played["complete"]) == ("play", "applied", True)
    assert played["schedule"]["nextDueAt"] == iso(at)
    # Another schedule due at the same time, played and stopped before it: never admitted.
    ok(world.control(stopped, "play"))
    ok(world.control(stopped, "stop"))
    before = len(requests_logged(world.server, "POST", "/api/passages/report"))

    # The scheduler inside the server starts the command at its slot; it reports and exits.
    [result] = poll(lambda: world.results(mission), LOOP_WITHIN, "the passage to be archived")
    assert (result["outcome"], result["summary"]) == ("completed", "done: count files objective")
    assert (result["trigger"], result["slot"]) == ("scheduled", iso(at))
    detail = world.detail(mission)
    assert detail["counters"] == {"admitted": 1, "settled": 1, "successful": 1}
    assert (detail["pending"], detail["nextDueAt"]) == (None, None)
    assert detail["latestResult"] == result
    # Its report came over HTTP, to this server, with the passage's own token.
    reports = poll(
        lambda: requests_logged(world.server, "POST", "/api/passages/report")[before:],
        5.0,
        "the report's access log line",
    )
    assert [e["status"] for e in reports] == [200]

    # The passage's log, read over HTTP: the input it read and the report it sent.
    passage = result["passageId"]
    log = ok(world.client.get(world.passage_log(mission, passage)))
    assert (log["passageId"], log["scheduleId"]) == (passage, mission)
    assert (log["status"], log["exitStatus"], log["error"]) == ("exited", 0, None)
    assert datetime.fromisoformat(log["startedAt"]) >= at  # not before its slot
    assert log["report"]["outcome"] == "completed"
    assert log["report"]["summary"] == "done: count files objective"
    assert f"passage {passage} of {mission}: count files objective" in log["log"]
    assert "Said (message #2)." in log["log"]
    assert "Recorded report: completed." in log["log"]
    assert log["log"].rstrip().endswith("reported")
    assert world.passages_of(mission) == [passage]

    # The stopped schedule's slot has passed too: nothing was admitted for it.
    never = world.detail(stopped)
    assert (never["state"], never["pending"], never["results"]) == ("stopped", None, [])
    assert never["counters"]["admitted"] == 0
    assert world.passages_of(stopped) == []


def test_run_now_acts_once_per_request_id_and_never_overlaps(world: World) -> None:
    mission = world.create("Hourly sweep", {"kind": "every", "minutes": 60}, mode="gate")
    playing = ok(world.control(mission, "play"))["schedule"]
    assert (playing["state"], playing["pending"]) == ("running", None)

    request = f"run-now-{uuid.uuid4().hex}"
    first = ok(world.run_now(mission, request, playing["revision"]))
    assert (first["action"], first["status"], first["repeated"]) == ("run-now", "applied", False)
    passage = first["schedule"]["pending"]["passageId"]
    assert first["schedule"]["pending"]["trigger"] == "manual"
    # The reply was lost, say: the same request again acts no second time.
    again = ok(world.run_now(mission, request, playing["revision"]))
    assert (again["repeated"], again["revision"]) == (True, first["revision"])
    assert again["schedule"]["pending"]["passageId"] == passage

    # The passage runs (held at its gate): another Run now is refused, nothing written.
    pending = poll(
        lambda: (d := world.detail(mission))["pending"]["status"] == "running" and d,
        LOOP_WITHIN,
        "the passage to run",
    )
    other = world.run_now(mission, f"run-now-{uuid.uuid4().hex}", pending["revision"])
    problem = refused(other, 409, "recurrence-control-conflict")
    assert passage in problem["message"]
    assert world.detail(mission)["revision"] == pending["revision"]

    (world.workspace / GATE).touch()
    [result] = poll(lambda: world.results(mission), LOOP_WITHIN, "the passage to be archived")
    assert (result["passageId"], result["trigger"], result["outcome"]) == (
        passage,
        "manual",
        "completed",
    )
    assert result["summary"] == "done: hourly sweep objective"
    assert world.passages_of(mission) == [passage]
    assert world.detail(mission)["counters"]["admitted"] == 1


def send_and_drop(world: World, path: str, body: dict[str, Any]) -> socket.socket:
    """Sends ``POST path`` with the owner's session on a connection of its own and reads
    nothing back: the caller closes it, the reply unread, as a client whose reply is lost."""
    data = json.dumps(body).encode()
    cookies = "; ".join(f"{name}={value}" for name, value in world.client.cookies.items())
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {HOST}:{world.server.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        f"Cookie: {cookies}\r\n{CSRF_HEADER}: {world.client.headers[CSRF_HEADER]}\r\n\r\n"
    )
    connection = socket.create_connection((HOST, world.server.port), timeout=10)
    connection.sendall(head.encode() + data)
    return connection


def test_a_lost_reply_is_recovered_by_the_status_read_and_a_repeat_acts_once(
    world: World,
) -> None:
    mission = world.create("Weekly digest", {"kind": "every", "minutes": 60})
    running = ok(world.control(mission, "play"))["schedule"]
    status_path = world.schedule(mission) + "/requests/{}"
    request = f"pause-{uuid.uuid4().hex}"
    pause = {"action": "pause", "requestID": request, "expectedRevision": running["revision"]}
    never_sent = ok(world.client.get(status_path.format(f"pause-{uuid.uuid4().hex}")))
    assert never_sent["status"] == "unknown"

    connection = send_and_drop(world, world.schedule(mission), pause)
    try:
        # The client does not know what happened: it reads the request's status.
        status = poll(
            lambda: (
                (s := ok(world.client.get(status_path.format(request))))["status"] != "unknown"
                and s
            ),
            LOOP_WITHIN,
            "the dropped Pause to be known",
        )
    finally:
        connection.close()  # the reply is never read
    assert (status["requestId"], status["status"], status["action"]) == (
        request,
        "applied",
        "pause",
    )
    assert status["expectedRevision"] == running["revision"]
    paused = world.detail(mission)
    assert (paused["state"], paused["revision"]) == ("paused", status["revision"])

    # Repeating the same request answers the same outcome and acts no second time.
    repeated = ok(world.client.post(world.schedule(mission), json=pause))
    assert (repeated["status"], repeated["repeated"]) == ("applied", True)
    assert repeated["revision"] == status["revision"]
    after = world.detail(mission)
    assert (after["state"], after["revision"]) == ("paused", paused["revision"])
    assert ok(world.client.get(status_path.format(request))) == status

    # Stop is final: nothing is admitted afterwards, by Play or by Run now.
    stopped = ok(world.control(mission, "stop"))["schedule"]
    assert stopped["state"] == "stopped"
    refused(world.control(mission, "play"), 409, "recurrence-control-conflict")
    late = world.run_now(mission, f"run-now-{uuid.uuid4().hex}", stopped["revision"])
    refused(late, 409, "recurrence-control-conflict")
    final = world.detail(mission)
    assert (final["revision"], final["pending"], final["counters"]["admitted"]) == (
        stopped["revision"],
        None,
        0,
    )
    assert world.passages_of(mission) == []
