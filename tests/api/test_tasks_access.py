"""Who may call each task-side route: every route against (no credentials, expired token,
revoked token, viewer, non-member), each refusal writing nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi import FastAPI

from api.conftest import ApiWorld
from api.test_tasks_support import ZONE, new_task, ok, schedule, warm
from kalends.reminders.outbox import Outbox
from kalends.storage.testing import nothing_written


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    url: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    # "read", "write", or "own" (a route about the caller's own lists and reminders).
    kind: str = "read"
    # What a non-member gets: 404, what an ID nobody uses gets (no answer tells them the
    # object exists; a member with too low a role gets 403).
    stranger: int = 404
    # A write that needs the owner role (an editor is refused too).
    owners_only: bool = False


def body(**values: Any) -> dict[str, Any]:
    return {"json": values}


def routes(api: ApiWorld) -> list[Route]:
    """Every task-side route, on objects of the home list, with bodies an owner could send."""
    alice = api.actors["alice"].id
    api.services.directory.add_section(alice, api.home_list.id, "kitchen")
    task = new_task(api, title="plain")
    reminder = {
        "channel": "email",
        "local": "2025-03-03T12:30:00",
        "zone": ZONE,
        "recipient": "bob",
    }
    task = schedule(api, task, due="2025-03-03", reminders=[reminder])
    outbox = Outbox(api.store)
    (claim,) = outbox.claim("test-worker")
    outbox.retry(claim.token, "failed once")
    recurring = new_task(api, title="recurring")
    series = api.services.series.start_series(alice, recurring["id"], 1, {"kind": "daily"})
    trashed = new_task(api, title="trashed")
    api.services.tasks.trash(alice, trashed["id"], 1)
    done = new_task(api, title="done")
    api.services.tasks.complete(alice, done["id"], 1)
    attachment = api.services.tasks.attach(alice, task["id"], "a.txt", "text/plain", b"a")
    lst = f"/api/lists/{api.home_list.id}"
    ref, rev = task["ref"], task["revision"]
    t = f"/api/tasks/{ref}"
    s = f"/api/series/{series.id}"
    return [
        Route("GET", "/api/lists", kind="own"),
        Route("POST", "/api/lists", body(name="mine"), kind="own"),
        Route("GET", "/api/reminders", kind="own"),
        Route("GET", lst),
        Route("GET", f"{lst}/members"),
        Route("GET", f"{lst}/sections"),
        Route("GET", f"{lst}/tasks"),
        Route("GET", t),
        Route("GET", f"{t}/checklist"),
        Route("GET", f"{t}/comments"),
        Route("GET", f"{t}/history"),
        Route("GET", f"{t}/attachments"),
        Route("GET", f"{t}/reminders"),
        Route("GET", s),
        Route("GET", f"/api/attachments/{attachment.id}"),
        Route("GET", f"/api/reminders/{claim.id}"),
        Route("POST", f"{lst}/archive", body(), "write", owners_only=True),
        Route("POST", f"{lst}/unarchive", body(), "write", owners_only=True),
        Route("PUT", f"{lst}/members/dave", body(role="owner"), "write", owners_only=True),
        Route("DELETE", f"{lst}/members/carol", kind="write", owners_only=True),
        Route("POST", f"{lst}/sections", body(name="attic"), "write"),
        Route("POST", f"{lst}/tasks", body(title="new"), "write"),
        Route("PATCH", t, body(expectedRevision=rev, title="renamed"), "write"),
        Route("POST", f"{t}/move", body(expectedRevision=rev, section="kitchen"), "write"),
        Route("POST", f"{t}/trash", body(expectedRevision=rev), "write"),
        Route("POST", f"/api/tasks/{trashed['ref']}/restore", body(expectedRevision=2), "write"),
        Route("PUT", f"{t}/schedule", body(expectedRevision=rev, priority=1), "write"),
        Route("POST", f"{t}/complete", body(expectedRevision=rev), "write"),
        Route("POST", f"/api/tasks/{done['ref']}/reopen", body(expectedRevision=2), "write"),
        Route("POST", f"/api/tasks/{recurring['ref']}/skip", body(expectedRevision=2), "write"),
        Route("POST", f"{t}/series", body(expectedRevision=rev, rule={"kind": "daily"}), "write"),
        Route("POST", f"{s}/pause", body(expectedRevision=1), "write"),
        Route("POST", f"{s}/resume", body(expectedRevision=1), "write"),
        Route("POST", f"{s}/stop", body(expectedRevision=1), "write"),
        Route("POST", f"{t}/comments", body(body="hi"), "write"),
        Route("POST", f"{t}/attachments", {"files": {"file": ("b.txt", b"b")}}, "write"),
        Route("POST", f"/api/reminders/{claim.id}/retry", kind="write"),
    ]


def test_every_task_route_is_listed_here(api: ApiWorld) -> None:
    app = api.client.app
    assert isinstance(app, FastAPI)
    paths = app.openapi()["paths"]
    served = {
        (method, path)
        for path, item in paths.items()
        for method in item
        if path.startswith(
            ("/api/lists", "/api/tasks", "/api/series", "/api/attachments", "/api/reminders")
        )
    }
    covered: set[tuple[str, str]] = set()
    for route in routes(api):
        for path, item in paths.items():
            template = path.split("/")
            concrete = route.url.split("?")[0].split("/")
            if (
                len(template) == len(concrete)
                and all(
                    a == b or a.startswith("{") for a, b in zip(template, concrete, strict=True)
                )
                and route.method.lower() in item
            ):
                covered.add((route.method.lower(), path))
                break
    assert served - covered == set()


def check(
    api: ApiWorld, route: Route, headers: dict[str, str], allowed: set[int], failures: list[str]
) -> None:
    warm(api, headers)
    try:
        with nothing_written(api.store):
            reply = api.client.request(route.method, route.url, headers=headers, **route.kwargs)
    except AssertionError as exc:
        failures.append(f"{route.method} {route.url}: wrote something: {exc}")
        return
    if reply.status_code not in allowed:
        failures.append(f"{route.method} {route.url}: {reply.status_code} {reply.text[:200]}")
    elif reply.json().get("code") is None:
        failures.append(f"{route.method} {route.url}: no error code in {reply.text[:200]}")


# Each case: whose credentials (None: none at all), the status every route answers.
@pytest.mark.parametrize(
    ("who", "status"),
    [
        pytest.param(None, 401, id="no-credentials"),
        pytest.param("erin", 401, id="expired-token"),
        pytest.param("frank", 401, id="revoked-token"),
    ],
)
def test_without_valid_credentials_every_route_is_401(
    api: ApiWorld, who: str | None, status: int
) -> None:
    headers = api.headers(who) if who else {}
    failures: list[str] = []
    for route in routes(api):
        check(api, route, headers, {status}, failures)
    assert failures == []


def test_a_non_member_reads_and_writes_nothing_of_the_list(api: ApiWorld) -> None:
    failures: list[str] = []
    for route in routes(api):
        if route.kind != "own":
            check(api, route, api.headers("dave"), {route.stranger}, failures)
    assert failures == []
    # What is about the caller's own lists shows dave nothing of the home list.
    assert ok(api.client.get("/api/lists", headers=api.headers("dave"))) == []
    assert ok(api.client.get("/api/reminders", headers=api.headers("dave"))) == []


def test_a_viewer_reads_everything_and_writes_nothing(api: ApiWorld) -> None:
    failures: list[str] = []
    for route in routes(api):
        if route.kind == "write":
            check(api, route, api.headers("carol"), {403}, failures)
        elif route.kind == "read":
            reply = api.client.request(route.method, route.url, headers=api.headers("carol"))
            if reply.status_code != 200:
                failures.append(f"{route.method} {route.url}: {reply.status_code} {reply.text}")
    assert failures == []


def test_an_editor_cannot_do_what_only_owners_may(api: ApiWorld) -> None:
    failures: list[str] = []
    for route in routes(api):
        if route.owners_only:
            check(api, route, api.headers("bob"), {403}, failures)
    assert failures == []


def test_every_task_route_documents_its_summary_errors_and_bodies(api: ApiWorld) -> None:
    app = api.client.app
    assert isinstance(app, FastAPI)
    spec = app.openapi()
    checked = 0
    for path, item in spec["paths"].items():
        if not path.startswith(
            ("/api/lists", "/api/tasks", "/api/series", "/api/attachments", "/api/reminders")
        ):
            continue
        for method, operation in item.items():
            checked += 1
            where = f"{method.upper()} {path}"
            assert operation.get("summary"), where
            responses = operation["responses"]
            for status in ("401", "422"):
                assert responses[status]["content"]["application/json"]["schema"] == {
                    "$ref": "#/components/schemas/ErrorBody"
                }, where
            success = next(s for s in responses if s.startswith("2"))
            if path != "/api/attachments/{attachment_id}":
                assert responses[success]["content"]["application/json"]["schema"], where
            if method in ("post", "put", "patch") and not path.endswith(("/retry",)):
                assert "requestBody" in operation, where
    assert checked == 37
