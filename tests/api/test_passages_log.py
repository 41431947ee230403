"""A passage's log over HTTP: ``GET …/missions/{missionID}/passages/{passageID}/log`` reads
the server's runtime directory, for a passage of that schedule only; the detail shows the
pending passage's output as ``kalends schedule show`` does."""

from __future__ import annotations

import sys
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


@pytest.fixture(autouse=True)
def _tokens_used(api: ApiWorld) -> None:
    """Each token's first use records it (``lastUsedAt``); done here, so that a read in a
    test writes nothing of its own."""
    for who in ("alice", "bob", "carol", "dave"):
        assert api.client.get("/api/auth/me", headers=api.headers(who)).status_code == 200


@pytest.fixture
def runtime(api: ApiWorld) -> Iterator[ProcessRuntime]:
    root = api.root / "runtime"
    try:
        yield ProcessRuntime(root, clock=api.clock)
    finally:
        kill_families(root)


def log_url(workspace: Any, mission: str, passage: str) -> str:
    return f"/api/workspaces/{workspace}/missions/{mission}/passages/{passage}/log"


def error(reply: httpx2.Response, status: int, code: str) -> dict[str, Any]:
    assert reply.status_code == status, reply.text
    body: dict[str, Any] = reply.json()
    assert body["code"] == code, body
    return body


def run_now_passage(api: ApiWorld, runtime: ProcessRuntime) -> tuple[str, dict[str, Any]]:
    """A schedule of ``home`` whose Run now passage ran a real command to its end, started
    under the identities the document reserved (as the scheduler starts it)."""
    mission = str(
        api.services.schedules.create(
            api.actors["bob"].id, api.home.id, daily_config(), request_id="create-0001"
        ).mission_id
    )
    api.services.schedules.run_now(
        api.actors["bob"].id, mission, request_id="run-0001", expected_revision=1
    )
    pending = api.services.schedules.detail(api.actors["bob"].id, mission)["pending"]
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


def test_the_log_of_a_passage_by_passage_or_session_id(
    api: ApiWorld, runtime: ProcessRuntime
) -> None:
    mission, pending = run_now_passage(api, runtime)
    for ident in (pending["passageId"], pending["sessionId"]):
        with nothing_written(api.store):
            reply = api.client.get(
                log_url(api.home.id, mission, ident), headers=api.headers("carol")
            )
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert body["passageId"] == pending["passageId"]
        assert body["sessionId"] == pending["sessionId"]
        assert body["scheduleId"] == mission
        assert body["status"] == "exited" and body["exitStatus"] == 0
        assert GREETING in body["log"]
        assert body["log"] == runtime.observe(pending["sessionId"]).log_tail
        assert body["report"] is None and body["interrupted"] is None
        # Server internals stay out: no directory, no pid, no environment.
        assert not {"directory", "pid", "envNames", "command"} & set(body)


def test_the_detail_shows_the_pending_passage_output(
    api: ApiWorld, runtime: ProcessRuntime
) -> None:
    mission, pending = run_now_passage(api, runtime)
    reply = api.client.get(
        f"/api/workspaces/{api.home.id}/missions/{mission}/schedule", headers=api.headers("bob")
    )
    assert reply.status_code == 200, reply.text
    shown = reply.json()["pending"]
    assert shown["sessionId"] == pending["sessionId"]
    assert GREETING in shown["logTail"]


def test_a_passage_of_another_schedule_or_none_is_not_found(
    api: ApiWorld, runtime: ProcessRuntime
) -> None:
    mission, pending = run_now_passage(api, runtime)
    other = str(
        api.services.schedules.create(
            api.actors["bob"].id, api.home.id, daily_config(), request_id="create-0002"
        ).mission_id
    )
    with nothing_written(api.store):
        foreign = api.client.get(
            log_url(api.home.id, other, pending["passageId"]), headers=api.headers("bob")
        )
        unknown = api.client.get(
            log_url(api.home.id, mission, "psg_unknown"), headers=api.headers("bob")
        )
    for reply in (foreign, unknown):
        body = error(reply, 404, "not-found")
        assert body["details"] == {"field": "passageID"}
        assert str(runtime.root) not in reply.text
        assert GREETING not in reply.text


def test_the_log_is_refused_outside_the_schedule_workspace(
    api: ApiWorld, runtime: ProcessRuntime
) -> None:
    mission, pending = run_now_passage(api, runtime)
    with nothing_written(api.store):
        stranger = api.client.get(
            log_url(api.home.id, mission, pending["passageId"]), headers=api.headers("dave")
        )
        elsewhere = api.client.get(
            log_url(api.away.id, mission, pending["passageId"]), headers=api.headers("dave")
        )
        anonymous = api.client.get(log_url(api.home.id, mission, pending["passageId"]))
    assert error(stranger, 404, "not-found")["details"]["field"] == "workspace"
    assert error(elsewhere, 404, "not-found")["details"]["field"] == "missionID"
    error(anonymous, 401, "unauthenticated")
    for reply in (stranger, elsewhere, anonymous):
        assert GREETING not in reply.text


def test_a_server_without_a_runtime_has_no_logs(api: ApiWorld, runtime: ProcessRuntime) -> None:
    mission, pending = run_now_passage(api, runtime)
    ctx = ApiContext(services=api.services, accounts=api.accounts, settings=ApiSettings())
    client = TestClient(create_app(ctx, access_log_enabled=False), raise_server_exceptions=False)
    reply = client.get(
        log_url(api.home.id, mission, pending["passageId"]), headers=api.headers("bob")
    )
    error(reply, 404, "no-runtime")
    detail = client.get(
        f"/api/workspaces/{api.home.id}/missions/{mission}/schedule", headers=api.headers("bob")
    )
    assert detail.status_code == 200
    assert "logTail" not in detail.json()["pending"]
    caps = client.get(
        f"/api/workspaces/{api.home.id}/missions/scheduled/capabilities",
        headers=api.headers("bob"),
    )
    assert caps.json()["passageReports"] is False
