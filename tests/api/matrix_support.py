"""The machinery of the authorization matrix (tests/api/test_authorization_matrix.py):
who calls (the matrix's columns), what each route answers each of them (its access),
one request per route (its row), and the runner that sends every row to every column.

A refusal must write nothing: every refused cell runs under ``nothing_written`` and with
the server's runtime directory compared before and after. Since it writes nothing, the
refused columns of a row share one request; each success gets a request of its own,
built on a state where it can succeed (a fresh schedule, token, guest, directory…).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal
from uuid import UUID

from fastapi import FastAPI
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.testclient import TestClient
from sqlalchemy import select, update
from sqlalchemy.engine import Connection
from starlette.routing import compile_path

from api.conftest import PASSWORD, ApiWorld
from api.test_tasks_support import Reply
from kalends.api.context import SESSION_COOKIE
from kalends.identity import Actor, Role
from kalends.missions.document import dump_body, load_body
from kalends.missions.runtime import PassageStart
from kalends.missions.runtime.process import ProcessRuntime
from kalends.storage.mission_tables import schedules
from kalends.storage.testing import nothing_written
from missions.conftest import daily_config

# --- who calls: the columns -------------------------------------------------------------------

Kind = Literal["none", "token", "session", "session-without-csrf", "passage"]


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    who: str | None
    kind: Kind


NONE = Column("no-credentials", None, "none")
EXPIRED = Column("expired-token", "erin", "token")
REVOKED = Column("revoked-token", "frank", "token")
VIEWER = Column("viewer", "carol", "token")
EDITOR = Column("editor", "bob", "token")
OWNER = Column("owner", "alice", "token")
# dave owns the ``away`` workspace only: a member of another workspace, none of home's.
STRANGER = Column("stranger", "dave", "token")
# alice again, through a login session cookie: with its CSRF header, and without it.
SESSION = Column("owner-session", "alice", "session")
NO_CSRF = Column("session-without-csrf", "alice", "session-without-csrf")
# A running passage's own token (``Authorization: Passage …``): it speaks for no person.
PASSAGE = Column("passage-token", None, "passage")

COLUMNS: tuple[Column, ...] = (
    NONE,
    EXPIRED,
    REVOKED,
    VIEWER,
    EDITOR,
    OWNER,
    STRANGER,
    SESSION,
    NO_CSRF,
    PASSAGE,
)

# --- what a column gets: the access of a route ---------------------------------------------------

# (status, error code); the code is None for a success.
Expect = tuple[int, str | None]

UNAUTHENTICATED: Expect = (401, "unauthenticated")
PASSAGE_REFUSED: Expect = (401, "invalid-passage-token")
FORBIDDEN: Expect = (403, "forbidden")
CSRF_FAILED: Expect = (403, "csrf-failed")
SESSION_REQUIRED: Expect = (403, "session-required")
NOT_FOUND: Expect = (404, "not-found")

UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def ok(status: int = 200) -> Expect:
    return (status, None)


@dataclass(frozen=True, slots=True)
class Access:
    """What each column gets. The owner's session gets what the owner's token gets
    (``session``: unless said otherwise), but a CSRF refusal on an unsafe method without
    the header; the passage token gets what no credentials get (``passage``)."""

    viewer: Expect
    editor: Expect
    owner: Expect
    stranger: Expect
    session: Expect | None = None
    unauthenticated: Expect = UNAUTHENTICATED
    passage: Expect | None = None
    # A public route: the session without its CSRF header is not refused either.
    public: bool = False

    def expect(self, column: Column, method: str) -> Expect:
        session = self.owner if self.session is None else self.session
        match column.kind:
            case "none":
                return self.unauthenticated
            case "passage":
                return self.unauthenticated if self.passage is None else self.passage
            case "session":
                return session
            case "session-without-csrf":
                # The CSRF check comes first, before any role or session-only check.
                return CSRF_FAILED if method in UNSAFE and not self.public else session
            case "token":
                pass
        if column in (EXPIRED, REVOKED):
            return self.unauthenticated
        return {
            VIEWER.name: self.viewer,
            EDITOR.name: self.editor,
            OWNER.name: self.owner,
            STRANGER.name: self.stranger,
        }[column.name]


def public(status: int = 200) -> Access:
    """Anyone, with any credentials or none: the route does not look at them."""
    s = ok(status)
    return Access(s, s, s, s, unauthenticated=s, public=True)


def public_refusal(refusal: Expect) -> Access:
    """A public route given bad credentials in its input: everyone is refused alike."""
    return Access(refusal, refusal, refusal, refusal, unauthenticated=refusal, public=True)


def read(status: int = 200, stranger: Expect = NOT_FOUND) -> Access:
    """Any member of the workspace reads; a non-member gets ``stranger``: by default what
    a workspace that does not exist gets, so nothing tells them the ID is taken."""
    return Access(ok(status), ok(status), ok(status), stranger)


def write(status: int = 200, stranger: Expect = NOT_FOUND) -> Access:
    """Editors and owners; a viewer, who sees the workspace, is refused (403)."""
    return Access(FORBIDDEN, ok(status), ok(status), stranger)


def owners_only(status: int = 200, stranger: Expect = NOT_FOUND) -> Access:
    """Owners only; an editor is refused too."""
    return Access(FORBIDDEN, FORBIDDEN, ok(status), stranger)


def personal(status: int = 200) -> Access:
    """Every person, on what is their own."""
    return Access(ok(status), ok(status), ok(status), ok(status))


def server_owner(status: int = 200) -> Access:
    """The server's owner account (alice) only, whatever its roles elsewhere."""
    return Access(FORBIDDEN, FORBIDDEN, ok(status), FORBIDDEN)


def alices_settings(status: int = 200) -> Access:
    """Alice's own settings: everyone else is refused, the server's owner only as herself."""
    return Access(FORBIDDEN, FORBIDDEN, ok(status), FORBIDDEN)


def session_only(status: int = 200) -> Access:
    """A login session only: an API token, however valid, is refused."""
    return Access(
        SESSION_REQUIRED, SESSION_REQUIRED, SESSION_REQUIRED, SESSION_REQUIRED, session=ok(status)
    )


def alices_only(status: int = 200) -> Access:
    """Alice's own object: everyone else is told it does not exist."""
    return Access(NOT_FOUND, NOT_FOUND, ok(status), NOT_FOUND)


def passage_only(status: int = 200) -> Access:
    """A passage's own token only: no person's token or cookie speaks for a passage."""
    r = PASSAGE_REFUSED
    return Access(r, r, r, r, session=r, unauthenticated=r, passage=ok(status), public=True)


# --- one request: the rows -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Call:
    """A request, and what to read back after its success (through the services)."""

    url: str
    json: Any = None
    params: dict[str, Any] | None = None
    after: Callable[[Reply, TestClient], None] | None = None


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    method: str
    template: str
    access: Access
    build: Callable[[Matrix, Column], Call]
    # "success": each success gets a request of its own (it changes the state, or is about
    # the caller's own objects); "always": each cell does (a refusal counts for the login
    # throttle); "never": a read of shared objects.
    fresh: Literal["never", "success", "always"] = "never"


# --- the world the rows run in -----------------------------------------------------------------


@dataclass(slots=True)
class Matrix:
    """The ``api`` world, its runtime directory (with one admitted passage, whose token is
    the passage column's credential) and the shared objects of the rows."""

    api: ApiWorld
    runtime: ProcessRuntime
    passage_token: str
    shared: dict[str, Any] = field(default_factory=dict)
    _serial: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def home(self) -> str:
        return str(self.api.home.id)

    @property
    def away(self) -> str:
        return str(self.api.away.id)

    def actor(self, who: str) -> str:
        return str(self.api.actors[who].id)

    def serial(self) -> int:
        return next(self._serial)

    def request_id(self, what: str) -> str:
        return f"{what}-{self.serial():06d}"

    def once(self, key: str, make: Callable[[], Any]) -> Any:
        """A shared object of the rows, made on first use."""
        if key not in self.shared:
            self.shared[key] = make()
        return self.shared[key]

    # --- credentials

    def credentials(self, column: Column) -> tuple[TestClient, dict[str, str]]:
        """The client and headers a column's request goes with."""
        api = self.api
        # What a success set (a login's or a login link's cookie) goes with no one else.
        api.client.cookies.clear()
        match column.kind:
            case "none":
                return api.client, {}
            case "token":
                assert column.who is not None
                return api.client, api.headers(column.who)
            case "passage":
                return api.client, {"Authorization": f"Passage {self.passage_token}"}
        # A session of its own per request: a logout or a password change ends sessions.
        client = TestClient(api.client.app, raise_server_exceptions=False)
        reply = client.post("/api/auth/login", json={"handle": column.who, "password": PASSWORD})
        assert reply.status_code == 200, reply.text
        self.shared["last-session"] = client.cookies.get(SESSION_COOKIE)
        csrf = {"X-CSRF-Token": reply.json()["csrfToken"]}
        return client, csrf if column.kind == "session" else {}

    # --- objects

    def guest(self, *, member: Role | None = None, password: bool = False) -> Actor:
        """A fresh person (no list, no workspace) — a workspace member of home if asked."""
        n = self.serial()
        actor = self.api.services.directory.add_actor(f"guest{n}", f"Guest {n}")
        if member is not None:
            self.api.services.workspaces.set_member(
                self.api.actors["alice"].id, self.api.home.id, actor.id, member
            )
        if password:
            self.api.accounts.ensure_account(actor.id)
            self.api.accounts.set_password(actor.id, PASSWORD, current_password=None)
        return actor

    def directory(self) -> Path:
        path = self.api.root / f"directory-{self.serial()}"
        path.mkdir()
        return path

    def spare_workspace(self) -> str:
        """An empty workspace with home's members (alice owns, bob edits, carol views)."""
        ws = self.api.services.workspaces
        alice = self.api.actors["alice"].id
        found = ws.add(alice, self.directory(), f"spare {self.serial()}")
        ws.set_member(alice, found.id, self.api.actors["bob"].id, Role.EDITOR)
        ws.set_member(alice, found.id, self.api.actors["carol"].id, Role.VIEWER)
        return str(found.id)

    def token_of(self, who: str) -> str:
        info, _secret = self.api.accounts.create_token(
            self.api.actors[who].id, "matrix", expires_in=None
        )
        return str(info.id)

    def schedule(self, steps: tuple[str, ...] = (), workspace: str | None = None) -> str:
        """A fresh schedule (bob's, in home unless said) brought through ``steps``:
        controls, or ``interrupt`` (what a restart leaves: running and Interrupted)."""
        api = self.api
        handle = "dave" if workspace == self.away else "bob"
        who = api.actors[handle].id
        receipt = api.services.schedules.create(
            who,
            workspace or self.home,
            daily_config(title=f"Matrix {self.serial()}"),
            request_id=self.request_id("create"),
        )
        mission = str(receipt.mission_id)
        for step in steps:
            if step == "interrupt":
                self._interrupt(mission)
                continue
            api.services.schedules.control(
                who,
                mission,
                step,
                request_id=self.request_id(step),
                expected_revision=self.revision(mission, handle),
            )
        return mission

    def revision(self, mission: str, who: str = "alice") -> int:
        value: int = self.api.services.schedules.detail(self.api.actors[who].id, mission)[
            "revision"
        ]
        return value

    def _interrupt(self, mission: str) -> None:
        now, key = self.api.clock.now(), UUID(mission)

        def run(conn: Connection) -> None:
            row = conn.execute(
                select(schedules.c.config, schedules.c.body).where(schedules.c.id == key)
            ).one()
            body = replace(load_body(row.body), interruption="restart", interrupted_at=now)
            text = dump_body(body)
            conn.execute(
                update(schedules)
                .where(schedules.c.id == key)
                .values(body=text, size=len(row.config.encode()) + len(text.encode()))
            )

        self.api.store.run(run)

    def admit_pending(self, mission: str) -> str:
        """Admits the schedule's pending passage in the runtime directory (launching
        nothing); its passage ID."""
        pending = self.api.services.schedules.detail(self.api.actors["alice"].id, mission)[
            "pending"
        ]
        self.runtime.admit(
            PassageStart(
                passage_id=pending["passageId"],
                session_id=pending["sessionId"],
                message_id=pending["messageId"],
                schedule_id=mission,
                workspace=self.api.home.path,
                command=("true",),
            )
        )
        passage: str = pending["passageId"]
        return passage


def make_matrix(api: ApiWorld) -> Matrix:
    runtime = ProcessRuntime(api.root / "runtime", clock=api.clock)
    runtime.admit(
        PassageStart(
            passage_id="psg_matrix",
            session_id="ses_matrix",
            message_id="msg_matrix",
            schedule_id="sch_matrix",
            workspace=api.home.path,
            command=("true",),
        )
    )
    # Each token's first use records it (lastUsedAt): done here, so that a refusal in a
    # row writes nothing of its own.
    for who in ("alice", "bob", "carol", "dave"):
        assert api.client.get("/api/auth/me", headers=api.headers(who)).status_code == 200
    return Matrix(api=api, runtime=runtime, passage_token=runtime.token("psg_matrix", "ses_matrix"))


# --- the runner -----------------------------------------------------------------------------------


def files_of(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@contextmanager
def files_unchanged(root: Path) -> Iterator[None]:
    before = files_of(root)
    yield
    after = files_of(root)
    changed = sorted(set(before) ^ set(after) | {k for k in before if after.get(k) != before[k]})
    assert not changed, f"runtime files changed: {changed}"


def matches(template: str, url: str) -> bool:
    regex, _format, _convertors = compile_path(template)
    return regex.match(url.split("?", maxsplit=1)[0]) is not None


def send(m: Matrix, column: Column, method: str, call: Call) -> tuple[Reply, TestClient]:
    client, headers = m.credentials(column)
    reply = client.request(
        method,
        call.url,
        headers=headers,
        json=call.json,
        params=call.params,
        follow_redirects=False,
    )
    return reply, client


def run_rows(m: Matrix, rows: list[Row], columns: tuple[Column, ...] = COLUMNS) -> list[str]:
    """Every row against every column; the cells that went wrong, one line each."""
    failures: list[str] = []
    for row in rows:
        shared: Call | None = None
        for column in columns:
            status, code = row.access.expect(column, row.method)
            where = f"{row.method} {row.template} [{row.name}] as {column.name}"
            if row.fresh == "always" or (row.fresh == "success" and code is None):
                call = row.build(m, column)
            else:
                if shared is None:
                    shared = row.build(m, column)
                call = shared
            if not matches(row.template, call.url):
                failures.append(f"{where}: {call.url} is not under its template")
                continue
            failures.extend(
                f"{where}: {problem}" for problem in run_cell(m, row, column, call, status, code)
            )
    return failures


def run_cell(
    m: Matrix, row: Row, column: Column, call: Call, status: int, code: str | None
) -> list[str]:
    if code is None:
        reply, client = send(m, column, row.method, call)
        if reply.status_code != status:
            return [f"expected {status}, got {reply.status_code} {reply.text[:300]}"]
        if call.after is not None:
            try:
                call.after(reply, client)
            except AssertionError as exc:
                return [f"state after the success: {exc}"]
        return []
    client, headers = m.credentials(column)
    try:
        with nothing_written(m.api.store), files_unchanged(m.runtime.root):
            reply = client.request(
                row.method,
                call.url,
                headers=headers,
                json=call.json,
                params=call.params,
                follow_redirects=False,
            )
    except AssertionError as exc:
        return [f"a refusal wrote something: {exc}"]
    if reply.status_code != status:
        return [f"expected {status} {code}, got {reply.status_code} {reply.text[:300]}"]
    body = reply.json()
    if not isinstance(body, dict) or set(body) != {"code", "message", "details"}:
        return [f"not an error body: {reply.text[:300]}"]
    if body["code"] != code:
        return [f"expected code {code}, got {body['code']}: {body['message']}"]
    return []


# --- the routes the application serves ------------------------------------------------------------

# Served by FastAPI itself, or the bare index of where things are (no API).
NOT_API = frozenset({"/openapi.json", "/docs", "/docs/oauth2-redirect", "/api"})
# The web pages' routes: their own table is tests/pages/test_page_access.py.
PAGES_MODULE = "kalends.web"


def served_routes(app: FastAPI) -> list[tuple[str, str]]:
    """(method, path template) of every FastAPI route, in routing order. FastAPI 0.137+
    keeps included routers as one opaque entry of ``app.routes``: read through them."""
    served: list[tuple[str, str]] = []
    for context in iter_route_contexts(app.routes):
        path = context.path
        route = context.original_route
        if not isinstance(route, APIRoute) or path is None or path in NOT_API:
            continue
        if route.endpoint.__module__.startswith(PAGES_MODULE):
            continue
        served.extend((method, path) for method in sorted(context.methods or ()))
    return served


def template_of(served: list[tuple[str, str]], method: str, url: str) -> tuple[str, str] | None:
    """The served route a concrete request lands on (the first that matches, as routing)."""
    for served_method, template in served:
        if served_method == method and matches(template, url):
            return (served_method, template)
    return None


def uncovered(
    served: list[tuple[str, str]], covered: set[tuple[str, str]]
) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(served but in no table, in a table but not served)."""
    return set(served) - covered, covered - set(served)
