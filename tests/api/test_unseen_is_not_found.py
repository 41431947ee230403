"""Another person's list, workspace, task, series, attachment or schedule answers what an
ID nobody uses answers: 404, the same body but for the ID itself, so no answer tells a
caller that an ID is taken. Only where the caller may see the object (a viewer trying
to write) is the answer 403.

dave is no member of the home list nor of the home workspace; carol views both.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from api.conftest import ApiWorld
from api.test_tasks_support import new_task, warm
from kalends.storage.testing import nothing_written
from missions.conftest import daily_config


@dataclass(frozen=True, slots=True)
class Probe:
    """A request about one object, by its ID; ``url`` puts an ID in its place."""

    method: str
    url: Callable[[str], str]
    json: dict[str, Any] | None = None


@dataclass(slots=True)
class Objects:
    """alice's objects (and bob's schedule in home), each by the ID a URL names it by."""

    list_id: str
    task_id: str
    series_id: str
    attachment_id: str
    workspace_id: str
    mission_id: str
    away_id: str


def objects_of(api: ApiWorld) -> Objects:
    alice, bob = api.actors["alice"].id, api.actors["bob"].id
    task = new_task(api, title="private matters")
    recurring = new_task(api, title="every day")
    series = api.services.series.start_series(alice, recurring["id"], 1, {"kind": "daily"})
    attachment = api.services.tasks.attach(alice, task["id"], "a.txt", "text/plain", b"a")
    receipt = api.services.schedules.create(
        bob, api.home.id, daily_config(title="Private"), request_id="create-private"
    )
    return Objects(
        list_id=str(api.home_list.id),
        task_id=task["id"],
        series_id=str(series.id),
        attachment_id=str(attachment.id),
        workspace_id=str(api.home.id),
        mission_id=str(receipt.mission_id),
        away_id=str(api.away.id),
    )


def probes(o: Objects) -> dict[str, tuple[str, Probe]]:
    """Each case: the foreign ID it names and the request (reads and writes alike)."""
    return {
        "list": (o.list_id, Probe("GET", lambda i: f"/api/lists/{i}")),
        "list's tasks": (o.list_id, Probe("GET", lambda i: f"/api/lists/{i}/tasks")),
        "list, a task added": (
            o.list_id,
            Probe("POST", lambda i: f"/api/lists/{i}/tasks", {"title": "mine now"}),
        ),
        "list, archived": (o.list_id, Probe("POST", lambda i: f"/api/lists/{i}/archive", {})),
        "task": (o.task_id, Probe("GET", lambda i: f"/api/tasks/{i}")),
        "task, renamed": (
            o.task_id,
            Probe("PATCH", lambda i: f"/api/tasks/{i}", {"expectedRevision": 1, "title": "x"}),
        ),
        "task, commented": (
            o.task_id,
            Probe("POST", lambda i: f"/api/tasks/{i}/comments", {"body": "hello"}),
        ),
        "task's attachments": (o.task_id, Probe("GET", lambda i: f"/api/tasks/{i}/attachments")),
        "series": (o.series_id, Probe("GET", lambda i: f"/api/series/{i}")),
        "series, paused": (
            o.series_id,
            Probe("POST", lambda i: f"/api/series/{i}/pause", {"expectedRevision": 1}),
        ),
        "attachment": (o.attachment_id, Probe("GET", lambda i: f"/api/attachments/{i}")),
        "workspace": (o.workspace_id, Probe("GET", lambda i: f"/api/workspaces/{i}")),
        "workspace's members": (
            o.workspace_id,
            Probe("GET", lambda i: f"/api/workspaces/{i}/members"),
        ),
        "workspace's schedules": (
            o.workspace_id,
            Probe("GET", lambda i: f"/api/workspaces/{i}/missions/scheduled"),
        ),
        "workspace, a schedule created": (
            o.workspace_id,
            Probe(
                "POST",
                lambda i: f"/api/workspaces/{i}/missions/scheduled",
                {"requestID": "create-stranger", "config": daily_config()},
            ),
        ),
        "schedule, under its workspace": (
            o.workspace_id,
            Probe("GET", lambda i: f"/api/workspaces/{i}/missions/{o.mission_id}/schedule"),
        ),
        "schedule, under the caller's own workspace": (
            o.mission_id,
            Probe("GET", lambda i: f"/api/workspaces/{o.away_id}/missions/{i}/schedule"),
        ),
        "schedule, played": (
            o.mission_id,
            Probe(
                "POST",
                lambda i: f"/api/workspaces/{o.away_id}/missions/{i}/schedule",
                {"action": "play", "requestID": "play-stranger", "expectedRevision": 1},
            ),
        ),
        "workspace, unregistered": (
            o.workspace_id,
            Probe("DELETE", lambda i: f"/api/workspaces/{i}"),
        ),
    }


CASES = list(probes(Objects("l", "t", "s", "a", "w", "m", "x")))


@pytest.mark.parametrize("case", CASES)
def test_a_strangers_request_is_answered_as_for_an_id_nobody_uses(api: ApiWorld, case: str) -> None:
    foreign, probe = probes(objects_of(api))[case]
    random = str(uuid.uuid4())
    headers = api.headers("dave")
    warm(api, headers)
    with nothing_written(api.store):
        theirs = api.client.request(
            probe.method, probe.url(foreign), json=probe.json, headers=headers
        )
        nobodys = api.client.request(
            probe.method, probe.url(random), json=probe.json, headers=headers
        )
    assert theirs.status_code == 404, theirs.text
    assert nobodys.status_code == 404, nobodys.text
    assert theirs.json()["code"] == "not-found"
    # The same answer, word for word, but for the ID itself.
    assert theirs.text.replace(foreign, random) == nobodys.text
    for private in ("private matters", "every day", "Private", "a.txt", "alice", "home"):
        assert private not in theirs.text


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/api/lists/{list}/tasks", {"title": "a viewer's"}),  # a list
        ("PATCH", "/api/tasks/{task}", {"expectedRevision": 1, "title": "a viewer's"}),  # a task
        ("POST", "/api/workspaces/{workspace}/missions/scheduled", None),  # a workspace
    ],
)
def test_a_viewer_who_sees_the_object_is_refused_a_write_with_403(
    api: ApiWorld, method: str, path: str, body: dict[str, Any] | None
) -> None:
    task = new_task(api)
    url = path.format(list=api.home_list.id, task=task["id"], workspace=api.home.id)
    if body is None:
        body = {"requestID": "create-viewer", "config": daily_config()}
    headers = api.headers("carol")
    warm(api, headers)
    with nothing_written(api.store):
        reply = api.client.request(method, url, json=body, headers=headers)
    assert (reply.status_code, reply.json()["code"]) == (403, "forbidden"), reply.text
