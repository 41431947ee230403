"""``KALENDS_FAST_PATHS=0``: a server without kalends' route index and planned handlers
(``kalends.api.fast``) answers every request as a server with them does.

Two real servers, each on a SQLite file of its own, get the same requests from a logged-in
owner: reads, writes, a control, and the refusals (bad input, an unknown ID, a stale
revision, an unknown route, a method the route does not take). IDs differ between the
two, so the answers are compared by status, machine code and the names of the fields.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kalends.api.fast import ENV_FAST_PATHS

from .conftest import Server, environment, finish, owner_session, start_server

Seen = tuple[int, str | None, tuple[str, ...]]


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    started: dict[str, Server] = {}
    try:
        for name, value in (("fast", "1"), ("framework", "0")):
            directory = tmp_path_factory.mktemp(f"paths-{name}")
            started[name] = start_server(
                f"sqlite:///{directory / 'kalends.sqlite3'}",
                directory,
                "--no-schedules",
                "--no-reminders",
                env={ENV_FAST_PATHS: value},
            )
        yield started
    finally:
        for server in started.values():
            finish(server)


def seen(response: httpx.Response) -> Seen:
    """What must match between the two servers: the status, the machine code of an
    error, and the names of the answer's fields (or of its first item's)."""
    try:
        body: Any = response.json()
    except ValueError:
        return response.status_code, None, ()
    if isinstance(body, list):
        body = body[0] if body else {}
    code = body.get("code") if isinstance(body, dict) and "message" in body else None
    return response.status_code, code, tuple(sorted(body)) if isinstance(body, dict) else ()


def journey(client: httpx.Client) -> list[Seen]:
    """The same requests, in order, whatever server ``client`` talks to."""
    out: list[Seen] = []

    def ask(method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = client.request(method, path, **kwargs)
        out.append(seen(response))
        return response

    made = ask("POST", "/api/lists", json={"name": "Home"}).json()
    task = ask("POST", f"/api/lists/{made['id']}/tasks", json={"title": "Water the plants"})
    task_id = task.json()["id"]
    ask("GET", f"/api/tasks/{task_id}")
    ask("GET", f"/api/lists/{made['id']}/tasks", params={"limit": 10})
    ask("PATCH", f"/api/tasks/{task_id}", json={"expectedRevision": 1, "title": "Water"})
    ask("PATCH", f"/api/tasks/{task_id}", json={"expectedRevision": 1, "title": "Stale"})
    ask("POST", f"/api/tasks/{task_id}/complete", json={"expectedRevision": 2})
    ask("GET", "/api/tasks/0190d2f5-5e9a-7c31-9e6e-2f1c3b5a7d11")
    ask("GET", "/api/tasks/not-an-id")
    ask("GET", f"/api/lists/{made['id']}/tasks", params={"limit": "many"})
    ask("POST", "/api/lists", content=b"{not json", headers={"Content-Type": "application/json"})
    ask("POST", "/api/lists", json={"name": ""})
    ask("DELETE", "/api/lists")
    ask("GET", "/api/no-such-route")
    ask("GET", "/api/missions/0190d2f5-5e9a-7c31-9e6e-2f1c3b5a7d11")
    ask("GET", "/api/workspaces")
    return out


def test_without_its_fast_paths_a_server_answers_as_with_them(
    servers: dict[str, Server],
) -> None:
    answers: dict[str, list[Seen]] = {}
    for name, server in servers.items():
        with owner_session(server) as client:
            answers[name] = journey(client)
    assert answers["framework"] == answers["fast"]
    statuses = [status for status, _, _ in answers["fast"]]
    # The journey reaches the refusals it means to: a stale revision, an unknown and a
    # malformed ID, bad input, an unknown route, a method the route does not take.
    assert {409, 404, 422, 405} <= set(statuses)
    assert statuses.count(201) >= 1


@pytest.mark.parametrize(("value", "enabled"), [("0", False), ("1", True), ("", True)])
def test_the_switch_is_read_from_the_environment(value: str, enabled: bool) -> None:
    shown = subprocess.run(
        [sys.executable, "-c", "from kalends.api import fast; print(fast.ENABLED)"],
        capture_output=True,
        text=True,
        check=True,
        env=environment(**{ENV_FAST_PATHS: value}),
        cwd=Path(__file__).parent,
    )
    assert shown.stdout.strip() == str(enabled)
