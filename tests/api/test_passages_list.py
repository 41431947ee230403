"""The passages a person may see over HTTP (``GET /api/passages``, what ``kalends passage
ls`` shows): those of this server's runtime directory whose schedule is in a workspace
where the caller has a role, newest first, with the records the CLI prints. On both
backends; reading writes nothing."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.conftest import ApiWorld
from api.test_tasks_support import invalid, ok, refused
from kalends.api import ApiContext, ApiSettings, create_app
from kalends.missions.runtime import PassageStart
from kalends.missions.runtime.passages import read_passage
from kalends.missions.runtime.process import ProcessRuntime
from kalends.storage.testing import nothing_written
from missions.conftest import daily_config


@pytest.fixture(autouse=True)
def _tokens_used(api: ApiWorld) -> None:
    """Each token's first use records it (``lastUsedAt``); done here, so that a read in a
    test writes nothing of its own."""
    for who in ("alice", "bob", "carol", "dave"):
        assert api.client.get("/api/auth/me", headers=api.headers(who)).status_code == 200


def schedule_in(api: ApiWorld, who: str, workspace: Any, request_id: str) -> str:
    made = api.services.schedules.create(
        api.actors[who].id, workspace, daily_config(), request_id=request_id
    )
    return str(made.mission_id)


@pytest.fixture
def runtime(api: ApiWorld) -> ProcessRuntime:
    return ProcessRuntime(api.root / "runtime", clock=api.clock)


@pytest.fixture
def admitted(api: ApiWorld, runtime: ProcessRuntime) -> dict[str, str]:
    """Passages admitted a second apart (none launched): two of a schedule of home, one of
    away's, one naming a schedule the database does not know, one naming none it could."""
    home = schedule_in(api, "bob", api.home.id, "create-home")
    away = schedule_in(api, "dave", api.away.id, "create-away")
    sessions = {
        "ses_home_1": home,
        "ses_away_1": away,
        "ses_home_2": home,
        "ses_unknown": str(uuid.uuid4()),
        "ses_other": "sch_other",
    }
    for session, mission in sessions.items():
        api.clock.advance(timedelta(seconds=1))
        runtime.admit(
            PassageStart(
                passage_id="psg" + session.removeprefix("ses"),
                session_id=session,
                message_id="msg" + session.removeprefix("ses"),
                schedule_id=mission,
                workspace=api.home.path,
                command=("true",),
                env=(("TOKEN", "s3cret-value"),),
            )
        )
    return {"home": home, "away": away}


def listing(api: ApiWorld, who: str, **params: Any) -> dict[str, Any]:
    with nothing_written(api.store):
        reply = api.client.get("/api/passages", headers=api.headers(who), params=params)
    found: dict[str, Any] = ok(reply)
    return found


def sessions(found: dict[str, Any]) -> list[str]:
    return [p["sessionId"] for p in found["items"]]


class TestWhoSeesWhat:
    @pytest.mark.parametrize(
        ("who", "expected"),
        [
            ("alice", ["ses_home_2", "ses_home_1"]),  # home's owner
            ("bob", ["ses_home_2", "ses_home_1"]),  # its editor
            ("carol", ["ses_home_2", "ses_home_1"]),  # its viewer
            ("dave", ["ses_away_1"]),  # away's owner, no member of home
        ],
    )
    def test_each_person_sees_the_passages_of_their_workspaces_newest_first(
        self,
        api: ApiWorld,
        runtime: ProcessRuntime,
        admitted: dict[str, str],
        who: str,
        expected: list[str],
    ) -> None:
        found = listing(api, who)
        assert sessions(found) == expected
        assert found["total"] == len(expected)
        assert found["runtimeDir"] == str(runtime.root)
        # Each item as `kalends passage ls --json` prints it on the server's machine.
        for item in found["items"]:
            here = read_passage(runtime, runtime.passage_dir(item["sessionId"])).to_json()
            assert item == here
            assert item["status"] == "admitted" and item["envNames"] == ["TOKEN"]
        assert "s3cret-value" not in str(found)

    def test_someone_without_a_workspace_sees_none(
        self, api: ApiWorld, admitted: dict[str, str]
    ) -> None:
        alice = api.actors["alice"].id
        api.services.workspaces.remove_member(alice, api.home.id, api.actors["carol"].id)
        assert listing(api, "carol") == {
            "runtimeDir": str(api.root / "runtime"),
            "total": 0,
            "items": [],
        }

    def test_a_deleted_schedules_passages_stay_visible_to_its_workspace(
        self, api: ApiWorld, admitted: dict[str, str]
    ) -> None:
        api.services.schedules.control(
            api.actors["bob"].id,
            admitted["home"],
            "delete",
            request_id="delete-home",
            expected_revision=1,
        )
        assert sessions(listing(api, "carol")) == ["ses_home_2", "ses_home_1"]

    def test_a_runtime_without_passages_lists_none(self, api: ApiWorld) -> None:
        found = listing(api, "alice")
        assert (found["total"], found["items"]) == (0, [])


class TestPages:
    @pytest.mark.parametrize(
        ("limit", "expected"),
        [
            (1, ["ses_home_2"]),  # the newest only
            (2, ["ses_home_2", "ses_home_1"]),  # exactly all
            (0, ["ses_home_2", "ses_home_1"]),  # 0: all of them
            (2**53 - 1, ["ses_home_2", "ses_home_1"]),  # the largest JSON holds exactly
        ],
    )
    def test_limit_keeps_the_newest_and_total_counts_them_all(
        self, api: ApiWorld, admitted: dict[str, str], limit: int, expected: list[str]
    ) -> None:
        found = listing(api, "bob", limit=limit)
        assert sessions(found) == expected and found["total"] == 2

    @pytest.mark.parametrize(
        "limit",
        [
            -1,  # negative
            2**53,  # past what JSON holds exactly
            "ten",  # not a number
            "1.5",  # not whole
        ],
    )
    def test_a_malformed_limit_is_refused(
        self, api: ApiWorld, admitted: dict[str, str], limit: object
    ) -> None:
        invalid(api, "GET", "/api/passages", "limit", who="bob", params={"limit": limit})


class TestRefusals:
    def test_without_valid_credentials_nothing_is_listed(
        self, api: ApiWorld, admitted: dict[str, str]
    ) -> None:
        for headers in ({}, api.headers("erin"), api.headers("frank")):  # none, expired, revoked
            reply = refused(api, "GET", "/api/passages", headers, 401, "unauthenticated")
            assert "ses_" not in reply.text

    def test_a_server_without_a_runtime_has_no_passages(
        self, api: ApiWorld, admitted: dict[str, str]
    ) -> None:
        ctx = ApiContext(services=api.services, accounts=api.accounts, settings=ApiSettings())
        client = TestClient(create_app(ctx, access_log_enabled=False))
        with nothing_written(api.store):
            reply = client.get("/api/passages", headers=api.headers("bob"))
        assert reply.status_code == 404, reply.text
        assert reply.json()["code"] == "no-runtime"
