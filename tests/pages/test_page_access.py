"""Who may open or post every page route: a table with a row per route the pages serve,
each asked by someone signed out, by a non-member (dave), a viewer (carol), an editor
(bob) and the editor with a forged CSRF token. A page route in no row fails the suite, so
a new page is given its row."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from pages.conftest import Pages, csrf_of

# The personas of a row, in the order they are asked; "forged" is bob with a wrong token.
PERSONAS = ("anon", "dave", "carol", "forged", "bob")
SIGN_IN = "sign-in"  # a 303 to the sign-in page
DAILY = {
    "title": "Made by the table",
    "objective": "",
    "notes": "",
    "zone": "America/New_York",
    "frequency": "daily",
    "daily_time": "01:00",
    "command": "true",
    "cwd": ".",
    "restart": "resume",
    "condition_kind": "",
}


@dataclass(frozen=True)
class Ids:
    workspace: str
    schedule: str
    revision: Callable[[], int]


Build = Callable[[Ids, str], tuple[str, dict[str, Any] | None]]


@dataclass(frozen=True)
class Row:
    method: str
    template: str
    build: Build
    expect: dict[str, int | str]


def get(path: str) -> Build:
    return lambda ids, _csrf: (path.format(ws=ids.workspace, s=ids.schedule), None)


def post(path: str, **data: Any) -> Build:
    def build(ids: Ids, csrf: str) -> tuple[str, dict[str, Any] | None]:
        fields = {k: (v(ids) if callable(v) else v) for k, v in data.items()}
        return path.format(ws=ids.workspace, s=ids.schedule), {"csrf": csrf, **fields}

    return build


def every(status: int | str, **others: int | str) -> dict[str, int | str]:
    return {persona: others.get(persona, status) for persona in PERSONAS}


def member_read(status: int = 200) -> dict[str, int | str]:
    return every(status, anon=SIGN_IN, dave=404)


def member_write(status: int | str) -> dict[str, int | str]:
    return every(status, anon=SIGN_IN, dave=404, carol=403, forged=403)


def editor_page() -> dict[str, int | str]:
    """A page only editors get (a GET: no token to forge)."""
    return every(200, anon=SIGN_IN, dave=404, carol=403)


W = "/w/{ws}/schedules"
S = W + "/{s}"
ROWS = [
    Row("GET", "/login", get("/login"), every(200)),
    # The sign-in form needs the token its own page set: a post without it is refused.
    Row("POST", "/login", post("/login", handle="bob", password="x"), every(403)),
    Row("GET", "/static/{name}", get("/static/kalends.css"), every(200)),
    Row("GET", "/", get("/"), every(200, anon=SIGN_IN)),
    Row("POST", "/theme", post("/theme", theme="dark"), every(303, anon=SIGN_IN, forged=403)),
    Row("GET", "/w/{workspace}/schedules", get(W), member_read()),
    Row("GET", "/w/{workspace}/schedules/{schedule}", get(S), member_read()),
    Row("GET", "/w/{workspace}/schedules/{schedule}/ledger", get(S + "/ledger"), member_read()),
    Row("GET", "/w/{workspace}/schedules/{schedule}/simulate", get(S + "/simulate"), member_read()),
    Row(
        "GET",
        "/w/{workspace}/schedules/{schedule}/requests/{request_id}",
        get(S + "/requests/web-unknown-request"),
        member_read(),
    ),
    Row(
        "GET",
        "/w/{workspace}/schedules/{schedule}/passages/{passage}",
        get(S + "/passages/psg_0000000000000000"),
        member_read(404),
    ),
    Row(
        "GET",
        "/w/{workspace}/schedules/{schedule}/passages/{passage}/log",
        get(S + "/passages/psg_0000000000000000/log"),
        member_read(404),
    ),
    Row("GET", "/w/{workspace}/schedules/new", get(W + "/new"), editor_page()),
    Row("GET", "/w/{workspace}/schedules/{schedule}/edit", get(S + "/edit"), editor_page()),
    Row(
        "POST",
        "/w/{workspace}/schedules/preview",
        post(W + "/preview", **DAILY),
        member_write(200),
    ),
    Row(
        "POST",
        "/w/{workspace}/schedules/new",
        post(W + "/new", op="save", **DAILY),
        member_write(303),
    ),
    Row(
        "POST",
        "/w/{workspace}/schedules/{schedule}/edit",
        post(S + "/edit", op="save", revision=lambda ids: ids.revision(), **DAILY),
        member_write(303),
    ),
    Row(
        "POST",
        "/w/{workspace}/schedules/{schedule}/control",
        post(
            S + "/control",
            action="pause",
            request_id="web-table-pause-1",
            revision=lambda ids: ids.revision(),
        ),
        member_write(303),
    ),
    # A pairing link nobody made: its page says so to anyone, and its confirmation needs
    # the token its own page set (refused before the link is looked up).
    Row("GET", "/pair/{secret}", get("/pair/unknown-pairing-link"), every(404)),
    Row("POST", "/pair/{secret}", post("/pair/unknown-pairing-link"), every(403)),
    # Everyone signed in pairs devices of their own (the link shown once: 201).
    Row(
        "POST",
        "/settings/devices",
        post("/settings/devices", name="Table device", expires_in_days="1"),
        every(201, anon=SIGN_IN, forged=403),
    ),
    # A device nobody paired.
    Row(
        "POST",
        "/settings/devices/{device_id}/revoke",
        post("/settings/devices/00000000-0000-0000-0000-00000000d0d0/revoke"),
        every(404, anon=SIGN_IN, forged=403),
    ),
    # Last: it ends the session it is sent with.
    Row("POST", "/logout", post("/logout"), every(303, anon=SIGN_IN, forged=403)),
]


# The page modules this table covers; each other page module has a table of its own, in
# the test file named beside it here, which asks the same of its routes.
COVERED = (
    "kalends.web.static",
    "kalends.web.pages_auth",
    "kalends.web.pages_editor",
    "kalends.web.pages_missions",
    "kalends.web.pages_passages",
    "kalends.web.pages_simulate",
)
TABLES_ELSEWHERE = {
    "kalends.web.pages_tasks": "test_task_page_access.py",
    "kalends.web.pages_task": "test_task_detail_access.py",
    "kalends.web.pages_settings": "test_settings_page_access.py",
    "kalends.web.pages_conversations": "test_conversation_page_access.py",
    "kalends.web.pages_questions": "test_question_page_access.py",
}


def page_routes(app: FastAPI, modules: tuple[str, ...] = COVERED) -> set[tuple[str, str]]:
    """(method, template) of every route the given page modules serve."""
    found = set()
    for route in app.router.routes:
        if isinstance(route, APIRoute) and route.endpoint.__module__ in modules:
            found |= {(method, route.path) for method in route.methods or ()}
    return found


def test_every_page_module_has_an_access_table() -> None:
    from kalends.web import MODULES  # noqa: PLC0415

    names = {module.__name__ for module in MODULES}
    assert names == set(COVERED) | set(TABLES_ELSEWHERE)


def test_every_page_route_has_its_row_in_the_table(pages: Pages) -> None:
    app = pages.world.client.app
    assert isinstance(app, FastAPI)
    served = page_routes(app)
    assert ("GET", "/w/{workspace}/schedules/{schedule}") in served  # not vacuous
    rows = {(row.method, row.template) for row in ROWS}
    assert served - rows == set(), "page routes in no row"
    assert rows - served == set(), "rows of routes nobody serves"


def reply_status(reply: Any) -> int | str:
    """A reply's status, or :data:`SIGN_IN` for a redirect to the sign-in page."""
    location = reply.headers.get("location", "")
    if reply.status_code == 303 and (location == "/login" or location.startswith("/login?next=")):
        return SIGN_IN
    return int(reply.status_code)


def ask_everyone(
    rows: Sequence[Any],
    personas: Sequence[str],
    clients: dict[str, TestClient],
    tokens: dict[str, str],
    ids: Any,
) -> list[str]:
    """Sends each row's request (``row.build(ids, token)``: a path, and a form to post or
    ``None`` to get) as each persona; what differs from the row's ``expect``, in words."""
    seen: list[str] = []
    for row in rows:
        for persona in personas:
            url, data = row.build(ids, tokens[persona])
            client = clients[persona]
            if data is None:
                reply = client.get(url, follow_redirects=False)
            else:
                reply = client.post(url, data=data, follow_redirects=False)
            got, wanted = reply_status(reply), row.expect[persona]
            if got != wanted:
                seen.append(f"{row.method} {url} as {persona}: {got}, wanted {wanted}")
    return seen


def test_each_persona_gets_what_its_role_allows(pages: Pages) -> None:
    alice = pages.world.actors["alice"].id
    sid = pages.schedule("alice", "Nightly")
    pages.world.services.schedules.control(
        alice, sid, "play", request_id="req-table-play-0", expected_revision=1
    )

    def revision() -> int:
        return int(pages.world.services.schedules.detail(alice, sid)["revision"])

    ids = Ids(str(pages.world.home.id), sid, revision)
    clients: dict[str, TestClient] = {"anon": pages.client("alice")}
    tokens = {"anon": ""}
    for who in ("dave", "carol", "bob"):
        clients[who] = pages.sign_in(who)
        tokens[who] = csrf_of(clients[who].get("/").text)
    clients["forged"], tokens["forged"] = clients["bob"], "forged-token"
    seen = ask_everyone(ROWS, PERSONAS, clients, tokens, ids)
    assert seen == [], "\n".join(seen)
