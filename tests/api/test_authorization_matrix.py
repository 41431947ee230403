"""The authorization matrix of every route that test_tasks_access.py's table does not hold:
health, authentication and tokens, workspaces and their members, mission schedules, a
passage's log, the passage report callback, actors and their reminder destinations, and
the listing of passages. Each route against every caller: no
credentials, an expired token (erin), a revoked token (frank), the viewer (carol), the
editor (bob), the owner (alice, also the server's owner account), a member of another
workspace only (dave), the owner's login session with and without its CSRF header, and a
running passage's own token. Refusals write nothing (database and runtime directory);
successes run on a state where they can succeed and are read back through the services.
A last test checks that every served route is in this table or in test_tasks_access.py's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from uuid import UUID

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient

from api.conftest import PASSWORD, ApiWorld
from api.matrix_support import (
    COLUMNS,
    CSRF_FAILED,
    EXPIRED,
    NO_CSRF,
    NOT_FOUND,
    REVOKED,
    UNAUTHENTICATED,
    VIEWER,
    Call,
    Column,
    Expect,
    Matrix,
    Row,
    alices_only,
    alices_settings,
    files_unchanged,
    make_matrix,
    matches,
    owners_only,
    passage_only,
    personal,
    public,
    public_refusal,
    read,
    run_rows,
    served_routes,
    server_owner,
    session_only,
    template_of,
    uncovered,
    write,
)
from api.questions_support import ui_answer
from api.test_tasks_access import routes as task_routes
from api.test_tasks_support import Reply
from kalends.conversations import open_passage_conversation
from kalends.errors import NotFound, Unauthenticated
from kalends.identity import Role
from kalends.missions import nodes, passage_beats
from kalends.missions.runtime import PassageStart
from kalends.missions.runtime import shim as records
from kalends.missions.runtime.beats import BEATS_PATH, beat_token
from kalends.questions import Question
from kalends.storage.testing import nothing_written
from missions.conftest import daily_config

NEW_PASSWORD = "another horse battery"
NIL = "00000000-0000-0000-0000-000000000000"


def person(column: Column) -> str:
    """Whose objects a column's request is about: the caller's own, else alice's."""
    return column.who if column.who in ("alice", "bob", "carol", "dave") else "alice"


def actor_id(m: Matrix, column: Column) -> Any:
    return m.api.actors[person(column)].id


def must_raise(error: type[Exception], action: Any) -> None:
    try:
        action()
    except error:
        return
    raise AssertionError(f"expected {error.__name__}")


# --- health ---------------------------------------------------------------------------------------


def _healthz(_m: Matrix, _c: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        assert reply.json() == {"status": "ok"}

    return Call("/healthz", after=after)


def _readyz(_m: Matrix, _c: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        assert reply.json() == {"status": "ready", "checks": {"database": True}}

    return Call("/readyz", after=after)


HEALTH = [
    Row("liveness", "GET", "/healthz", public(), _healthz),
    Row("readiness", "GET", "/readyz", public(), _readyz),
]

# --- authentication and tokens --------------------------------------------------------------------


def _login(m: Matrix, _c: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        assert reply.json()["actor"] == {"id": m.actor("carol"), "handle": "carol"}

    return Call("/api/auth/login", json={"handle": "carol", "password": PASSWORD}, after=after)


def _wrong_login(m: Matrix, _c: Column) -> Call:
    # A guest of its own per cell: failures count for the login throttle (5 per handle).
    guest = m.guest(password=True)
    return Call("/api/auth/login", json={"handle": guest.handle, "password": NEW_PASSWORD})


def _link(m: Matrix, _c: Column) -> Call:
    secret = m.api.accounts.issue_login_link(m.api.actors["carol"].id)

    def after(reply: Reply, _client: TestClient) -> None:
        assert reply.headers["location"] == "/"
        assert "kalends_session=" in reply.headers["set-cookie"]
        # Used once: it opens no second session.
        must_raise(Unauthenticated, lambda: m.api.accounts.redeem_login_link(secret))

    return Call("/api/auth/link", params={"token": secret}, after=after)


def _used_link(m: Matrix, _c: Column) -> Call:
    secret = m.api.accounts.issue_login_link(m.api.actors["carol"].id)
    m.api.accounts.redeem_login_link(secret)
    return Call("/api/auth/link", params={"token": secret})


def _logout(m: Matrix, _c: Column) -> Call:
    def after(_reply: Reply, _client: TestClient) -> None:
        ended = m.shared["last-session"]
        must_raise(Unauthenticated, lambda: m.api.accounts.authenticate_session(ended))

    return Call("/api/auth/logout", after=after)


def _me(m: Matrix, column: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        body = reply.json()
        assert body["actor"]["handle"] == person(column), body
        assert body["kind"] == ("token" if column.kind == "token" else "session"), body

    return Call("/api/auth/me", after=after)


def _password(m: Matrix, _c: Column) -> Call:
    def after(_reply: Reply, _client: TestClient) -> None:
        accounts, alice = m.api.accounts, m.api.actors["alice"].id
        accounts.login("alice", NEW_PASSWORD)
        accounts.set_password(alice, PASSWORD, current_password=NEW_PASSWORD)  # as it was

    body = {"currentPassword": PASSWORD, "newPassword": NEW_PASSWORD}
    return Call("/api/auth/password", json=body, after=after)


def _exchange(m: Matrix, _c: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        made = reply.json()["token"]["id"]
        mine = {str(t.id): t.active for t in m.api.accounts.tokens(m.api.actors["carol"].id)}
        assert mine.get(made) is True, (made, mine)

    body = {"handle": "carol", "password": PASSWORD, "name": "matrix"}
    return Call("/api/auth/tokens/exchange", json=body, after=after)


def _wrong_exchange(m: Matrix, _c: Column) -> Call:
    guest = m.guest(password=True)
    body = {"handle": guest.handle, "password": NEW_PASSWORD, "name": "matrix"}
    return Call("/api/auth/tokens/exchange", json=body)


def _tokens(m: Matrix, column: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        listed = [t["id"] for t in reply.json()]
        assert listed == [str(t.id) for t in m.api.accounts.tokens(actor_id(m, column))]

    return Call("/api/tokens", after=after)


def _create_token(m: Matrix, _c: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        made = reply.json()["token"]["id"]
        assert made in {str(t.id) for t in m.api.accounts.tokens(m.api.actors["alice"].id)}

    return Call("/api/tokens", json={"name": "matrix"}, after=after)


def _revoke(m: Matrix, whose: str) -> Call:
    token = m.token_of(whose)

    def after(reply: Reply, _client: TestClient) -> None:
        assert reply.json()["active"] is False
        found = {str(t.id): t for t in m.api.accounts.tokens(m.api.actors[whose].id)}
        assert found[token].revoked_at is not None

    return Call(f"/api/tokens/{token}", after=after)


def _devices(m: Matrix, column: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        listed = [d["id"] for d in reply.json()]
        assert listed == [str(d.id) for d in m.api.accounts.devices(actor_id(m, column))]

    return Call("/api/auth/devices", after=after)


def _pair_device(m: Matrix, column: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        secret = reply.json()["pairingUrl"].rsplit("/", 1)[1]
        grant = m.api.accounts.redeem_pairing(secret)
        assert grant.principal.actor_id == actor_id(m, column)

    return Call("/api/auth/devices", json={"name": "matrix"}, after=after)


def _unpair(m: Matrix, whose: str) -> Call:
    link = m.api.accounts.pair_device_as(m.api.actors[whose].id, "matrix")
    device = m.api.accounts.redeem_pairing(link.secret).token_id

    def after(reply: Reply, _client: TestClient) -> None:
        assert reply.json()["active"] is False
        found = {d.id: d for d in m.api.accounts.devices(m.api.actors[whose].id)}
        assert found[device].revoked_at is not None

    return Call(f"/api/auth/devices/{device}", after=after)


AUTH = [
    Row("login", "POST", "/api/auth/login", public(), _login, fresh="success"),
    Row(
        "login, wrong password",
        "POST",
        "/api/auth/login",
        public_refusal(UNAUTHENTICATED),
        _wrong_login,
        fresh="always",
    ),
    Row("login link", "GET", "/api/auth/link", public(303), _link, fresh="success"),
    Row("used login link", "GET", "/api/auth/link", public_refusal(UNAUTHENTICATED), _used_link),
    Row("logout", "POST", "/api/auth/logout", session_only(204), _logout, fresh="success"),
    Row("who am I", "GET", "/api/auth/me", personal(), _me, fresh="success"),
    Row("password", "POST", "/api/auth/password", session_only(204), _password, fresh="success"),
    Row("exchange", "POST", "/api/auth/tokens/exchange", public(201), _exchange, fresh="success"),
    Row(
        "exchange, wrong password",
        "POST",
        "/api/auth/tokens/exchange",
        public_refusal(UNAUTHENTICATED),
        _wrong_exchange,
        fresh="always",
    ),
    Row("my tokens", "GET", "/api/tokens", personal(), _tokens, fresh="success"),
    Row("new token", "POST", "/api/tokens", session_only(201), _create_token, fresh="success"),
    Row(
        "revoke my token",
        "DELETE",
        "/api/tokens/{token_id}",
        personal(),
        lambda m, c: _revoke(m, person(c)),
        fresh="success",
    ),
    Row("my devices", "GET", "/api/auth/devices", personal(), _devices, fresh="success"),
    Row(
        "pair a device",
        "POST",
        "/api/auth/devices",
        personal(201),
        _pair_device,
        fresh="success",
    ),
    Row(
        "unpair my device",
        "DELETE",
        "/api/auth/devices/{device_id}",
        personal(),
        lambda m, c: _unpair(m, person(c)),
        fresh="success",
    ),
    # Devices are personal as tokens are: another person's is not found.
    Row(
        "unpair alice's device",
        "DELETE",
        "/api/auth/devices/{device_id}",
        alices_only(),
        lambda m, _c: _unpair(m, "alice"),
        fresh="success",
    ),
    # Tokens are personal: another person's token is not found, not forbidden (its
    # revocation looks it up among the caller's own tokens only).
    Row(
        "revoke alice's token",
        "DELETE",
        "/api/tokens/{token_id}",
        alices_only(),
        lambda m, _c: _revoke(m, "alice"),
        fresh="success",
    ),
]

# --- workspaces -----------------------------------------------------------------------------------
#
# dave, a member of ``away`` only, gets 404 on every route under home's ID, never 403:
# a workspace he has no role on is, to him, one that does not exist (workspace_role:
# the same NotFound as an unknown ID's), so no answer tells him that home's ID is taken.
# A viewer, who may see the workspace, is still refused a write with 403.

WS = "/api/workspaces/{id}"


def _workspaces(m: Matrix, column: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        listed = {w["id"] for w in reply.json()}
        assert listed == {str(w.id) for w in m.api.services.workspaces.list(actor_id(m, column))}
        assert (m.home in listed) is (person(column) != "dave")

    return Call("/api/workspaces", after=after)


def _add_workspace(m: Matrix, _c: Column) -> Call:
    path = m.directory()

    def after(reply: Reply, _client: TestClient) -> None:
        added = m.api.services.workspaces.get(m.api.actors["alice"].id, reply.json()["id"])
        assert added.path == str(path.resolve()) and added.name == "added"

    return Call("/api/workspaces", json={"path": str(path), "name": "added"}, after=after)


def _workspace(m: Matrix, _c: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        body = reply.json()
        assert body["id"] == m.home
        assert {x["handle"] for x in body["members"]} == {"alice", "bob", "carol"}

    return Call(f"/api/workspaces/{m.home}", after=after)


def _remove_workspace(m: Matrix, _c: Column) -> Call:
    spare = m.spare_workspace()

    def after(_reply: Reply, _client: TestClient) -> None:
        alice = m.api.actors["alice"].id
        must_raise(NotFound, lambda: m.api.services.workspaces.get(alice, spare))

    return Call(f"/api/workspaces/{spare}", after=after)


def _members(m: Matrix, _c: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        roles = {x["handle"]: x["role"] for x in reply.json()}
        assert roles == {"alice": "owner", "bob": "editor", "carol": "viewer"}

    return Call(f"/api/workspaces/{m.home}/members", after=after)


def _home_roles(m: Matrix) -> dict[str, str]:
    members = m.api.services.workspaces.members(m.api.actors["alice"].id, m.api.home.id)
    return {x.handle: x.role for x in members}


def _set_member(m: Matrix, _c: Column) -> Call:
    guest = m.guest()

    def after(reply: Reply, _client: TestClient) -> None:
        assert reply.json()["role"] == "viewer"
        assert _home_roles(m).get(guest.handle) == "viewer"

    return Call(
        f"/api/workspaces/{m.home}/members/{guest.id}", json={"role": "viewer"}, after=after
    )


def _remove_member(m: Matrix, _c: Column) -> Call:
    guest = m.guest(member=Role.VIEWER)

    def after(_reply: Reply, _client: TestClient) -> None:
        assert guest.handle not in _home_roles(m)

    return Call(f"/api/workspaces/{m.home}/members/{guest.id}", after=after)


WORKSPACES = [
    Row("my workspaces", "GET", "/api/workspaces", personal(), _workspaces, fresh="success"),
    # Registering a directory is the server owner account's alone (passages run commands
    # in it as the server's user): bob, carol and dave are refused whatever their roles.
    Row(
        "register a directory",
        "POST",
        "/api/workspaces",
        server_owner(201),
        _add_workspace,
        fresh="success",
    ),
    Row("workspace", "GET", WS, read(), _workspace),
    Row("unregister", "DELETE", WS, owners_only(204), _remove_workspace, fresh="success"),
    Row("members", "GET", WS + "/members", read(), _members),
    Row(
        "set a member",
        "PUT",
        WS + "/members/{actorID}",
        owners_only(),
        _set_member,
        fresh="success",
    ),
    Row(
        "remove a member",
        "DELETE",
        WS + "/members/{actorID}",
        owners_only(204),
        _remove_member,
        fresh="success",
    ),
]

# --- mission schedules ----------------------------------------------------------------------------
#
# dave gets 404 here too, naming the workspace: every schedule route under a workspace
# checks the caller's role on it before it looks the schedule up (ScheduleService, in
# the operation's transaction), so a non-member learns nothing of the schedules, not
# even whether a mission ID exists, nor whether the workspace's does.

SCHEDULED = WS + "/missions/scheduled"
SCHEDULE = WS + "/missions/{missionID}/schedule"
# A schedule by its ID alone: dave, no member of its workspace, is told it is not there.
MISSION = "/api/missions/{id}"
PASSAGE_LOG = WS + "/missions/{missionID}/passages/{passageID}/log"


def _scheduled(m: Matrix, tail: str = "") -> str:
    return f"/api/workspaces/{m.home}/missions/scheduled{tail}"


def _schedule(m: Matrix, mission: str, tail: str = "", workspace: str | None = None) -> str:
    return f"/api/workspaces/{workspace or m.home}/missions/{mission}/schedule{tail}"


def _readable(m: Matrix) -> dict[str, str]:
    """The schedule the reads read: created, played, a Run now passage pending and
    admitted in the runtime directory."""

    def make() -> dict[str, str]:
        services, bob = m.api.services, m.api.actors["bob"].id
        receipt = services.schedules.create(
            bob, m.api.home.id, daily_config(), request_id="read-create"
        )
        mission = str(receipt.mission_id)
        services.schedules.play(bob, mission, request_id="read-play", expected_revision=1)
        services.schedules.run_now(bob, mission, request_id="read-run", expected_revision=2)
        return {"mission": mission, "passage": m.admit_pending(mission)}

    found: dict[str, str] = m.once("readable", make)
    return found


def _create(m: Matrix, _c: Column) -> Call:
    request_id = m.request_id("create")

    def after(reply: Reply, _client: TestClient) -> None:
        assert reply.json()["status"] == "created"
        receipt = m.api.services.schedules.receipt(
            m.api.actors["alice"].id, m.api.home.id, request_id
        )
        assert receipt.status == "created"
        assert str(receipt.mission_id) == reply.json()["missionId"]

    body = {"requestID": request_id, "config": daily_config(title=f"Made {request_id}")}
    return Call(_scheduled(m), json=body, after=after)


def _page(m: Matrix, _c: Column) -> Call:
    mission = _readable(m)["mission"]

    def after(reply: Reply, _client: TestClient) -> None:
        ids = [d["id"] for d in reply.json()["items"]]
        page = m.api.services.schedules.page(m.api.actors["alice"].id, m.api.home.id)
        assert ids == [d["id"] for d in page.to_json()["items"]]
        assert mission in ids or reply.json()["nextAfter"] is not None

    return Call(_scheduled(m), after=after)


def _receipt(m: Matrix, _c: Column) -> Call:
    mission = _readable(m)["mission"]

    def after(reply: Reply, _client: TestClient) -> None:
        assert (reply.json()["status"], reply.json()["missionId"]) == ("created", mission)

    return Call(_scheduled(m, "/requests/read-create"), after=after)


def _capabilities(m: Matrix, _c: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        assert "play" in reply.json()["controlActions"]
        assert reply.json()["passageReports"] is True

    return Call(_scheduled(m, "/capabilities"), after=after)


def _detail(m: Matrix, _c: Column) -> Call:
    found = _readable(m)

    def after(reply: Reply, _client: TestClient) -> None:
        body = reply.json()
        assert body["id"] == found["mission"]
        assert body["pending"]["passageId"] == found["passage"]

    return Call(_schedule(m, found["mission"]), after=after)


def _detail_by_id(m: Matrix, _c: Column) -> Call:
    found = _readable(m)

    def after(reply: Reply, _client: TestClient) -> None:
        body = reply.json()
        assert body["id"] == found["mission"]
        assert body["pending"]["passageId"] == found["passage"]
        # The answer of the detail under the schedule's own workspace (the same for
        # every reader).
        under = m.api.client.get(_schedule(m, found["mission"]), headers=m.api.headers("alice"))
        assert under.status_code == 200, under.text
        assert body == under.json()

    return Call(f"/api/missions/{found['mission']}", after=after)


def _applied(m: Matrix, mission: str, request_id: str) -> Any:
    def after(reply: Reply, _client: TestClient) -> None:
        body = reply.json()
        assert (body["requestId"], body["repeated"]) == (request_id, False), body
        status = m.api.services.schedules.control_status(
            m.api.actors["alice"].id, mission, request_id
        )
        assert (status.status, status.revision) == ("applied", body["revision"])

    return after


# Each control, and the steps that bring a fresh schedule where it is allowed.
CONTROLS: dict[str, tuple[str, ...]] = {
    "play": (),
    "pause": ("play",),
    "stop": (),
    "resume": ("play", "interrupt"),
    "check": ("play", "run-now", "pause"),
    "configure": (),
    "delete": (),
}


def _control(action: str) -> Any:
    def build(m: Matrix, _c: Column) -> Call:
        mission = m.schedule(CONTROLS[action])
        request_id = m.request_id(action)
        body: dict[str, Any] = {
            "action": action,
            "requestID": request_id,
            "expectedRevision": m.revision(mission),
        }
        if action == "configure":
            body["changes"] = {"objective": "A new objective."}
        return Call(_schedule(m, mission), json=body, after=_applied(m, mission, request_id))

    return build


def _run_now(m: Matrix, _c: Column) -> Call:
    mission = m.schedule()
    request_id = m.request_id("run")
    body = {"requestID": request_id, "expectedRevision": 1}
    return Call(
        _schedule(m, mission, "/run-now"), json=body, after=_applied(m, mission, request_id)
    )


def _control_status(m: Matrix, _c: Column) -> Call:
    mission = _readable(m)["mission"]

    def after(reply: Reply, _client: TestClient) -> None:
        body = reply.json()
        assert (body["status"], body["action"], body["revision"]) == ("applied", "play", 2)

    return Call(_schedule(m, mission, "/requests/read-play"), after=after)


def _preview(m: Matrix, _c: Column) -> Call:
    mission = _readable(m)["mission"]

    def after(reply: Reply, _client: TestClient) -> None:
        slots = reply.json()
        expected = m.api.services.schedules.preview(m.api.actors["alice"].id, mission, 3)
        assert [s["at"] for s in slots] == [s["at"] for s in expected]

    return Call(_schedule(m, mission, "/preview"), params={"count": 3}, after=after)


def _preview_draft(m: Matrix, _c: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        assert len(reply.json()["slots"]) == 2

    body = {"config": daily_config(), "count": 2}
    return Call(_scheduled(m, "/preview"), json=body, after=after)


def _history(m: Matrix, _c: Column) -> Call:
    mission = _readable(m)["mission"]

    def after(reply: Reply, _client: TestClient) -> None:
        assert (reply.json()["missionId"], reply.json()["revision"]) == (mission, 3)

    return Call(_schedule(m, mission, "/history"), after=after)


def _ledger(m: Matrix, _c: Column) -> Call:
    mission = _readable(m)["mission"]

    def after(reply: Reply, _client: TestClient) -> None:
        assert (reply.json()["missionId"], reply.json()["nextAfter"]) == (mission, None)

    return Call(_schedule(m, mission, "/ledger"), params={"limit": 5}, after=after)


def _why(m: Matrix, _c: Column) -> Call:
    mission = _readable(m)["mission"]

    def after(reply: Reply, _client: TestClient) -> None:
        assert reply.json()["at"] == "2027-03-14T02:30:00"

    return Call(_schedule(m, mission, "/why"), params={"at": "2027-03-14T02:30"}, after=after)


def _passage_log(m: Matrix, _c: Column) -> Call:
    found = _readable(m)

    def after(reply: Reply, _client: TestClient) -> None:
        body = reply.json()
        assert (body["passageId"], body["scheduleId"]) == (found["passage"], found["mission"])

    url = f"/api/workspaces/{m.home}/missions/{found['mission']}/passages/{found['passage']}/log"
    return Call(url, after=after)


SCHEDULES = [
    Row("create", "POST", SCHEDULED, write(201), _create, fresh="success"),
    Row("page", "GET", SCHEDULED, read(), _page),
    Row("creation receipt", "GET", SCHEDULED + "/requests/{requestID}", read(), _receipt),
    Row("capabilities", "GET", SCHEDULED + "/capabilities", read(), _capabilities),
    Row("detail", "GET", SCHEDULE, read(), _detail),
    Row("detail by ID", "GET", MISSION, read(), _detail_by_id),
    *(
        Row(action, "POST", SCHEDULE, write(), _control(action), fresh="success")
        for action in CONTROLS
    ),
    Row("run now", "POST", SCHEDULE + "/run-now", write(), _run_now, fresh="success"),
    Row("control status", "GET", SCHEDULE + "/requests/{requestID}", read(), _control_status),
    Row("preview", "GET", SCHEDULE + "/preview", read(), _preview),
    Row("preview draft", "POST", SCHEDULED + "/preview", write(), _preview_draft),
    Row("history", "GET", SCHEDULE + "/history", read(), _history),
    Row("ledger", "GET", SCHEDULE + "/ledger", read(), _ledger),
    Row("why", "GET", SCHEDULE + "/why", read(), _why),
    Row("passage log", "GET", PASSAGE_LOG, read(), _passage_log),
]

# --- the passage report callback ------------------------------------------------------------------


def _report(m: Matrix, _c: Column) -> Call:
    def after(_reply: Reply, _client: TestClient) -> None:
        stored = records.read_json(m.runtime.passage_dir("ses_matrix") / records.REPORT)
        assert stored is not None
        assert (stored["passageId"], stored["outcome"]) == ("psg_matrix", "completed")

    body = {"outcome": "completed", "summary": "Summarised 12 commits."}
    return Call("/api/passages/report", json=body, after=after)


def _say(m: Matrix, _c: Column) -> Call:
    """A message in psg_matrix's own conversation (opened once, for a schedule of home)."""

    def make() -> str:
        mission = m.api.services.schedules.create(
            m.api.actors["bob"].id, m.api.home.id, daily_config(), request_id="say-create"
        ).mission_id
        assert mission is not None
        with m.api.store.transaction() as conn:
            opened = open_passage_conversation(
                conn,
                m.api.clock.now(),
                workspace_id=m.api.home.id,
                schedule_id=mission,
                passage_id="psg_matrix",
                title="The matrix's passage",
                input_text="Say something",
            )
        return str(opened.id)

    conversation: str = m.once("passage conversation", make)

    def after(reply: Reply, _client: TestClient) -> None:
        said = reply.json()
        assert (said["conversationId"], said["text"]) == (conversation, "Halfway there.")

    return Call("/api/passages/say", json={"text": "Halfway there."}, after=after)


def _beat(m: Matrix, _c: Column) -> Call:
    """A heartbeat of ses_beat's shim, admitted on a node registered once."""

    def make() -> tuple[str, str]:
        now = m.api.clock.now()
        identity = nodes.node_identity(m.api.root / "node", now)
        with m.api.store.transaction() as conn:
            key = nodes.register_node(conn, identity, name="host", runtime_dir="node", now=now)
            passage_beats.record_admitted(
                conn,
                session_id="ses_beat",
                passage_id="psg_beat",
                message_id="msg_beat",
                schedule_id=UUID(NIL),
                node_id=identity.node_id,
                now=now,
            )
        return identity.node_id, key

    node, key = m.once("beat node", make)
    n = m.serial()
    observation = {"launched": True, "running": True, "exited": False, "logTail": f"line {n}"}

    def after(reply: Reply, _client: TestClient) -> None:
        assert reply.json() == {"interrupt": False, "grace": 10.0}
        with m.api.store.transaction(write=False) as conn:
            row = passage_beats.read_beat(conn, "ses_beat")
        assert row is not None and row.source == "shim" and row.observation is not None
        assert row.observation.log_tail == f"line {n}"

    body = {
        "version": 1,
        "node": node,
        "session": "ses_beat",
        "token": beat_token(key, "ses_beat"),
        "event": "beat",
        "observation": observation,
    }
    return Call(BEATS_PATH, json=body, after=after)


REPORTS = [
    # Its principal is a passage: a person's token or cookie is no credential there.
    Row("report", "POST", "/api/passages/report", passage_only(), _report),
    Row("say", "POST", "/api/passages/say", passage_only(201), _say),
    # The shim's token is in the body: whatever credentials come with it are not read.
    Row("shim beat", "POST", BEATS_PATH, public(), _beat, fresh="success"),
]

# --- actors, their reminder destinations, and the passages one may see ----------------------------
#
# Everyone may list actors (handles name people to share with); only the server's owner
# account adds one, and only it grants or revokes the run privilege (defining what
# passages run is a server-level decision: a workspace owner, bob or dave, is refused).
# Destinations are each person's own: another's, even the server owner's asking, is
# refused (403) before anything is read.

ACTORS = "/api/actors"
GRANT = ACTORS + "/{actor}/grants/{privilege}"
DESTINATIONS = ACTORS + "/{actor}/destinations"
CHANNEL = DESTINATIONS + "/{channel}"


def _actors(m: Matrix, _c: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        listed = [a["handle"] for a in reply.json()]
        assert listed == [a.handle for a in m.api.services.directory.actors()]

    return Call(ACTORS, after=after)


def _add_actor(m: Matrix, _c: Column) -> Call:
    handle = f"new{m.serial()}"

    def after(reply: Reply, _client: TestClient) -> None:
        made = m.api.services.directory.actor(handle)
        assert reply.json() == made.to_json()
        assert made.display_name == "New One"

    return Call(ACTORS, json={"handle": handle, "display_name": "New One"}, after=after)


def _grant_run(m: Matrix, _c: Column) -> Call:
    guest = m.guest()

    def after(reply: Reply, _client: TestClient) -> None:
        standing = m.api.services.grants.standing(guest.id)
        assert standing.may_run
        assert reply.json() == standing.to_json()

    return Call(f"{ACTORS}/{guest.handle}/grants/run", after=after)


def _revoke_run(m: Matrix, _c: Column) -> Call:
    guest = m.guest()
    m.api.services.grants.grant(guest.id, "run")

    def after(reply: Reply, _client: TestClient) -> None:
        standing = m.api.services.grants.standing(guest.id)
        assert not standing.may_run
        assert reply.json() == standing.to_json()

    return Call(f"{ACTORS}/{guest.handle}/grants/run", after=after)


def _hook(m: Matrix) -> str:
    return f"ntfy://ntfy.example.com/matrix-{m.serial()}"


def _push_of(m: Matrix, whose: str) -> list[str]:
    who = m.api.actors[whose].id
    return [d.url for d in m.api.services.destinations.list(who, who, "push")]


def _destinations(whose: str) -> Any:
    def build(m: Matrix, _c: Column) -> Call:
        def after(reply: Reply, _client: TestClient) -> None:
            who = m.api.actors[whose].id
            shown = [d.to_json() for d in m.api.services.destinations.list(who, who)]
            assert reply.json() == shown

        return Call(f"/api/actors/{whose}/destinations", after=after)

    return build


def _set_destinations(whose: str) -> Any:
    def build(m: Matrix, _c: Column) -> Call:
        urls = [_hook(m), _hook(m)]

        def after(reply: Reply, _client: TestClient) -> None:
            assert [d["position"] for d in reply.json()] == [1, 2]
            assert _push_of(m, whose) == urls

        return Call(f"/api/actors/{whose}/destinations/push", json={"urls": urls}, after=after)

    return build


def _add_destination(whose: str) -> Any:
    def build(m: Matrix, _c: Column) -> Call:
        url, who = _hook(m), m.api.actors[whose].id
        m.api.services.destinations.set(who, who, "push", [])  # room for one more

        def after(reply: Reply, _client: TestClient) -> None:
            assert reply.json()["display"] == "ntfy://ntfy.example.com/****"  # a topic: masked
            assert _push_of(m, whose)[-1] == url

        return Call(f"/api/actors/{whose}/destinations/push", json={"url": url}, after=after)

    return build


def _remove_destination(whose: str) -> Any:
    def build(m: Matrix, _c: Column) -> Call:
        url, who = _hook(m), m.api.actors[whose].id
        m.api.services.destinations.set(who, who, "push", [url])

        def after(reply: Reply, _client: TestClient) -> None:
            assert reply.json()["channel"] == "push"
            assert url not in _push_of(m, whose)

        route = f"/api/actors/{whose}/destinations/push/remove"
        return Call(route, json={"url": url}, after=after)

    return build


def _own(build: Any) -> Any:
    """A row's request about the caller's own settings (alice's for no one)."""
    return lambda m, c: build(person(c))(m, c)


def _passages(m: Matrix, column: Column) -> Call:
    found = _readable(m)

    def after(reply: Reply, _client: TestClient) -> None:
        body = reply.json()
        # psg_matrix names no schedule of the database: nobody sees it.
        expected = [] if person(column) == "dave" else [found["passage"]]
        assert [p["passageId"] for p in body["items"]] == expected, body
        assert body["total"] == len(expected)
        assert body["runtimeDir"] == str(m.runtime.root)

    return Call("/api/passages", after=after)


ACTOR_ROWS = [
    Row("every actor", "GET", ACTORS, personal(), _actors),
    Row("add an actor", "POST", ACTORS, server_owner(201), _add_actor, fresh="success"),
    Row("grant run", "POST", GRANT, server_owner(), _grant_run, fresh="success"),
    Row("revoke run", "DELETE", GRANT, server_owner(), _revoke_run, fresh="success"),
    Row("my destinations", "GET", DESTINATIONS, personal(), _own(_destinations), fresh="success"),
    Row("alice's destinations", "GET", DESTINATIONS, alices_settings(), _destinations("alice")),
    Row(
        "set my destinations",
        "PUT",
        CHANNEL,
        personal(),
        _own(_set_destinations),
        fresh="success",
    ),
    Row(
        "set alice's destinations",
        "PUT",
        CHANNEL,
        alices_settings(),
        _set_destinations("alice"),
        fresh="success",
    ),
    Row(
        "add my destination",
        "POST",
        CHANNEL,
        personal(201),
        _own(_add_destination),
        fresh="success",
    ),
    Row(
        "add alice's destination",
        "POST",
        CHANNEL,
        alices_settings(201),
        _add_destination("alice"),
        fresh="success",
    ),
    Row(
        "remove my destination",
        "POST",
        CHANNEL + "/remove",
        personal(),
        _own(_remove_destination),
        fresh="success",
    ),
    Row(
        "remove alice's destination",
        "POST",
        CHANNEL + "/remove",
        alices_settings(),
        _remove_destination("alice"),
        fresh="success",
    ),
    # Everyone may ask; each is answered the passages of their own workspaces only.
    Row("passages I may see", "GET", "/api/passages", personal(), _passages, fresh="success"),
]

# --- calendar feeds -------------------------------------------------------------------------------
#
# A person's feeds are their own, as tokens are; the feed itself is public: the secret in
# its address is the credential, whatever else the request carries.

FEED = "/feeds/{secret}.ics"


def _feeds(m: Matrix, column: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        listed = [f["id"] for f in reply.json()]
        assert listed == [str(f.id) for f in m.api.services.feeds.list(actor_id(m, column))]

    return Call("/api/feeds", after=after)


def _create_feed(m: Matrix, column: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        made = reply.json()["feed"]["id"]
        assert made in {str(f.id) for f in m.api.services.feeds.list(actor_id(m, column))}

    return Call("/api/feeds", after=after)


def _revoke_feed(m: Matrix, whose: str) -> Call:
    feed = m.api.services.feeds.create(m.api.actors[whose].id, base_url="http://x").feed.id

    def after(reply: Reply, _client: TestClient) -> None:
        assert reply.json()["active"] is False
        found = {f.id: f for f in m.api.services.feeds.list(m.api.actors[whose].id)}
        assert found[feed].revoked_at is not None

    return Call(f"/api/feeds/{feed}", after=after)


def _feed(m: Matrix, _c: Column) -> Call:
    made = m.api.services.feeds.create(m.api.actors["carol"].id, base_url="http://x")
    return Call(f"/feeds/{made.secret}.ics")


def _revoked_feed(m: Matrix, _c: Column) -> Call:
    made = m.api.services.feeds.create(m.api.actors["carol"].id, base_url="http://x")
    m.api.services.feeds.revoke(m.api.actors["carol"].id, made.feed.id)
    return Call(f"/feeds/{made.secret}.ics")


FEEDS = [
    Row("my feeds", "GET", "/api/feeds", personal(), _feeds, fresh="success"),
    Row("new feed", "POST", "/api/feeds", personal(201), _create_feed, fresh="success"),
    Row(
        "revoke my feed",
        "DELETE",
        "/api/feeds/{feed_id}",
        personal(),
        lambda m, c: _revoke_feed(m, person(c)),
        fresh="success",
    ),
    # Another person's feed is not found, not forbidden.
    Row(
        "revoke alice's feed",
        "DELETE",
        "/api/feeds/{feed_id}",
        alices_only(),
        lambda m, _c: _revoke_feed(m, "alice"),
        fresh="success",
    ),
    Row("a feed", "GET", FEED, public(), _feed),
    Row("a revoked feed", "GET", FEED, public_refusal(NOT_FOUND), _revoked_feed),
]


# --- conversations --------------------------------------------------------------------------------
# Viewers read a workspace's conversations, editors post, a message's author streams,
# rewrites and deletes it, owners of both workspaces move one; dave, no member of home,
# is told none of it exists.


def _thread(m: Matrix) -> str:
    made = m.api.services.conversations.create(m.api.actors["bob"].id, m.api.home.id, "Plans")
    return str(made.id)


def _said(m: Matrix, column: Column, *, complete: bool) -> tuple[str, str]:
    """A fresh thread and a message in it by the column's person (alice for a viewer,
    who may not post): their IDs."""
    who = "alice" if person(column) in ("carol", "dave") else person(column)
    thread = _thread(m)
    said = m.api.services.conversations.post(
        m.api.actors[who].id, thread, "draft", complete=complete
    )
    return thread, str(said.id)


def _conversations(m: Matrix, column: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        listed = [c["id"] for c in reply.json()]
        found = m.api.services.conversations.list(actor_id(m, column), m.api.home.id)
        assert listed == [str(c.id) for c in found]

    m.once("thread", lambda: _thread(m))
    return Call(f"/api/workspaces/{m.home}/conversations", after=after)


def _new_conversation(m: Matrix, column: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        made = m.api.services.conversations.get(actor_id(m, column), reply.json()["id"])
        assert (made.title, made.created_by) == ("Matrix", actor_id(m, column))

    return Call(f"/api/workspaces/{m.home}/conversations", json={"title": "Matrix"}, after=after)


def _conversation(m: Matrix, column: Column) -> Call:
    thread = m.once("thread", lambda: _thread(m))

    def after(reply: Reply, _client: TestClient) -> None:
        found = m.api.services.conversations.get(actor_id(m, column), thread)
        assert reply.json() == found.to_json()

    return Call(f"/api/conversations/{thread}", after=after)


def _messages(m: Matrix, column: Column) -> Call:
    thread = m.once("thread", lambda: _thread(m))

    def after(reply: Reply, _client: TestClient) -> None:
        found = m.api.services.conversations.messages(actor_id(m, column), thread)
        assert reply.json() == {"messages": [x.to_json() for x in found], "nextAfterSeq": None}

    return Call(f"/api/conversations/{thread}/messages", after=after)


def _post(m: Matrix, column: Column) -> Call:
    thread = _thread(m)

    def after(reply: Reply, _client: TestClient) -> None:
        [found] = m.api.services.conversations.messages(actor_id(m, column), thread)
        assert reply.json() == found.to_json()
        assert found.author_actor_id == actor_id(m, column)

    return Call(f"/api/conversations/{thread}/messages", json={"text": "hi"}, after=after)


def _message_change(tail: str, body: dict[str, Any], text: str, complete: bool) -> Any:
    def build(m: Matrix, column: Column) -> Call:
        thread, said = _said(m, column, complete=False)

        def after(reply: Reply, _client: TestClient) -> None:
            [found] = m.api.services.conversations.messages(actor_id(m, column), thread)
            assert reply.json() == found.to_json()
            assert (found.text, found.complete, found.revision) == (text, complete, 2)

        return Call(f"/api/messages/{said}{tail}", json=body, after=after)

    return build


def _delete_message(m: Matrix, column: Column) -> Call:
    thread, said = _said(m, column, complete=True)

    def after(_reply: Reply, _client: TestClient) -> None:
        assert m.api.services.conversations.messages(actor_id(m, column), thread) == []

    return Call(f"/api/messages/{said}", params={"expectedRevision": 1}, after=after)


def _move(m: Matrix, column: Column) -> Call:
    thread, target = _thread(m), m.spare_workspace()

    def after(reply: Reply, _client: TestClient) -> None:
        found = m.api.services.conversations.get(actor_id(m, column), thread)
        assert str(found.workspace_id) == target == reply.json()["workspaceId"]

    body = {"workspace": target, "expectedRevision": 1}
    return Call(f"/api/conversations/{thread}/move", json=body, after=after)


WS_CONVERSATIONS = WS + "/conversations"
CONVERSATION = "/api/conversations/{conversation}"
MESSAGE = "/api/messages/{message}"
CONVERSATION_ROWS = [
    Row("conversations", "GET", WS_CONVERSATIONS, read(), _conversations),
    Row("new thread", "POST", WS_CONVERSATIONS, write(201), _new_conversation, fresh="success"),
    Row("a conversation", "GET", CONVERSATION, read(), _conversation),
    Row("its messages", "GET", CONVERSATION + "/messages", read(), _messages),
    Row("post", "POST", CONVERSATION + "/messages", write(201), _post, fresh="success"),
    Row(
        "append to one's message",
        "POST",
        MESSAGE + "/append",
        write(),
        _message_change("/append", {"text": "ed", "expectedRevision": 1}, "drafted", False),
        fresh="success",
    ),
    Row(
        "finish one's message",
        "POST",
        MESSAGE + "/finish",
        write(),
        _message_change("/finish", {"expectedRevision": 1}, "draft", True),
        fresh="success",
    ),
    Row(
        "rewrite one's message",
        "PATCH",
        MESSAGE,
        write(),
        _message_change("", {"text": "final", "expectedRevision": 1}, "final", False),
        fresh="success",
    ),
    Row("delete one's message", "DELETE", MESSAGE, write(204), _delete_message, fresh="success"),
    Row("move", "POST", CONVERSATION + "/move", owners_only(), _move, fresh="success"),
]


# --- questions ------------------------------------------------------------------------------------
# Viewers read a workspace's open questions and one question with who decided it, editors
# answer through the API; dave, no member of home, is told none of it exists. A passage's
# own token asks, reads its own questions, acknowledges an interface answer and decides:
# the asking passage is one of a schedule of home (psg_matrix names no schedule of the
# database, so it could ask nowhere); its token is the passage column's credential in
# test_the_question_routes_of_a_passage_answer_every_caller below.

ASKING = ("psg_asking", "ses_asking")


def _asking(m: Matrix) -> str:
    """A schedule of home and its passage psg_asking, admitted in the runtime directory;
    the schedule's ID."""

    def make() -> str:
        mission = m.schedule()
        m.runtime.admit(
            PassageStart(
                passage_id=ASKING[0],
                session_id=ASKING[1],
                message_id="msg_asking",
                schedule_id=mission,
                workspace=m.api.home.path,
                command=("true",),
            )
        )
        return mission

    found: str = m.once("asking", make)
    return found


def _question(m: Matrix) -> Question:
    """A fresh open question of psg_asking in home."""
    return m.api.services.questions.ask(
        workspace_id=m.api.home.id,
        schedule_id=UUID(_asking(m)),
        passage_id=ASKING[0],
        prompt="Ship it?",
        fields=QUESTION_FIELDS,
    )


QUESTION_FIELDS = [{"id": "go", "kind": "choice", "label": "Ship?", "options": ["yes", "no"]}]
QUESTION_ANSWER = {"go": "yes"}


def _open_questions(m: Matrix, column: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        found = m.api.services.questions.list_open(actor_id(m, column), m.api.home.id)
        assert reply.json() == [q.to_json() for q in found] and found

    m.once("question", lambda: _question(m))
    return Call(f"/api/workspaces/{m.home}/questions", after=after)


def _a_question(m: Matrix, column: Column) -> Call:
    asked: Question = m.once("question", lambda: _question(m))

    def after(reply: Reply, _client: TestClient) -> None:
        assert reply.json() == {
            **asked.to_json(),
            "decision": m.api.services.questions.decision(actor_id(m, column), asked.id).to_json(),
            "marks": [],
        }

    return Call(f"/api/questions/{asked.id}", after=after)


def _answer(m: Matrix, column: Column) -> Call:
    asked = _question(m)

    def after(_reply: Reply, _client: TestClient) -> None:
        found = m.api.services.questions.get(actor_id(m, column), asked.id)
        assert (found.answered_via, found.answered_by) == ("api", actor_id(m, column))

    body = {"answer": QUESTION_ANSWER, "expectedRevision": 1}
    return Call(f"/api/questions/{asked.id}/answer", json=body, after=after)


def _ask(m: Matrix, _c: Column) -> Call:
    def after(reply: Reply, _client: TestClient) -> None:
        found = m.api.services.questions.get(m.api.actors["carol"].id, reply.json()["id"])
        assert (found.passage_id, str(found.schedule_id)) == (ASKING[0], _asking(m))

    _asking(m)
    body = {"prompt": "Ship it?", "fields": QUESTION_FIELDS}
    return Call("/api/passages/questions", json=body, after=after)


def _own_question(m: Matrix, _c: Column) -> Call:
    asked: Question = m.once("question", lambda: _question(m))

    def after(reply: Reply, _client: TestClient) -> None:
        assert reply.json() == {**asked.to_json(), "attemptId": None}

    return Call(f"/api/passages/questions/{asked.id}", after=after)


def _received(m: Matrix, _c: Column) -> Call:
    asked = _question(m)
    bob = m.api.actors["bob"].id
    given = ui_answer(m.api, asked, QUESTION_ANSWER)  # from a live session of bob's

    def after(_reply: Reply, _client: TestClient) -> None:
        [mark] = m.api.services.questions.marks(bob, asked.id)
        assert (mark.attempt_id, mark.state) == (given.attempt_id, "confirmed")

    return Call(
        f"/api/passages/questions/{asked.id}/received",
        json={"attemptId": given.attempt_id},
        after=after,
    )


def _decide(m: Matrix, _c: Column) -> Call:
    asked = _question(m)

    def after(_reply: Reply, _client: TestClient) -> None:
        found = m.api.services.questions.get(m.api.actors["bob"].id, asked.id)
        assert (found.answered_via, found.answer) == ("coordinator", QUESTION_ANSWER)

    body = {"answer": QUESTION_ANSWER}
    return Call(f"/api/passages/questions/{asked.id}/decide", json=body, after=after)


PASSAGE_QUESTION = "/api/passages/questions/{question}"
QUESTION_ROWS = [
    Row("open questions", "GET", WS + "/questions", read(), _open_questions),
    Row("a question", "GET", "/api/questions/{question}", read(), _a_question),
    Row("answer", "POST", "/api/questions/{question}/answer", write(), _answer, fresh="success"),
]
PASSAGE_QUESTION_ROWS = [
    Row("ask", "POST", "/api/passages/questions", passage_only(201), _ask, fresh="success"),
    Row("its own question", "GET", PASSAGE_QUESTION, passage_only(), _own_question),
    Row(
        "received",
        "POST",
        PASSAGE_QUESTION + "/received",
        passage_only(),
        _received,
        fresh="success",
    ),
    Row("decide", "POST", PASSAGE_QUESTION + "/decide", passage_only(), _decide, fresh="success"),
]


GROUPS: dict[str, list[Row]] = {
    "health-and-auth": HEALTH + AUTH,
    "workspaces": WORKSPACES,
    "schedules": SCHEDULES,
    "passage-report": REPORTS,
    "actors-and-passages": ACTOR_ROWS,
    "feeds": FEEDS,
    "conversations": CONVERSATION_ROWS,
    "questions": QUESTION_ROWS,
}
# The rows of a passage's questions run in a test of their own (their passage differs).
ROWS = [row for rows in GROUPS.values() for row in rows] + PASSAGE_QUESTION_ROWS


@pytest.mark.parametrize("group", list(GROUPS))
def test_every_route_answers_every_caller_as_its_access_says(api: ApiWorld, group: str) -> None:
    failures = run_rows(make_matrix(api), GROUPS[group])
    assert failures == [], "\n".join(failures)


def test_the_question_routes_of_a_passage_answer_every_caller(api: ApiWorld) -> None:
    """As the groups above, with psg_asking's token as the passage column's credential."""
    m = make_matrix(api)
    _asking(m)
    m.passage_token = m.runtime.token(*ASKING)
    failures = run_rows(m, PASSAGE_QUESTION_ROWS)
    assert failures == [], "\n".join(failures)


def test_the_matrix_asks_for_each_kind_of_answer() -> None:
    """The expectations themselves: each column is refused somewhere and served somewhere,
    and every cell of a refusal expects an error code (so ``run_rows`` checks the body)."""
    cells = [(row, c, row.access.expect(c, row.method)) for row in ROWS for c in COLUMNS]
    assert len(cells) == len(ROWS) * len(COLUMNS)
    for column in COLUMNS:
        statuses = {status for _row, c, (status, _code) in cells if c is column}
        assert any(s < 300 for s in statuses), column
        assert any(s >= 400 for s in statuses), column
    for _row, _c, (status, code) in cells:
        assert (status >= 400) is (code is not None)


# --- a schedule is found under its own workspace only ---------------------------------------------


def test_a_schedule_is_found_under_its_own_workspace_only(api: ApiWorld) -> None:
    """away's schedule through home's path: not found for home's members (404 naming
    missionID); dave, whose schedule it is, is no member of home and is told home is not
    there (404 naming workspace) exactly as for a mission ID that does not exist — before
    any schedule is looked up. And home's schedule through away's path: 404 naming
    missionID for dave, 404 naming workspace for home's members."""
    m = make_matrix(api)
    away_mission = m.schedule(workspace=m.away)
    home_mission = m.schedule()
    failures: list[str] = []

    def calls(workspace: str, mission: str) -> list[tuple[str, str, dict[str, Any] | None]]:
        control = {"action": "play", "requestID": "play-000001", "expectedRevision": 1}
        run = {"requestID": "run-000001", "expectedRevision": 1}
        edit = {
            "action": "configure",
            "requestID": "edit-000001",
            "expectedRevision": 1,
            "changes": {"title": "moved"},
        }
        return [
            ("GET", _schedule(m, mission, workspace=workspace), None),
            ("POST", _schedule(m, mission, workspace=workspace), control),
            ("POST", _schedule(m, mission, workspace=workspace), edit),
            ("POST", _schedule(m, mission, "/run-now", workspace=workspace), run),
            ("GET", _schedule(m, mission, "/requests/play-000001", workspace=workspace), None),
            ("GET", _schedule(m, mission, "/preview", workspace=workspace), None),
            ("GET", _schedule(m, mission, "/history", workspace=workspace), None),
            ("GET", _schedule(m, mission, "/ledger", workspace=workspace), None),
            ("GET", _schedule(m, mission, "/why?at=2027-03-14T09:00", workspace=workspace), None),
            (
                "GET",
                f"/api/workspaces/{workspace}/missions/{mission}/passages/psg_matrix/log",
                None,
            ),
        ]

    def expect(column: Column, method: str, home_path: bool) -> tuple[Expect, str | None]:
        """The answer, and the field a 404 names."""
        if column.kind in ("none", "passage") or column in (EXPIRED, REVOKED):
            return UNAUTHENTICATED, None
        if column is NO_CSRF and method == "POST":
            return CSRF_FAILED, None
        # A member of the path's workspace is told the schedule is not there; anyone
        # else is told the workspace is not there, before any schedule is looked up.
        member_of_path = (column.who == "dave") is not home_path
        return NOT_FOUND, "missionID" if member_of_path else "workspace"

    cases = [
        (True, calls(m.home, away_mission), calls(m.home, NIL)),
        (False, calls(m.away, home_mission), calls(m.away, NIL)),
    ]
    for home_path, requests, nil_requests in cases:
        for column in COLUMNS:
            for (method, url, body), (_same, nil_url, _body) in zip(
                requests, nil_requests, strict=True
            ):
                client, headers = m.credentials(column)
                with nothing_written(api.store), files_unchanged(m.runtime.root):
                    reply = client.request(method, url, json=body, headers=headers)
                    nil = client.request(method, nil_url, json=body, headers=headers)
                (status, code), field = expect(column, method, home_path)
                where = f"{method} {url} as {column.name}"
                got = reply.json()
                if (reply.status_code, got.get("code")) != (status, code):
                    failures.append(f"{where}: expected {status} {code}, got {reply.text}")
                elif field is not None and got["details"].get("field") != field:
                    failures.append(f"{where}: not about {field}: {reply.text}")
                elif field != "missionID" and (nil.status_code, nil.json()) != (status, got):
                    # A refusal that does not depend on the mission says nothing of it.
                    failures.append(f"{where}: {reply.text} but for no mission {nil.text}")
                if "Matrix" in reply.text or "echo" in reply.text:
                    failures.append(f"{where}: the answer shows the schedule: {reply.text}")
    assert failures == [], "\n".join(failures)
    assert m.revision(away_mission, "dave") == 1 and m.revision(home_mission) == 1


# --- every served route is in a matrix ------------------------------------------------------------


def tasks_table(api: ApiWorld, served: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """The (method, template) of test_tasks_access.py's table."""
    found: set[tuple[str, str]] = set()
    for route in task_routes(api):
        template = template_of(served, route.method, route.url)
        assert template is not None, (route.method, route.url)
        found.add(template)
    return found


def test_every_served_route_is_in_a_matrix(api: ApiWorld) -> None:
    app = api.client.app
    assert isinstance(app, FastAPI)
    served = served_routes(app)
    # Not vacuous: the enumeration sees through included routers.
    assert ("POST", "/api/workspaces/{id}/missions/{missionID}/schedule") in served
    assert ("GET", "/api/tasks/{task}") in served
    assert len(served) == len(set(served))
    mine = {(row.method, row.template) for row in ROWS}
    theirs = tasks_table(api, served)
    assert mine.isdisjoint(theirs), mine & theirs
    missing, stale = uncovered(served, mine | theirs)
    assert missing == set(), f"served routes in no authorization matrix: {sorted(missing)}"
    assert stale == set(), f"matrix rows for routes nobody serves: {sorted(stale)}"
    # The check can fail: without one row of either table, its route is reported.
    for dropped in (("DELETE", WS), ("GET", "/api/tasks/{task}")):
        assert uncovered(served, (mine | theirs) - {dropped}) == ({dropped}, set())


def test_each_row_requests_a_url_of_its_template(api: ApiWorld) -> None:
    """A row's template is the served route its request lands on (the first match)."""
    app = api.client.app
    assert isinstance(app, FastAPI)
    served = served_routes(app)
    m = make_matrix(api)
    for row in ROWS:
        call = row.build(m, VIEWER if row.method == "GET" else REVOKED)
        assert matches(row.template, call.url), (row.name, call.url)
        assert template_of(served, row.method, call.url) == (row.method, row.template), row.name


def test_the_enumeration_sees_routes_behind_nested_routers() -> None:
    """A route added later, however deeply included, is seen (and so must be in a table)."""
    inner, outer, app = APIRouter(), APIRouter(prefix="/api"), FastAPI()

    @inner.post("/things/{thing}")
    def thing(thing: str) -> dict[str, str]:  # pragma: no cover - enumerated only
        return {"thing": thing}

    outer.include_router(inner, prefix="/v2")
    app.include_router(outer)
    assert served_routes(app) == [("POST", "/api/v2/things/{thing}")]


def test_the_runner_reports_wrong_answers_and_refusals_that_wrote(api: ApiWorld) -> None:
    """The matrix can fail: a row claiming a refusal where the route serves (and writes),
    a success where it refuses, or another error code, is reported."""
    m = make_matrix(api)
    said_refused = Row(
        "a list, said refused",
        "POST",
        "/api/lists",
        owners_only(),
        lambda _m, _c: Call("/api/lists", json={"name": "written"}),
    )
    said_served = Row(
        "an unknown workspace, said served",
        "GET",
        WS,
        read(),
        lambda _m, _c: Call(f"/api/workspaces/{NIL}"),
    )
    wrong_code = Row("a viewer's write", "POST", SCHEDULED, write(), _create, fresh="success")
    failures = run_rows(m, [said_refused, said_served], columns=(VIEWER,))
    assert len(failures) == 2, failures
    assert "a refusal wrote something: rows changed in" in failures[0]
    assert "expected 200, got 404" in failures[1]
    wrong = replace(wrong_code, access=replace(write(), viewer=(403, "csrf-failed")))
    (failure,) = run_rows(m, [wrong], columns=(VIEWER,))
    assert "expected code csrf-failed, got forbidden" in failure
