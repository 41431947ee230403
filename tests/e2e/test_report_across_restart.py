"""A passage's report survives the server being down when the passage makes it.

A real `kalends serve` starts a passage that waits for a gate. The server stops (as for
an upgrade); the gate opens and the passage runs `kalends report completed`, which
cannot reach the server: it keeps the report in the passage's own directory, says that
delivery is deferred, and exits 0, so the passage exits 0 too. A new server on the same
database and runtime directory settles the passage with the kept report: completed,
with its summary, not ``failed (exit status 1)``.
"""

from __future__ import annotations

import json
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import httpx

from .conftest import (
    CSRF_HEADER,
    LOOP_WITHIN,
    finish,
    kalends_executable,
    owner_session,
    poll,
    start_server,
)

SUMMARY = "done while the server was down"
PASSAGE = textwrap.dedent(
    """\
    import json, subprocess, sys, time
    from pathlib import Path

    end = time.monotonic() + 120
    while not Path("gate.open").exists():
        if time.monotonic() > end:
            sys.exit(3)
        time.sleep(0.05)
    done = subprocess.run(
        [sys.argv[1], "report", "completed", "--summary", sys.argv[2]],
        capture_output=True,
        text=True,
    )
    Path("reported.json").write_text(json.dumps(
        {"code": done.returncode, "stdout": done.stdout, "stderr": done.stderr}
    ))
    sys.exit(done.returncode)
    """
)


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, (response.status_code, response.text)
    return response.json()


def test_a_report_made_while_the_server_is_down_is_taken_after_it_restarts(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "server"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "passage.py").write_text(PASSAGE)
    database = f"sqlite:///{directory / 'kalends.sqlite3'}"

    first = start_server(database, directory)
    try:
        with owner_session(first) as client:
            space = ok(client.post("/api/workspaces", json={"path": str(workspace)}), 201)["id"]
            created = client.post(
                f"/api/workspaces/{space}/missions/scheduled",
                json={
                    "requestID": f"create-{uuid.uuid4().hex}",
                    "config": {
                        "title": "Upgrade-proof",
                        "objective": "report across a restart",
                        "profile": {
                            "command": [sys.executable, "passage.py", kalends_executable(), SUMMARY]
                        },
                        "policy": {"kind": "every", "minutes": 60},
                    },
                },
            )
            mission = ok(created, 201)["missionId"]
            schedule = f"/api/workspaces/{space}/missions/{mission}/schedule"
            revision = ok(client.get(schedule))["revision"]
            ran = client.post(
                schedule + "/run-now",
                json={"requestID": f"run-{uuid.uuid4().hex}", "expectedRevision": revision},
            )
            passage = ok(ran)["schedule"]["pending"]["passageId"]
            poll(
                lambda: ok(client.get(schedule))["pending"]["status"] == "running",
                LOOP_WITHIN,
                "the passage to run",
            )
            cookies, csrf = dict(client.cookies), client.headers[CSRF_HEADER]
    finally:
        finish(first)

    # The server is down: the passage reports now.
    (workspace / "gate.open").touch()
    reported_file = workspace / "reported.json"
    poll(reported_file.exists, LOOP_WITHIN, "the passage's kalends report to finish")
    reported = json.loads(reported_file.read_text())
    assert reported["code"] == 0, reported
    assert reported["stdout"] == "Kept report: completed (delivery deferred).\n"
    assert "cannot send the report to the kalends server" in reported["stderr"]
    assert "delivery is deferred" in reported["stderr"]
    (spool,) = (directory / "runtime" / "passages").glob("*/io/report.json")
    assert json.loads(spool.read_text())["summary"] == SUMMARY

    second = start_server(database, directory, owner=None)
    try:
        with second.client(cookies=cookies, headers={CSRF_HEADER: csrf}) as client:

            def archived() -> list[dict[str, Any]]:
                found: list[dict[str, Any]] = ok(client.get(schedule + "/history"))["results"]
                return found

            [result] = poll(archived, LOOP_WITHIN, "the passage to be settled")
    finally:
        finish(second)
    assert (result["passageId"], result["outcome"], result["summary"]) == (
        passage,
        "completed",
        SUMMARY,
    )
    assert not spool.exists()
