"""A schedule by its ID alone over HTTP: ``GET /api/missions/{id}`` answers what the detail
under the schedule's own workspace answers, for any workspace the caller may read, and
a schedule of a workspace where the caller has no role as an ID nobody uses; on both
backends."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from fastapi.testclient import TestClient

from api.conftest import ApiWorld
from kalends.api import ApiContext, ApiSettings, create_app
from kalends.missions.runtime import PassageStart
from kalends.missions.runtime.process import ProcessRuntime
from kalends.storage.testing import nothing_written
from missions.conftest import daily_config
from runtime.support import kill_families, wait_until

GREETING = "hello from the passage"
NIL = "00000000-0000-0000-0000-000000000000"


@pytest.fixture(autouse=True)
def _tokens_used(api: ApiWorld) -> None:
    """Each token's first use records it (``lastUsedAt``); done here, so that a read or a
    refusal in a test writes nothing of its own."""
    for who in ("alice", "bob", "carol", "dave"):
        assert api.client.get("/api/auth/me", headers=api.headers(who)).status_code == 200


@pytest.fixture
def runtime(api: ApiWorld) -> Iterator[ProcessRuntime]:
    root = api.root / "runtime"
    try:
        yield ProcessRuntime(root, clock=api.clock)
    finally:
        kill_families(root)


def by_id(mission: str) -> str:
    return f"/api/missions/{mission}"


def under(workspace: Any, mission: str) -> str:
    return f"/api/workspaces/{workspace}/missions/{mission}/schedule"


def error(reply: httpx2.Response, status: int, code: str) -> dict[str, Any]:
    assert reply.status_code == status, reply.text
    body: dict[str, Any] = reply.json()
    assert body["code"] == code, body
    return body


def create(api: ApiWorld, who: str, workspace: Any, title: str, request_id: str) -> str:
    receipt = api.services.schedules.create(
        api.actors[who].id, workspace, daily_config(title=title), request_id=request_id
    )
    return str(receipt.mission_id)


def ran_now(api: ApiWorld, runtime: ProcessRuntime) -> tuple[str, dict[str, Any]]:
    """bob's schedule of ``home``, played, whose Run now passage ran a real command to
    its end and is still pending (as the scheduler leaves it until it settles it)."""
    bob = api.actors["bob"].id
    mission = create(api, "bob", api.home.id, "Nightly build", "create-0001")
    api.services.schedules.play(bob, mission, request_id="play-0001", expected_revision=1)
    api.services.schedules.run_now(bob, mission, request_id="run-0001", expected_revision=2)
    pending = api.services.schedules.detail(bob, mission)["pending"]
    runtime.start(
        PassageStart(
            passage_id=pending["passageId"],
            session_id=pending["sessionId"],
            message_id=pending["messageId"],
            schedule_id=mission,
            workspace=api.home.path,
            command=(sys.executable, "-c", f"print({GREETING!r})"),
        )
    )
    wait_until(lambda: runtime.observe(pending["sessionId"]).settled, what="the passage's end")
    return mission, pending


# --- found ----------------------------------------------------------------------------------------


def test_every_member_reads_a_schedule_by_its_id_as_under_its_workspace(
    api: ApiWorld, runtime: ProcessRuntime
) -> None:
    mission, pending = ran_now(api, runtime)
    for who in ("alice", "bob", "carol"):  # owner, editor, viewer
        headers = api.headers(who)
        with nothing_written(api.store):
            found = api.client.get(by_id(mission), headers=headers)
        assert found.status_code == 200, found.text
        assert found.json() == api.client.get(under(api.home.id, mission), headers=headers).json()
        body = found.json()
        assert (body["id"], body["workspaceId"], body["title"]) == (
            mission,
            str(api.home.id),
            "Nightly build",
        )
        # The pending passage's output, as the detail under the workspace shows it.
        assert body["pending"]["sessionId"] == pending["sessionId"]
        assert GREETING in body["pending"]["logTail"]


def test_a_schedule_of_the_callers_other_workspace_is_found_too(api: ApiWorld) -> None:
    """dave is no member of home: his own workspace's schedule is found all the same."""
    mission = create(api, "dave", api.away.id, "Away build", "create-away")
    headers = api.headers("dave")
    found = api.client.get(by_id(mission), headers=headers)
    assert found.status_code == 200, found.text
    assert found.json() == api.client.get(under(api.away.id, mission), headers=headers).json()
    assert found.json()["workspaceId"] == str(api.away.id)


def test_a_deleted_schedule_answers_its_tombstone_as_under_its_workspace(api: ApiWorld) -> None:
    mission = create(api, "bob", api.home.id, "Short lived", "create-0001")
    api.services.schedules.delete(
        api.actors["bob"].id, mission, request_id="delete-0001", expected_revision=1
    )
    headers = api.headers("carol")
    found = api.client.get(by_id(mission), headers=headers)
    assert found.status_code == 200, found.text
    assert found.json()["kind"] == "tombstone"
    assert found.json() == api.client.get(under(api.home.id, mission), headers=headers).json()


def test_a_server_without_a_runtime_answers_the_detail_without_a_log_tail(
    api: ApiWorld, runtime: ProcessRuntime
) -> None:
    mission, _pending = ran_now(api, runtime)
    ctx = ApiContext(services=api.services, accounts=api.accounts, settings=ApiSettings())
    client = TestClient(create_app(ctx, access_log_enabled=False), raise_server_exceptions=False)
    found = client.get(by_id(mission), headers=api.headers("bob"))
    assert found.status_code == 200, found.text
    assert "logTail" not in found.json()["pending"]
    assert (
        found.json() == client.get(under(api.home.id, mission), headers=api.headers("bob")).json()
    )


# --- not found, invalid, unauthenticated ----------------------------------------------------------


def test_an_unknown_id_is_not_found(api: ApiWorld) -> None:
    unknown = str(uuid.uuid4())
    with nothing_written(api.store):
        reply = api.client.get(by_id(unknown), headers=api.headers("alice"))
    body = error(reply, 404, "not-found")
    assert body["details"] == {"field": "id"}
    assert unknown in body["message"]


@pytest.mark.parametrize(
    ("who", "whose"),
    [
        ("dave", "bob"),  # home's schedule, asked by a member of away only
        ("bob", "dave"),  # away's schedule, asked by a member of home only
        ("carol", "dave"),  # a viewer elsewhere is no reader here either
    ],
)
def test_another_persons_schedule_is_answered_as_an_id_nobody_uses(
    api: ApiWorld, who: str, whose: str
) -> None:
    workspace = api.away.id if whose == "dave" else api.home.id
    theirs = create(api, whose, workspace, "Private matters", "create-private")
    nobodys = str(uuid.uuid4())
    headers = api.headers(who)
    with nothing_written(api.store):
        foreign = api.client.get(by_id(theirs), headers=headers)
        unknown = api.client.get(by_id(nobodys), headers=headers)
    error(foreign, 404, "not-found")
    error(unknown, 404, "not-found")
    # The same answer, word for word, but for the ID itself.
    assert foreign.text.replace(theirs, nobodys) == unknown.text
    for private in ("Private matters", str(workspace), "home", "away"):
        assert private not in foreign.text


@pytest.mark.parametrize(
    "malformed",
    [
        "not-a-uuid",  # words
        "1234",  # too short
        NIL + "0",  # one digit too many
    ],
)
def test_a_malformed_id_is_invalid_input_as_on_the_other_routes(
    api: ApiWorld, malformed: str
) -> None:
    with nothing_written(api.store):
        reply = api.client.get(by_id(malformed), headers=api.headers("alice"))
        workspace = api.client.get(f"/api/workspaces/{malformed}", headers=api.headers("alice"))
    body = error(reply, 422, "invalid-input")
    assert body["details"]["field"] == "id"
    # What a malformed workspace ID gets, its path parameter named alike.
    assert (body["code"], body["details"]) == (
        workspace.json()["code"],
        workspace.json()["details"],
    )


@pytest.mark.parametrize(
    "who",
    [
        None,  # no credentials
        "erin",  # an expired token
        "frank",  # a revoked token
    ],
)
def test_without_valid_credentials_it_is_401(api: ApiWorld, who: str | None) -> None:
    mission = create(api, "bob", api.home.id, "Private matters", "create-0001")
    headers = {} if who is None else api.headers(who)
    with nothing_written(api.store):
        reply = api.client.get(by_id(mission), headers=headers)
        unknown = api.client.get(by_id(NIL), headers=headers)
    error(reply, 401, "unauthenticated")
    assert (unknown.status_code, unknown.json()) == (401, reply.json())
    assert "Private matters" not in reply.text
