"""Who may open or post the task list pages (kalends.web.pages_tasks): a table with a row
per route, each asked by someone signed out, a non-member (dave), a viewer (carol), the
editor with a forged CSRF token, the editor (bob) and the owner (alice), on the list
``home``. A route of the module in no row fails the suite, so a new route is given its
row. Each write is sent on a task of its own, so that one persona's write does not
change what the next one is asked."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

from kalends.tasks import Task
from pages.conftest import Pages, csrf_of
from pages.test_page_access import SIGN_IN, ask_everyone, page_routes

PERSONAS = ("anon", "dave", "carol", "forged", "bob", "alice")
MODULE = ("kalends.web.pages_tasks",)


@dataclass(frozen=True)
class Ids:
    list: str
    revision: Callable[[], int]
    """The list's revision now."""
    task: Callable[[str], Task]
    """A fresh task: ``open``, ``done`` (completed), ``series`` (a series' open root)."""


Build = Callable[[Ids, str], tuple[str, dict[str, Any] | None]]


@dataclass(frozen=True)
class Row:
    method: str
    template: str
    build: Build
    expect: dict[str, int | str]


def every(status: int | str, **others: int | str) -> dict[str, int | str]:
    return {persona: others.get(persona, status) for persona in PERSONAS}


def member_write(status: int | str) -> dict[str, int | str]:
    return every(status, anon=SIGN_IN, dave=404, carol=403, forged=403)


def owner_write(status: int | str) -> dict[str, int | str]:
    return every(status, anon=SIGN_IN, dave=404, carol=403, forged=403, bob=403)


def get(path: str) -> Build:
    return lambda ids, _csrf: (path.format(list=ids.list), None)


def list_post(path: str, **data: Any) -> Build:
    def build(ids: Ids, csrf: str) -> tuple[str, dict[str, Any] | None]:
        fields = {k: (v(ids) if callable(v) else v) for k, v in data.items()}
        return path.format(list=ids.list), {"csrf": csrf, **fields}

    return build


def task_post(action: str, kind: str = "open", **data: Any) -> Build:
    """A post to ``/tasks/{task}/ACTION`` on a fresh task of ``kind``; a value of ``data``
    that is callable is given the IDs and that task."""

    def build(ids: Ids, csrf: str) -> tuple[str, dict[str, Any] | None]:
        task = ids.task(kind)
        fields = {k: (v(ids, task) if callable(v) else v) for k, v in data.items()}
        form = {"csrf": csrf, "revision": task.revision, "list": ids.list, **fields}
        return f"/tasks/{task.id}/{action}", form

    return build


ROWS = [
    Row("GET", "/lists", get("/lists"), every(200, anon=SIGN_IN)),
    # Anyone signed in may make a list of their own.
    Row("POST", "/lists", list_post("/lists", name="Mine"), every(303, anon=SIGN_IN, forged=403)),
    Row("GET", "/lists/{list_id}", get("/lists/{list}"), every(200, anon=SIGN_IN, dave=404)),
    Row(
        "POST",
        "/lists/{list_id}/tasks",
        list_post("/lists/{list}/tasks", title="Made by the table"),
        member_write(303),
    ),
    Row("POST", "/tasks/{task}/complete", task_post("complete"), member_write(303)),
    Row("POST", "/tasks/{task}/reopen", task_post("reopen", "done"), member_write(303)),
    Row("POST", "/tasks/{task}/skip", task_post("skip", "series"), member_write(303)),
    Row(
        "POST",
        "/tasks/{task}/move",
        task_post("move", before=lambda ids, _task: str(ids.task("open").id)),
        member_write(303),
    ),
    Row(
        "POST",
        "/lists/{list_id}/share",
        list_post(
            "/lists/{list}/share", member="erin", role="viewer", revision=lambda i: i.revision()
        ),
        owner_write(303),
    ),
    # Last, and making the list active again: the list stays open to the rows above.
    Row(
        "POST",
        "/lists/{list_id}/archive",
        list_post("/lists/{list}/archive", archived="false", revision=lambda i: i.revision()),
        owner_write(303),
    ),
]


def test_every_route_of_the_task_pages_has_its_row(pages: Pages) -> None:
    app = pages.world.client.app
    assert isinstance(app, FastAPI)
    served = page_routes(app, MODULE)
    assert ("GET", "/lists/{list_id}") in served  # not vacuous
    rows = {(row.method, row.template) for row in ROWS}
    assert served - rows == set(), "task page routes in no row"
    assert rows - served == set(), "rows of routes nobody serves"


def test_each_persona_gets_what_its_role_allows(pages: Pages) -> None:
    services = pages.world.services
    alice = pages.world.actors["alice"].id
    home = pages.world.home_list.id

    def revision() -> int:
        return services.directory.get_list(alice, home).revision

    def task(kind: str) -> Task:
        made = services.tasks.create(alice, home, f"A {kind} task")
        if kind == "done":
            return services.tasks.complete(alice, made.id, made.revision)
        if kind == "series":
            rule = {"kind": "daily", "interval_days": 1}
            return services.changes.repeat(alice, made.id, made.revision, rule).task
        return made

    ids = Ids(str(home), revision, task)
    # Signed out: a client of its own, with no cookie.
    anon = TestClient(pages.world.client.app, base_url="http://testserver")
    clients: dict[str, TestClient] = {"anon": anon}
    tokens = {"anon": ""}
    for who in ("dave", "carol", "bob", "alice"):
        clients[who] = pages.sign_in(who)
        tokens[who] = csrf_of(clients[who].get("/lists").text)
    clients["forged"], tokens["forged"] = clients["bob"], "forged-token"
    seen = ask_everyone(ROWS, PERSONAS, clients, tokens, ids)
    assert seen == [], "\n".join(seen)
