"""Refusals of the mission routes (seed 002's error contract): conflicts, Run now through
the control route, a busy store, bad input and who may do what. Every refusal writes
nothing; on both backends."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from uuid import UUID

import httpx2
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import Connection

from api.conftest import ApiWorld
from kalends.api import ApiContext, ApiSettings, create_app
from kalends.auth import Accounts, LoginThrottle
from kalends.bootstrap import build
from kalends.missions import Action
from kalends.missions.limits import MAX_CONFIG_BYTES, MAX_SCHEDULES
from kalends.storage.engine import WRITE_OPTION
from kalends.storage.testing import StorageTarget, nothing_written
from kalends.storage.unit_of_work import Store
from missions.conftest import daily_config
from missions.refusal_support import only_the_refusal_recorded

NIL = "00000000-0000-0000-0000-000000000000"


@pytest.fixture(autouse=True)
def _tokens_used(api: ApiWorld) -> None:
    """Each token's first use records it (``lastUsedAt``); done here, so that a refusal
    in a test writes nothing of its own."""
    for who in ("alice", "bob", "carol", "dave"):
        assert api.client.get("/api/auth/me", headers=api.headers(who)).status_code == 200


def scheduled(workspace: UUID | str) -> str:
    return f"/api/workspaces/{workspace}/missions/scheduled"


def schedule(workspace: UUID | str, mission: str, tail: str = "") -> str:
    return f"/api/workspaces/{workspace}/missions/{mission}/schedule{tail}"


def passage_log(workspace: UUID | str, mission: str, passage: str) -> str:
    return f"/api/workspaces/{workspace}/missions/{mission}/passages/{passage}/log"


def create(api: ApiWorld, request_id: str, **overrides: Any) -> str:
    receipt = api.services.schedules.create(
        api.actors["bob"].id, api.home.id, daily_config(**overrides), request_id=request_id
    )
    return str(receipt.mission_id)


def control_body(action: str, request_id: str, revision: int, **extra: Any) -> dict[str, Any]:
    return {"action": action, "requestID": request_id, "expectedRevision": revision, **extra}


def post_control(
    api: ApiWorld, mission: str, body: dict[str, Any], who: str = "bob"
) -> httpx2.Response:
    return api.client.post(schedule(api.home.id, mission), json=body, headers=api.headers(who))


def error(reply: httpx2.Response, status: int, code: str) -> dict[str, Any]:
    assert reply.status_code == status, reply.text
    body: dict[str, Any] = reply.json()
    assert body["code"] == code, body
    return body


def revision_of(api: ApiWorld, mission: str) -> int:
    value: int = api.services.schedules.detail(api.actors["alice"].id, mission)["revision"]
    return value


# --- conflicts ----------------------------------------------------------------------------------


def test_a_stale_revision_is_a_revision_conflict_and_writes_nothing(api: ApiWorld) -> None:
    mission = create(api, "create-0001")
    api.services.schedules.play(
        api.actors["bob"].id, mission, request_id="play-0001", expected_revision=1
    )
    with nothing_written(api.store):
        reply = post_control(api, mission, control_body("pause", "pause-0001", 1))
    body = error(reply, 409, "recurrence-revision-conflict")
    assert body["details"] == {"expected": 1, "actual": 2}
    assert api.services.schedules.detail(api.actors["bob"].id, mission)["desiredState"] == "running"
    # The exact status read proves the stale request can never apply.
    status = api.client.get(
        schedule(api.home.id, mission, "/requests/pause-0001"),
        params={"expectedRevision": 1, "action": "pause"},
        headers=api.headers("bob"),
    )
    assert status.json()["status"] == "rejected"
    assert status.json()["code"] == "revision-conflict"


def test_a_control_the_state_refuses_is_a_control_conflict(api: ApiWorld) -> None:
    mission = create(api, "create-0001")
    cases = [
        ("resume", "a paused schedule is started with Play"),
        ("pause", "already paused"),
        ("check", "no passage is pending"),
    ]
    for n, (action, _why) in enumerate(cases):
        # The document stays as it was; the refusal is recorded under its request ID.
        with only_the_refusal_recorded(api.store, f"refused-{n:04d}"):
            reply = post_control(api, mission, control_body(action, f"refused-{n:04d}", 1))
        body = error(reply, 409, "recurrence-control-conflict")
        assert body["details"]["action"] == action
        assert body["details"]["revision"] == 1
    api.services.schedules.stop(
        api.actors["bob"].id, mission, request_id="stop-0001", expected_revision=1
    )
    with only_the_refusal_recorded(api.store, "play-0001"):
        reply = post_control(api, mission, control_body("play", "play-0001", 2))
    with only_the_refusal_recorded(api.store, "run-0001"):
        run = api.client.post(
            schedule(api.home.id, mission, "/run-now"),
            json={"requestID": "run-0001", "expectedRevision": 2},
            headers=api.headers("bob"),
        )
    assert "Stop is final" in error(reply, 409, "recurrence-control-conflict")["message"]
    error(run, 409, "recurrence-control-conflict")
    assert api.services.schedules.detail(api.actors["bob"].id, mission)["state"] == "stopped"


def test_run_now_through_the_control_route_is_refused_first(api: ApiWorld) -> None:
    mission = create(api, "create-0001")
    with nothing_written(api.store):
        reply = post_control(api, mission, control_body("run-now", "run-0001", 1))
        # Before anything else: the body's other fields, the IDs and the roles are not read.
        sloppy = post_control(api, mission, {"action": "run-now", "requestID": "x"}, who="carol")
        foreign = api.client.post(
            schedule(NIL, "not-a-mission"),
            json={"action": "run-now"},
            headers=api.headers("dave"),
        )
    body = error(reply, 400, "run-now-own-route")
    assert body["details"]["field"] == "action"
    assert body["details"]["route"].endswith("/schedule/run-now")
    error(sloppy, 400, "run-now-own-route")
    error(foreign, 400, "run-now-own-route")
    assert api.services.schedules.detail(api.actors["bob"].id, mission)["pending"] is None
    status = api.services.schedules.control_status(api.actors["bob"].id, mission, "run-0001")
    assert status.status == "unknown"
    # Authentication still comes first.
    anonymous = api.client.post(
        schedule(api.home.id, mission), json=control_body("run-now", "run-0001", 1)
    )
    error(anonymous, 401, "unauthenticated")


def test_creating_past_the_workspace_ceiling_is_refused(api: ApiWorld) -> None:
    for i in range(MAX_SCHEDULES):
        create(api, f"create-{i:04d}", title=f"Schedule {i}")
    with nothing_written(api.store):
        reply = api.client.post(
            scheduled(api.home.id),
            json={"requestID": "create-9999", "config": daily_config(title="One too many")},
            headers=api.headers("bob"),
        )
    body = error(reply, 409, "limit-reached")
    assert body["details"]["limit"] == MAX_SCHEDULES


def _config_over_ceiling() -> dict[str, Any]:
    env = {f"FILL_{i:02d}": "x" * 8000 for i in range(9)}
    config = daily_config(profile={"command": ["true"], "env": env, "cwd": "."})
    assert sum(len(v) for v in env.values()) > MAX_CONFIG_BYTES
    return config


def test_an_oversized_configuration_is_413(api: ApiWorld) -> None:
    mission = create(api, "create-0001")
    big = _config_over_ceiling()
    with nothing_written(api.store):
        created = api.client.post(
            scheduled(api.home.id),
            json={"requestID": "create-big1", "config": big},
            headers=api.headers("bob"),
        )
        grown = post_control(
            api,
            mission,
            control_body("configure", "grow-0001", 1, changes={"profile": big["profile"]}),
        )
    body = error(created, 413, "too-large")
    assert body["details"]["field"] == "config"
    assert body["details"]["limit"] == MAX_CONFIG_BYTES
    assert error(grown, 413, "too-large")["details"]["limit"] == MAX_CONFIG_BYTES
    receipt = api.services.schedules.receipt(api.actors["bob"].id, api.home.id, "create-big1")
    assert receipt.status == "unknown"


# --- a busy store ---------------------------------------------------------------------------------


@contextmanager
def store_held(target: StorageTarget) -> Iterator[None]:
    """Another connection holds what every control needs: SQLite's write lock
    (``BEGIN IMMEDIATE``), or PostgreSQL's schedules table (ACCESS EXCLUSIVE)."""
    conn: Connection = target.engine().connect()
    try:
        if target.backend == "sqlite":
            conn.execution_options(**{WRITE_OPTION: True})
            transaction = conn.begin()
        else:
            transaction = conn.begin()
            conn.execute(text("LOCK TABLE schedules IN ACCESS EXCLUSIVE MODE"))
        try:
            yield
        finally:
            transaction.rollback()
    finally:
        conn.close()


def test_a_busy_store_answers_not_dispatched_and_writes_nothing(
    api: ApiWorld, storage_target: StorageTarget
) -> None:
    mission = create(api, "create-0001")
    contended = Store(
        storage_target.engine(busy_timeout_ms=20), api.clock, max_attempts=2, sleep=lambda _s: None
    )
    ctx = ApiContext(
        services=build(contended),
        accounts=Accounts(contended, throttle=LoginThrottle(api.clock)),
        settings=ApiSettings(runtime_dir=api.root / "runtime"),
    )
    client = TestClient(create_app(ctx, access_log_enabled=False), raise_server_exceptions=False)
    headers = api.headers("bob")
    with nothing_written(api.store):
        with store_held(storage_target):
            played = client.post(
                schedule(api.home.id, mission),
                json=control_body("play", "play-0001", 1),
                headers=headers,
            )
            ran = client.post(
                schedule(api.home.id, mission, "/run-now"),
                json={"requestID": "run-0001", "expectedRevision": 1},
                headers=headers,
            )
            made = client.post(
                scheduled(api.home.id),
                json={"requestID": "create-0002", "config": daily_config()},
                headers=headers,
            )
        # Nothing was sent: the request's status is unknown, never applied.
        status = api.client.get(
            schedule(api.home.id, mission, "/requests/play-0001"), headers=headers
        )
    for reply in (played, ran, made):
        body = error(reply, 503, "recurrence-not-dispatched")
        assert body["details"]["attempts"] == 2
    assert status.json()["status"] == "unknown"
    # The client kept its request ID: once the store answers, the same request applies once.
    again = client.post(
        schedule(api.home.id, mission), json=control_body("play", "play-0001", 1), headers=headers
    )
    assert again.status_code == 200, again.text
    assert again.json()["repeated"] is False
    assert revision_of(api, mission) == 2


# --- bad input ------------------------------------------------------------------------------------


def field_of(reply: httpx2.Response) -> str:
    body = error(reply, 422, reply.json().get("code", "?"))
    field: str = body["details"]["field"]
    return field


def test_malformed_ids_in_paths_name_their_field(api: ApiWorld) -> None:
    mission = create(api, "create-0001")
    headers = api.headers("bob")
    home = api.home.id
    with nothing_written(api.store):
        cases = [
            (api.client.get(schedule("nope", mission), headers=headers), "id"),
            (api.client.get(schedule(home, "nope"), headers=headers), "missionID"),
            (api.client.get(scheduled("nope"), headers=headers), "id"),
            (api.client.get(scheduled(home) + "/requests/short", headers=headers), "requestID"),
            (
                api.client.get(scheduled(home) + "/requests/" + "r" * 65, headers=headers),
                "requestID",
            ),
            (
                api.client.get(schedule(home, mission, "/requests/bad id!!"), headers=headers),
                "requestID",
            ),
            (
                api.client.post(
                    schedule(home, "12"), json=control_body("play", "play-0001", 1), headers=headers
                ),
                "missionID",
            ),
            (
                api.client.get(passage_log(home, mission, ".hidden"), headers=headers),
                "passageID",
            ),
        ]
    for reply, field in cases:
        assert reply.status_code == 422, (field, reply.text)
        assert reply.json()["code"] == "invalid-input"
        assert reply.json()["details"]["field"] == field


BAD_CONTROLS: list[tuple[dict[str, Any], str]] = [
    ({"action": "launch", "requestID": "req-00001", "expectedRevision": 1}, "action"),
    ({"requestID": "req-00001", "expectedRevision": 1}, "action"),
    ({"action": "play", "requestID": "short", "expectedRevision": 1}, "requestID"),
    ({"action": "play", "requestID": "has space 1", "expectedRevision": 1}, "requestID"),
    ({"action": "play", "requestID": "req-00001", "expectedRevision": "1"}, "expectedRevision"),
    ({"action": "play", "requestID": "req-00001", "expectedRevision": True}, "expectedRevision"),
    ({"action": "play", "requestID": "req-00001", "expectedRevision": 0}, "expectedRevision"),
    ({"action": "play", "requestID": "req-00001", "expectedRevision": 1.5}, "expectedRevision"),
    ({"action": "play", "requestID": "req-00001", "expectedRevision": 2**53}, "expectedRevision"),
    ({"action": "play", "requestID": "req-00001"}, "expectedRevision"),
    ({"action": "play", "requestID": "req-00001", "expectedRevision": 1, "force": 1}, "force"),
    (
        {"action": "play", "requestID": "req-00001", "expectedRevision": 1, "changes": {"a": 1}},
        "changes",
    ),
    ({"action": "configure", "requestID": "req-00001", "expectedRevision": 1}, "changes"),
    (
        {"action": "configure", "requestID": "req-00001", "expectedRevision": 1, "changes": {}},
        "changes",
    ),
    (
        {
            "action": "configure",
            "requestID": "req-00001",
            "expectedRevision": 1,
            "changes": {"colour": "red"},
        },
        "changes.colour",
    ),
    (
        {
            "action": "configure",
            "requestID": "req-00001",
            "expectedRevision": 1,
            "changes": {"policy": {"kind": "fortnightly"}},
        },
        "changes.policy.kind",
    ),
]


def test_bad_control_bodies_name_their_field(api: ApiWorld) -> None:
    mission = create(api, "create-0001")
    for body, field in BAD_CONTROLS:
        with nothing_written(api.store):
            reply = post_control(api, mission, body)
        assert reply.status_code == 422, (body, reply.text)
        assert reply.json()["details"]["field"] == field, (body, reply.json())
    not_json = api.client.post(
        schedule(api.home.id, mission),
        content=b"{not json",
        headers={**api.headers("bob"), "Content-Type": "application/json"},
    )
    assert not_json.status_code == 422
    bad_run = api.client.post(
        schedule(api.home.id, mission, "/run-now"),
        json={"requestID": "run-0001", "expectedRevision": "one"},
        headers=api.headers("bob"),
    )
    assert field_of(bad_run) == "expectedRevision"
    assert revision_of(api, mission) == 1


BAD_CREATIONS: list[tuple[dict[str, Any], str]] = [
    ({"config": daily_config()}, "requestID"),
    ({"requestID": "create-0001"}, "config"),
    ({"requestID": "create-0001", "config": "daily"}, "config"),
    ({"requestID": "create-0001", "config": daily_config(), "paused": False}, "paused"),
    (
        {"requestID": "create-0001", "config": daily_config(policy={"kind": "fortnightly"})},
        "config.policy.kind",
    ),
    ({"requestID": "create-0001", "config": daily_config(title="")}, "config.title"),
    ({"requestID": "create-0001", "config": daily_config(colour="red")}, "config.colour"),
    (
        {
            "requestID": "create-0001",
            "config": daily_config(profile={"command": ["sh"], "cwd": "/etc"}),
        },
        "config.profile.cwd",
    ),
]


def test_bad_creations_name_their_field(api: ApiWorld) -> None:
    for body, field in BAD_CREATIONS:
        with nothing_written(api.store):
            reply = api.client.post(scheduled(api.home.id), json=body, headers=api.headers("bob"))
        assert reply.status_code == 422, (body, reply.text)
        assert reply.json()["details"]["field"] == field, (body, reply.json())


def test_text_that_is_not_unicode_is_refused(api: ApiWorld) -> None:
    mission = create(api, "create-0001")
    headers = {**api.headers("bob"), "Content-Type": "application/json"}
    policy = '{"kind": "daily", "time": "09:00", "zone": "UTC"}'
    config = '{"title": "\\ud800", "profile": {"command": ["true"]}, "policy": ' + policy + "}"
    with nothing_written(api.store):
        made = api.client.post(
            scheduled(api.home.id),
            content='{"requestID": "create-0002", "config": ' + config + "}",
            headers=headers,
        )
        edited = api.client.post(
            schedule(api.home.id, mission),
            content='{"action": "configure", "requestID": "edit-0001", "expectedRevision": 1, '
            '"changes": {"notes": "\\udfff"}}',
            headers=headers,
        )
    assert field_of(made) == "config"
    assert field_of(edited) == "changes"


def test_bad_query_parameters_name_their_field(api: ApiWorld) -> None:
    mission = create(api, "create-0001")
    headers = api.headers("bob")
    page = scheduled(api.home.id)
    status = schedule(api.home.id, mission, "/requests/play-0001")
    preview = schedule(api.home.id, mission, "/preview")
    cases: list[tuple[str, dict[str, str | int], str]] = [
        (page, {"limit": 0}, "limit"),
        (page, {"limit": 9}, "limit"),
        (page, {"limit": "eight"}, "limit"),
        (page, {"after": "nope"}, "after"),
        (status, {"expectedRevision": 0}, "expectedRevision"),
        (status, {"expectedRevision": "x"}, "expectedRevision"),
        (status, {"action": "launch"}, "action"),
        (preview, {"count": 0}, "count"),
        (preview, {"count": 101}, "count"),
    ]
    with nothing_written(api.store):
        for url, params, field in cases:
            reply = api.client.get(url, params=params, headers=headers)
            assert reply.status_code == 422, (params, reply.text)
            assert reply.json()["details"]["field"] == field


# --- who may do what ----------------------------------------------------------------------------


def every_route(home: UUID | str, mission: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    control = control_body("pause", "pause-0001", 1)
    run = {"requestID": "run-0001", "expectedRevision": 1}
    create_body = {"requestID": "create-0002", "config": daily_config()}
    return [
        ("POST", scheduled(home), create_body),
        ("GET", scheduled(home), None),
        ("GET", scheduled(home) + "/requests/create-0001", None),
        ("GET", scheduled(home) + "/capabilities", None),
        ("GET", schedule(home, mission), None),
        ("POST", schedule(home, mission), control),
        ("POST", schedule(home, mission, "/run-now"), run),
        ("GET", schedule(home, mission, "/requests/pause-0001"), None),
        ("GET", schedule(home, mission, "/preview"), None),
        ("GET", schedule(home, mission, "/history"), None),
        ("GET", passage_log(home, mission, "psg_1"), None),
    ]


def test_without_valid_credentials_every_route_is_401(api: ApiWorld) -> None:
    mission = create(api, "create-0001")
    credentials: list[dict[str, str]] = [
        {},
        api.headers("erin"),  # expired
        api.headers("frank"),  # revoked
        {"Authorization": "Bearer kal_forged"},
        {"Authorization": "Basic YWxpY2U6eA=="},
    ]
    with nothing_written(api.store):
        for method, url, body in every_route(api.home.id, mission):
            for headers in credentials:
                reply = api.client.request(method, url, json=body, headers=headers)
                assert reply.status_code == 401, (method, url, headers, reply.text)
                assert reply.json()["code"] == "unauthenticated"


def test_a_viewer_reads_but_never_writes(api: ApiWorld) -> None:
    mission = create(api, "create-0001")
    api.services.schedules.play(
        api.actors["bob"].id, mission, request_id="play-0001", expected_revision=1
    )
    with nothing_written(api.store):
        for method, url, body in every_route(api.home.id, mission):
            reply = api.client.request(method, url, json=body, headers=api.headers("carol"))
            if method == "POST":
                error(reply, 403, "forbidden")
            elif url.endswith("/log"):
                # Readable, but no such passage ran here.
                assert error(reply, 404, "not-found")["details"]["field"] == "passageID"
            else:
                assert reply.status_code == 200, (url, reply.text)
    assert revision_of(api, mission) == 2


def test_a_non_member_is_refused_everything_of_the_workspace(api: ApiWorld) -> None:
    mission = create(api, "create-0001")
    with nothing_written(api.store):
        for method, url, body in every_route(api.home.id, mission):
            reply = api.client.request(method, url, json=body, headers=api.headers("dave"))
            assert reply.status_code in (403, 404), (url, reply.text)
            assert "Morning report" not in reply.text
            assert mission not in reply.text


def test_a_schedule_is_found_only_under_its_own_workspace(api: ApiWorld) -> None:
    receipt = api.services.schedules.create(
        api.actors["dave"].id, api.away.id, daily_config(), request_id="create-away-1"
    )
    away_mission = str(receipt.mission_id)
    home_mission = create(api, "create-0001")
    with nothing_written(api.store):
        for method, url, body in every_route(api.home.id, away_mission):
            if "/missions/scheduled" in url:
                continue  # workspace-wide routes: no schedule in their path
            # alice (owner of home) addressing away's schedule through home's path.
            reply = api.client.request(method, url, json=body, headers=api.headers("alice"))
            body_ = error(reply, 404, "not-found")
            assert body_["details"]["field"] == "missionID"
            assert "Morning report" not in reply.text
            # dave owns the schedule, but home is not his: refused as well.
            reply = api.client.request(method, url, json=body, headers=api.headers("dave"))
            assert reply.status_code in (403, 404), (url, reply.text)
        for method, url, body in every_route(api.away.id, home_mission):
            if "/missions/scheduled" in url:
                continue
            reply = api.client.request(method, url, json=body, headers=api.headers("dave"))
            error(reply, 404, "not-found")
    assert api.services.schedules.detail(api.actors["dave"].id, away_mission)["revision"] == 1


def test_an_unknown_schedule_or_workspace_is_404(api: ApiWorld) -> None:
    with nothing_written(api.store):
        detail = api.client.get(schedule(api.home.id, NIL), headers=api.headers("alice"))
        page = api.client.get(scheduled(NIL), headers=api.headers("alice"))
    error(detail, 404, "not-found")
    error(page, 404, "not-found")


def test_a_cookie_session_needs_its_csrf_token_for_a_control(api: ApiWorld) -> None:
    mission = create(api, "create-0001")
    csrf = api.login("bob")
    with nothing_written(api.store):
        refused = api.client.post(
            schedule(api.home.id, mission), json=control_body("play", "play-0001", 1)
        )
    error(refused, 403, "csrf-failed")
    done = api.client.post(
        schedule(api.home.id, mission), json=control_body("play", "play-0001", 1), headers=csrf
    )
    assert done.status_code == 200, done.text
    assert revision_of(api, mission) == 2
    # A cookie session reads without the CSRF header.
    assert api.client.get(schedule(api.home.id, mission)).status_code == 200


def test_the_openapi_document_describes_the_mission_routes(api: ApiWorld) -> None:
    spec = api.client.get("/openapi.json").json()
    paths = spec["paths"]
    control = paths["/api/workspaces/{id}/missions/{missionID}/schedule"]["post"]
    assert {"400", "401", "403", "404", "409", "422", "503"} <= set(control["responses"])
    schemas = spec["components"]["schemas"]
    controls = [a.value for a in Action if a is not Action.RUN_NOW]
    assert schemas["ControlBody"]["properties"]["action"]["enum"] == controls
    create_op = paths["/api/workspaces/{id}/missions/scheduled"]["post"]
    assert {"200", "201", "409", "413"} <= set(create_op["responses"])
    for path in (
        "/api/workspaces/{id}/missions/scheduled/requests/{requestID}",
        "/api/workspaces/{id}/missions/scheduled/capabilities",
        "/api/workspaces/{id}/missions/{missionID}/schedule/run-now",
        "/api/workspaces/{id}/missions/{missionID}/schedule/requests/{requestID}",
        "/api/workspaces/{id}/missions/{missionID}/schedule/preview",
        "/api/workspaces/{id}/missions/{missionID}/schedule/history",
        "/api/workspaces/{id}/missions/{missionID}/passages/{passageID}/log",
        "/api/passages/report",
    ):
        assert path in paths, path
        for operation in paths[path].values():
            assert operation["summary"]
