"""Watched conversations end to end: a real ``kalends serve`` (its scheduler and process
runtime) runs a real script for each passage of a schedule watching a thread. The script
reads the messages it was handed from its input file, says how many in its own
conversation with ``kalends say``, and reports ``completed`` — or ``failed`` when the
file ``fail.next`` is in its workspace (and removes it).

Over several passages: the first is handed messages 1-32 (a batch), a failed passage
leaves the cursor so the next is handed the same messages again, a completed one moves
it on, a message still being written ends a batch until it is finished, and each
passage's conversation holds what it was handed, what it said and how it ended.
"""

from __future__ import annotations

import sys
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import (
    LOOP_WITHIN,
    Server,
    finish,
    kalends_executable,
    owner_session,
    poll,
    start_server,
)

WATCHER = textwrap.dedent(
    """\
    import json, os, subprocess, sys
    from pathlib import Path

    kalends = sys.argv[1]
    doc = json.loads(Path(os.environ["KALENDS_INPUT_FILE"]).read_text())
    [source] = doc["watched"]
    numbers = [int(m["text"].split()[-1]) for m in source["messages"]]
    said = f"handed {numbers[0]}-{numbers[-1]}" if numbers else "handed nothing"
    said += f" ({len(numbers)}, {source['stop']})"
    subprocess.run([kalends, "say", said], check=True)
    outcome = "completed"
    if Path("fail.next").exists():
        Path("fail.next").unlink()
        outcome = "failed"
    subprocess.run([kalends, "report", outcome, "--summary", said], check=True)
    """
)


@dataclass
class World:
    server: Server
    client: httpx.Client
    workspace: Path
    workspace_id: str

    def post(self, conversation: str, text: str, complete: bool = True) -> dict[str, Any]:
        reply = self.client.post(
            f"/api/conversations/{conversation}/messages",
            json={"text": text, "complete": complete},
        )
        assert reply.status_code == 201, reply.text
        found: dict[str, Any] = reply.json()
        return found

    def messages(self, conversation: str) -> list[dict[str, Any]]:
        reply = self.client.get(f"/api/conversations/{conversation}/messages")
        assert reply.status_code == 200, reply.text
        found: list[dict[str, Any]] = reply.json()["messages"]
        return found

    def schedule(self, mission: str) -> str:
        return f"/api/workspaces/{self.workspace_id}/missions/{mission}/schedule"

    def results(self, mission: str) -> list[dict[str, Any]]:
        reply = self.client.get(self.schedule(mission) + "/history")
        assert reply.status_code == 200, reply.text
        found: list[dict[str, Any]] = reply.json()["results"]
        return found

    def passage(self, mission: str) -> dict[str, Any]:
        """A Run now, waited for until it is archived: its result."""
        before = len(self.results(mission))
        revision = self.client.get(self.schedule(mission)).json()["revision"]
        reply = self.client.post(
            self.schedule(mission) + "/run-now",
            json={"requestID": f"run-{uuid.uuid4().hex}", "expectedRevision": revision},
        )
        assert reply.status_code == 200, reply.text
        results = poll(
            lambda: (found := self.results(mission))[before:] and found,
            LOOP_WITHIN,
            "the passage to be archived",
        )
        result: dict[str, Any] = results[0]  # newest first
        return result


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    directory = tmp_path_factory.mktemp("watch-journey")
    workspace = directory / "workspace"
    workspace.mkdir()
    (workspace / "watcher.py").write_text(WATCHER)
    server = start_server(f"sqlite:///{directory / 'kalends.sqlite3'}", directory)
    try:
        with owner_session(server) as client:
            added = client.post("/api/workspaces", json={"path": str(workspace)})
            assert added.status_code == 201, added.text
            yield World(server, client, workspace, added.json()["id"])
    finally:
        finish(server)


def test_passages_are_handed_batches_advanced_only_when_they_complete(world: World) -> None:
    made = world.client.post(
        f"/api/workspaces/{world.workspace_id}/conversations", json={"title": "Inbox"}
    )
    assert made.status_code == 201, made.text
    thread = made.json()["id"]
    for n in range(1, 41):
        world.post(thread, f"note {n}")
    created = world.client.post(
        f"/api/workspaces/{world.workspace_id}/missions/scheduled",
        json={
            "requestID": f"create-{uuid.uuid4().hex}",
            "config": {
                "title": "Inbox reader",
                "profile": {
                    "command": [sys.executable, "watcher.py", kalends_executable()],
                    "cwd": ".",
                },
                "policy": {"kind": "daily", "time": "09:00", "zone": "UTC"},
                "watch": [thread],
            },
        },
    )
    assert created.status_code == 201, created.text
    mission = created.json()["missionId"]

    first = world.passage(mission)
    assert (first["outcome"], first["summary"]) == ("completed", "handed 1-32 (32, limit)")
    # A failed passage leaves the cursor: the next one is handed the same messages.
    (world.workspace / "fail.next").write_text("")
    failed = world.passage(mission)
    assert (failed["outcome"], failed["summary"]) == ("failed", "handed 33-40 (8, end)")
    again = world.passage(mission)
    assert (again["outcome"], again["summary"]) == ("completed", "handed 33-40 (8, end)")

    # A message still being written ends the batch until it is finished.
    world.post(thread, "note 41")
    half = world.post(thread, "note 42", complete=False)
    world.post(thread, "note 43")
    partial = world.passage(mission)
    assert partial["summary"] == "handed 41-41 (1, streaming)"
    finished = world.client.post(
        f"/api/messages/{half['id']}/finish", json={"expectedRevision": half["revision"]}
    )
    assert finished.status_code == 200, finished.text
    assert world.passage(mission)["summary"] == "handed 42-43 (2, end)"
    assert world.passage(mission)["summary"] == "handed nothing (0, end)"

    # The first passage's own conversation: what it was handed, said, and how it ended.
    listed = world.client.get(f"/api/workspaces/{world.workspace_id}/conversations")
    assert listed.status_code == 200, listed.text
    [own] = [c for c in listed.json() if c["passageId"] == first["passageId"]]
    assert own["state"] == "settled"
    texts = [m["text"] for m in world.messages(own["id"])]
    assert len(texts) == 3
    assert f"Watched conversation {thread}: 32 new message(s)." in texts[0]
    assert texts[1] == "handed 1-32 (32, limit)"
    assert texts[2] == "Settled: completed.\nReport: handed 1-32 (32, limit)"
