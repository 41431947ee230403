"""A schedule's checklist template, from Run now to settlement, on a real `kalends serve`
(SQLite, and PostgreSQL when one answers).

The owner creates a schedule whose template nests three levels and whose command is a
Python script of the workspace. Run now, over HTTP, reserves the passage with its
checklist in the workspace's task list; the scheduler inside the server starts the
script with the real process runtime. The script reads its input file, ticks two items
with ``kalends task done REF --expect REV``, comments a third, tries to tick a task of
another list (refused: 403 ``passage-scope``, exit status 1), writes what each
command answered to a file of the workspace, and reports with ``kalends report``.

Then the checklist is read over HTTP (nested as the template, two items done, the
comment by the passages' actor), the other task is as it was, the detail and
``kalends schedule show`` give the counts at settlement, and a configure that changes
the template is refused: the template is locked once a task was made from it.
"""

from __future__ import annotations

import json
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from kalends.missions.checklists import PASSAGES_ACTOR_ID

from .conftest import (
    OWNER,
    Server,
    kalends_executable,
    owner_session,
    requests_logged,
    run_cli,
)

TITLE = "Mirror sync"
WORKSPACE_NAME = "Mirror desk"
TEMPLATE: list[dict[str, Any]] = [
    {
        "title": "Prepare",
        "children": [
            {"title": "Fetch", "children": [{"title": "Check mirror"}]},
            {"title": "Clean"},
        ],
    },
    {"title": "Publish"},
]
# The template's items in order, each before its own: (depth, title).
ITEMS = [(1, "Prepare"), (2, "Fetch"), (3, "Check mirror"), (2, "Clean"), (1, "Publish")]
TICKED = ("Check mirror", "Publish")
COMMENTED = "Clean"
COMMENT = "Cleaned 3 stale files."
SUMMARY = "ticked 2 of 5 items"
STEPS = "steps.json"
# How long the passage may take from Run now to settlement: its command runs five
# kalends commands, each a few seconds of start-up on a busy machine.
SETTLE_WITHIN = 180.0

# The passage's command: argv is the kalends executable and the REF of a task outside
# its checklist. Every command's exit status and output go to steps.json (written before
# the report, which settles the passage), with the checklist its input file listed.
PASSAGE_SCRIPT = (
    f"TICKED, COMMENTED, COMMENT = {TICKED!r}, {COMMENTED!r}, {COMMENT!r}\n"
    f"SUMMARY, STEPS = {SUMMARY!r}, {STEPS!r}\n"
) + textwrap.dedent(
    """\
    import json, os, subprocess, sys
    from pathlib import Path

    kalends, outside = sys.argv[1], sys.argv[2]
    doc = json.loads(Path(os.environ["KALENDS_INPUT_FILE"]).read_text())
    items = {item["title"]: item for item in doc["checklist"]}
    steps = []


    def run(name, *args):
        done = subprocess.run([kalends, *args], capture_output=True, text=True, check=False)
        steps.append(
            {"name": name, "status": done.returncode, "stdout": done.stdout, "stderr": done.stderr}
        )
        return done.returncode


    for title in TICKED:
        item = items[title]
        ticked = ("task", "done", item["ref"], "--expect", str(item["revision"]), "--json")
        run("done " + title, *ticked)
    run("comment " + COMMENTED, "task", "comment", items[COMMENTED]["ref"], COMMENT)
    run("done outside", "task", "done", outside, "--expect", "1", "--json")
    seen = {"checklistId": doc["checklistId"], "checklist": doc["checklist"], "steps": steps}
    Path(STEPS).write_text(json.dumps(seen))
    sys.exit(run("report", "report", "completed", "--summary", SUMMARY))
    """
)


@dataclass
class Desk:
    """The shared server, its owner logged in, and a workspace registered by the owner."""

    server: Server
    client: httpx.Client
    workspace: Path
    workspace_id: str

    def schedule(self, mission: str) -> str:
        return f"/api/workspaces/{self.workspace_id}/missions/{mission}/schedule"

    def detail(self, mission: str) -> dict[str, Any]:
        found: dict[str, Any] = ok(self.client.get(self.schedule(mission)))
        return found

    def passage_log(self, mission: str, passage: str) -> dict[str, Any] | None:
        path = f"/api/workspaces/{self.workspace_id}/missions/{mission}/passages/{passage}/log"
        response = self.client.get(path)
        return response.json() if response.status_code == 200 else None


def ok(response: httpx.Response, status: int = 200) -> Any:
    """The JSON of ``response``, which must have ``status``."""
    assert response.status_code == status, (response.status_code, response.text)
    return response.json()


@pytest.fixture(scope="module")
def desk(shared_server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Desk]:
    workspace = tmp_path_factory.mktemp("checklist-journey") / "workspace"
    workspace.mkdir()
    (workspace / "passage.py").write_text(PASSAGE_SCRIPT)
    with owner_session(shared_server) as client:
        added = ok(
            client.post("/api/workspaces", json={"path": str(workspace), "name": WORKSPACE_NAME}),
            201,
        )
        yield Desk(shared_server, client, workspace, added["id"])


def settlement(desk: Desk, mission: str, passage: str) -> dict[str, Any]:
    """The detail once ``passage`` is the latest result; fails, with what the passage and
    the schedule show, after :data:`SETTLE_WITHIN` seconds."""
    deadline = time.monotonic() + SETTLE_WITHIN
    while True:
        detail = desk.detail(mission)
        latest = detail["latestResult"]
        if latest is not None and latest["passageId"] == passage:
            return detail
        if time.monotonic() > deadline:
            log = desk.passage_log(mission, passage)
            pytest.fail(
                f"passage {passage} did not settle within {SETTLE_WITHIN} s: "
                f"pending {detail['pending']}, last error {detail['lastError']}, "
                f"log {json.dumps(log)[-3000:]}"
            )
        time.sleep(0.05)


def shape(node: dict[str, Any]) -> tuple[str, str, list[Any]]:
    return (node["title"], node["status"], [shape(c) for c in node["children"]])


def walk(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node["children"]:
        yield from walk(child)


def test_a_run_now_ticks_its_checklist_and_locks_the_template(desk: Desk) -> None:
    client = desk.client
    # A task of another list: the passage's token must not reach it.
    other = ok(client.post("/api/lists", json={"name": f"Errands {uuid.uuid4().hex[:6]}"}), 201)
    outside = ok(
        client.post(f"/api/lists/{other['id']}/tasks", json={"title": "Renew the domain"}), 201
    )
    assert (outside["status"], outside["revision"]) == ("open", 1)

    created = ok(
        client.post(
            f"/api/workspaces/{desk.workspace_id}/missions/scheduled",
            json={
                "requestID": f"create-{uuid.uuid4().hex}",
                "config": {
                    "title": TITLE,
                    "objective": "Sync the mirror and publish it.",
                    "profile": {
                        "command": [
                            sys.executable,
                            "passage.py",
                            kalends_executable(),
                            outside["ref"],
                        ],
                        "cwd": ".",
                    },
                    "policy": {"kind": "daily", "time": "09:00", "zone": "UTC"},
                    "template": TEMPLATE,
                },
            },
        ),
        201,
    )
    mission = str(created["missionId"])
    paused = desk.detail(mission)
    assert (paused["state"], paused["template"], paused["locks"]["template"]) == (
        "paused",
        TEMPLATE,
        False,
    )

    # Run now, over HTTP: the reservation writes the checklist and names it.
    before = datetime.now(UTC).replace(second=0, microsecond=0)
    reply = ok(
        client.post(
            desk.schedule(mission) + "/run-now",
            json={
                "requestID": f"run-now-{uuid.uuid4().hex}",
                "expectedRevision": paused["revision"],
            },
        )
    )
    after = datetime.now(UTC)
    assert (reply["action"], reply["status"]) == ("run-now", "applied"), reply
    pending = reply["schedule"]["pending"]
    passage, checklist = pending["passageId"], pending["checklistId"]
    assert pending["trigger"] == "manual"
    assert checklist, pending

    detail = settlement(desk, mission, passage)
    result = detail["latestResult"]
    assert (result["outcome"], result["summary"], result["trigger"]) == (
        "completed",
        SUMMARY,
        "manual",
    ), result

    # What the command was given and what each of its commands answered.
    seen = json.loads((desk.workspace / STEPS).read_text())
    assert seen["checklistId"] == checklist
    assert [(i["depth"], i["title"], i["status"], i["revision"]) for i in seen["checklist"]] == [
        (depth, title, "open", 1) for depth, title in ITEMS
    ]
    steps = {step["name"]: step for step in seen["steps"]}
    for title in TICKED:
        ticked = steps[f"done {title}"]
        assert ticked["status"] == 0, ticked
        assert json.loads(ticked["stdout"])["status"] == "completed", ticked
    said = steps[f"comment {COMMENTED}"]
    assert said["status"] == 0, said
    ref_of = {i["title"]: i["ref"] for i in seen["checklist"]}
    assert f"commented on {ref_of[COMMENTED].upper()}" in said["stdout"]
    refused = steps["done outside"]
    assert refused["status"] == 1, refused
    assert json.loads(refused["stdout"])["error"]["code"] == "passage-scope", refused
    assert "own checklist" in refused["stderr"], refused
    # The server refused it with 403.
    complete_path = f"/api/tasks/{outside['ref']}/complete"
    assert [e["status"] for e in requests_logged(desk.server, "POST", complete_path)] == [403]

    # The checklist: in the workspace's list, titled after the schedule and the Run now,
    # nested as the template; exactly the two items done, the comment on the third.
    tree = ok(client.get(f"/api/tasks/{checklist}/checklist"))
    assert shape(tree)[1:] == (
        "open",
        [
            (
                "Prepare",
                "open",
                [("Fetch", "open", [("Check mirror", "completed", [])]), ("Clean", "open", [])],
            ),
            ("Publish", "completed", []),
        ],
    )
    root = ok(client.get(f"/api/tasks/{checklist}"))
    assert root["list"]["name"] == WORKSPACE_NAME
    assert root["parent_id"] is None
    head, _, tail = root["title"].partition(" — ")
    assert (head, tail.endswith(" (UTC, run now)")) == (TITLE, True), root["title"]
    reserved = datetime.strptime(tail.removesuffix(" (UTC, run now)"), "%Y-%m-%d %H:%M")
    assert before <= reserved.replace(tzinfo=UTC) <= after, root["title"]
    top = ok(client.get(f"/api/lists/{root['list_id']}/tasks"))
    assert [t["id"] for t in top].count(checklist) == 1
    by_title = {node["title"]: node for node in walk(tree)}
    assert {t for t, node in by_title.items() if node["status"] == "completed"} == set(TICKED)
    for title, node in by_title.items():
        comments = ok(client.get(f"/api/tasks/{node['id']}/comments"))
        expected = [(str(PASSAGES_ACTOR_ID), COMMENT)] if title == COMMENTED else []
        assert [(c["author_id"], c["body"]) for c in comments] == expected, title

    # The task outside is as it was: open, same revision, no comment.
    still = ok(client.get(f"/api/tasks/{outside['id']}"))
    assert (still["status"], still["revision"], still["comments"]) == ("open", 1, [])

    # The counts at settlement: in the detail and in `kalends schedule show`.
    counted = {"id": checklist, "open": 3, "done": 2}
    assert result["checklist"] == counted
    assert (detail["pending"], detail["locks"]["template"]) == (None, True)
    shown = run_cli(desk.server, "schedule", "show", mission, "--as", OWNER)
    assert shown.returncode == 0, shown.stderr
    assert f"2 done, 3 open at settlement ({checklist})" in " ".join(shown.stdout.split())

    # The template is locked: a configure that changes it is refused, nothing written.
    request = f"configure-{uuid.uuid4().hex}"
    refused_edit = client.post(
        desk.schedule(mission),
        json={
            "action": "configure",
            "requestID": request,
            "expectedRevision": detail["revision"],
            "changes": {"template": [{"title": "Publish"}]},
        },
    )
    assert refused_edit.status_code == 409, refused_edit.text
    problem = refused_edit.json()
    assert problem["code"] == "recurrence-control-conflict", problem
    assert "template is locked" in problem["message"], problem
    unchanged = desk.detail(mission)
    assert (unchanged["revision"], unchanged["template"]) == (detail["revision"], TEMPLATE)
    assert unchanged["latestResult"] == result
    assert ok(client.get(f"/api/tasks/{checklist}/checklist")) == tree
