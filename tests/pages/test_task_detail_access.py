"""Who may open or post the task page's routes (:mod:`kalends.web.pages_task`): a table
with a row per route, each asked by someone signed out, by a non-member of the list
(dave), a viewer (carol), the editor with a forged CSRF token and the editor (bob). A
route of the module in no row fails the suite, so a new route is given its row. A refused
post writes nothing: the task's revision (or its series') is the same after it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

from fastapi import FastAPI
from fastapi.testclient import TestClient

from kalends.identity import Role
from kalends.tasks import Task
from kalends.tasks.series_rules import SeriesRule
from pages.conftest import Pages, csrf_of
from pages.test_page_access import PERSONAS, SIGN_IN, every, page_routes, reply_status

MODULE = ("kalends.web.pages_task",)
NY = "America/New_York"
DAILY = SeriesRule.parse({"kind": "daily", "interval_days": 1})


@dataclass(frozen=True)
class Row:
    method: str
    template: str
    # What the row needs: "task", "completed", "series" (an outstanding occurrence),
    # "paused", "child" (a checklist item), "elsewhere" (a task and another list bob edits,
    # in OTHER_LIST).
    needs: str
    path: str
    data: Callable[[Task, int], dict[str, str]] | None
    expect: dict[str, int | str]
    files: dict[str, tuple[str, bytes, str]] | None = None


def member_write(status: int | str) -> dict[str, int | str]:
    return every(status, anon=SIGN_IN, dave=404, carol=403, forged=403)


def task_revision(fields: dict[str, str]) -> Callable[[Task, int], dict[str, str]]:
    return lambda task, _series: {"revision": str(task.revision), **fields}


def series_revision(task: Task, series: int) -> dict[str, str]:
    return {"series_revision": str(series)}


# The list a "elsewhere" row's task may move to, made by the test.
OTHER_LIST: dict[str, UUID] = {}


def to_other_list(task: Task, _series: int) -> dict[str, str]:
    return {"revision": str(task.revision), "list": str(OTHER_LIST["id"])}


T = "/tasks/{task}"
P = T + "/page"
ROWS = [
    Row("GET", T, "task", T, None, every(200, anon=SIGN_IN, dave=404)),
    Row(
        "POST",
        P + "/schedule",
        "task",
        P + "/schedule",
        task_revision({"planned": "2026-04-01", "due_kind": "none", "rem_count": "0"}),
        member_write(303),
    ),
    Row(
        "POST",
        P + "/comment",
        "task",
        P + "/comment",
        lambda t, s: {"body": "hi"},
        member_write(303),
    ),
    Row(
        "POST",
        P + "/attachments",
        "task",
        P + "/attachments",
        lambda t, s: {},
        member_write(303),
        files={"file": ("a.txt", b"a\n", "text/plain")},
    ),
    Row("POST", P + "/complete", "task", P + "/complete", task_revision({}), member_write(303)),
    Row("POST", P + "/skip", "series", P + "/skip", task_revision({}), member_write(303)),
    Row("POST", P + "/reopen", "completed", P + "/reopen", task_revision({}), member_write(303)),
    Row(
        "POST", P + "/move", "child", P + "/move", task_revision({"parent": ""}), member_write(303)
    ),
    Row("POST", P + "/move-list", "elsewhere", P + "/move-list", to_other_list, member_write(303)),
    Row(
        "POST",
        P + "/series/start",
        "task",
        P + "/series/start",
        task_revision({"kind": "daily", "every": "1", "time": "09:00", "zone": NY}),
        member_write(303),
    ),
    Row(
        "POST",
        P + "/series/pause",
        "series",
        P + "/series/pause",
        series_revision,
        member_write(303),
    ),
    Row(
        "POST",
        P + "/series/resume",
        "paused",
        P + "/series/resume",
        series_revision,
        member_write(303),
    ),
    Row(
        "POST", P + "/series/stop", "series", P + "/series/stop", series_revision, member_write(303)
    ),
]


def test_every_route_of_the_task_page_has_its_row(pages: Pages) -> None:
    app = pages.world.client.app
    assert isinstance(app, FastAPI)
    served = page_routes(app, MODULE)
    assert ("GET", "/tasks/{task}") in served  # not vacuous
    rows = {(row.method, row.template) for row in ROWS}
    assert served - rows == set(), "task page routes in no row"
    assert rows - served == set(), "rows of routes nobody serves"


def test_each_persona_gets_what_its_role_allows_and_a_refusal_writes_nothing(
    pages: Pages,
) -> None:
    world = pages.world
    alice = world.actors["alice"].id
    services = world.services

    def made(needs: str) -> UUID:
        task = services.tasks.create(alice, world.home_list.id, f"Row {needs}")
        if needs == "completed":
            services.tasks.complete(alice, task.id, task.revision)
        if needs == "elsewhere":
            other = services.directory.create_list(alice, "Row elsewhere")
            services.directory.share(alice, other.id, world.actors["bob"].id, Role.EDITOR)
            OTHER_LIST["id"] = other.id
        if needs == "child":
            parent = task.id
            task = services.tasks.create(alice, world.home_list.id, "Row item", parent=parent)
        if needs in ("series", "paused"):
            view = services.changes.repeat(
                alice, task.id, task.revision, DAILY, time_of_day="09:00", zone=NY
            ).series
            if needs == "paused":
                services.series.pause(alice, view.id, view.revision)
        return task.id

    def state(task: UUID) -> tuple[int, int | None, int, int]:
        detail = services.tasks.get(alice, task)
        series = services.series.get(alice, task).revision if detail.task.series_id else None
        return (
            detail.task.revision,
            series,
            len(detail.comments),
            len(detail.attachments),
        )

    clients: dict[str, TestClient] = {"anon": pages.client("alice")}
    tokens = {"anon": ""}
    for who in ("dave", "carol", "bob"):
        clients[who] = pages.sign_in(who)
        tokens[who] = csrf_of(clients[who].get("/").text)
    clients["forged"], tokens["forged"] = clients["bob"], "forged-token"
    seen: list[str] = []
    for row in ROWS:
        task = made(row.needs)
        for persona in PERSONAS:
            before = state(task)
            url = row.path.format(task=task)
            client = clients[persona]
            if row.data is None:
                reply = client.get(url, follow_redirects=False)
            else:
                current = services.tasks.get(alice, task).task
                series = services.series.get(alice, task).revision if current.series_id else 0
                data = {"csrf": tokens[persona], **row.data(current, series)}
                files = dict(row.files) if row.files else None
                reply = client.post(url, data=data, files=files, follow_redirects=False)
            got, wanted = reply_status(reply), row.expect[persona]
            if got != wanted:
                seen.append(f"{row.method} {url} as {persona}: {got}, wanted {wanted}")
            if row.data is not None and wanted != 303 and state(task) != before:
                seen.append(f"{row.method} {url} as {persona} wrote: {before} → {state(task)}")
    assert seen == [], "\n".join(seen)
