"""The run privilege over HTTP (issue 16 §1): the server's owner account grants and
revokes it (``POST``/``DELETE /api/actors/{actor}/grants/run``), ``GET /api/actors`` shows
it as ``mayRun``, and an editor without it is refused creating a schedule or changing
its profile (403 ``run-privilege-required``) but edits everything else. On both
backends; every refusal writes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from api.conftest import ApiWorld
from api.test_missions_schedules import control, create, created, detail
from api.test_tasks_support import invalid, ok, refused
from missions.conftest import daily_config

BOBS_RUN = "/api/actors/bob/grants/run"


@pytest.fixture(autouse=True)
def _tokens_used(api: ApiWorld) -> None:
    """Each token's first use records it (``lastUsedAt``); done here, so that a refusal
    in a test writes nothing of its own."""
    for who in ("alice", "bob", "carol", "dave"):
        assert api.client.get("/api/auth/me", headers=api.headers(who)).status_code == 200


def revoke_bobs(api: ApiWorld) -> None:
    reply = ok(api.client.delete(BOBS_RUN, headers=api.headers("alice")))
    assert reply["handle"] == "bob" and reply["mayRun"] is False


def may_run(api: ApiWorld) -> dict[str, bool]:
    listed = ok(api.client.get("/api/actors", headers=api.headers("carol")))
    return {a["handle"]: a["mayRun"] for a in listed}


class TestGranting:
    def test_the_servers_owner_revokes_and_grants_and_the_listing_shows_it(
        self, api: ApiWorld
    ) -> None:
        assert may_run(api)["bob"] is True
        revoke_bobs(api)
        assert may_run(api)["bob"] is False
        granted = ok(api.client.post(BOBS_RUN, headers=api.headers("alice")))
        assert granted == {**api.actors["bob"].to_json(), "mayRun": True}
        assert may_run(api)["bob"] is True
        assert api.services.grants.standing("bob").may_run

    @pytest.mark.parametrize("who", ["bob", "carol", "dave"])  # holders or not, none owns
    @pytest.mark.parametrize("method", ["POST", "DELETE"])
    def test_only_the_servers_owner_may_grant_or_revoke(
        self, api: ApiWorld, who: str, method: str
    ) -> None:
        reply = refused(api, method, "/api/actors/carol/grants/run", api.headers(who), 403)
        assert reply.json()["code"] == "forbidden"
        assert "only the server's owner account" in reply.json()["message"]

    def test_granting_an_unknown_actor_is_not_found(self, api: ApiWorld) -> None:
        for method in ("POST", "DELETE"):
            refused(api, method, "/api/actors/nobody/grants/run", api.headers("alice"), 404)

    def test_an_unknown_privilege_is_bad_input(self, api: ApiWorld) -> None:
        invalid(api, "POST", "/api/actors/bob/grants/root", "privilege")

    def test_revoking_the_owner_leaves_the_owner_holding_it(self, api: ApiWorld) -> None:
        reply = ok(api.client.delete("/api/actors/alice/grants/run", headers=api.headers("alice")))
        assert reply["mayRun"] is True


class TestSchedules:
    def test_an_editor_without_the_privilege_cannot_create_a_schedule(self, api: ApiWorld) -> None:
        revoke_bobs(api)
        body = {"requestID": "create-0001", "config": daily_config()}
        url = f"/api/workspaces/{api.home.id}/missions/scheduled"
        reply = refused(api, "POST", url, api.headers("bob"), 403, json=body)
        assert reply.json()["code"] == "run-privilege-required"
        assert reply.json()["details"] == {"privilege": "run"}
        ok(api.client.post(BOBS_RUN, headers=api.headers("alice")))
        assert create(api, "create-0001").status_code == 201

    @pytest.mark.parametrize(
        "profile",
        [
            {"command": ["sh", "-c", "cd / && cat kalends.sqlite3"]},  # the command
            {"command": ["echo", "hello"], "env": {"PATH": "/tmp"}},  # the environment
            {"command": ["echo", "hello"], "cwd": "sub"},  # the directory
        ],
        ids=["command", "env", "cwd"],
    )
    def test_an_editor_without_the_privilege_cannot_change_the_profile(
        self, api: ApiWorld, profile: dict[str, Any]
    ) -> None:
        mission = created(api, "create-0001")
        revoke_bobs(api)
        body = {
            "action": "configure",
            "requestID": "edit-0001",
            "expectedRevision": 1,
            "changes": {"profile": profile},
        }
        url = f"/api/workspaces/{api.home.id}/missions/{mission}/schedule"
        reply = refused(api, "POST", url, api.headers("bob"), 403, json=body)
        assert reply.json()["code"] == "run-privilege-required"
        assert detail(api, mission)["profile"]["command"] == ["echo", "hello"]

    def test_an_editor_without_the_privilege_changes_objective_and_timing(
        self, api: ApiWorld
    ) -> None:
        mission = created(api, "create-0001")
        revoke_bobs(api)
        changes = {
            "objective": "Only the failures.",
            "policy": {"kind": "daily", "time": "18:00", "zone": "Europe/Berlin"},
        }
        reply = control(api, mission, "configure", "edit-0001", 1, changes=changes)
        assert reply.status_code == 200, reply.text
        stored = detail(api, mission)
        assert stored["objective"] == "Only the failures."
        assert stored["policy"]["time"] == "18:00"

    @pytest.mark.parametrize("name", ["LD_PRELOAD", "PYTHONPATH", "ld_library_path"])
    def test_loader_and_python_variables_are_refused_even_with_the_privilege(
        self, api: ApiWorld, name: str
    ) -> None:
        profile = {"command": ["echo", "hello"], "env": {name: "/tmp/evil.so"}}
        body = {"requestID": "create-0001", "config": daily_config(profile=profile)}
        url = f"/api/workspaces/{api.home.id}/missions/scheduled"
        reply = invalid(api, "POST", url, "config.profile.env", who="alice", json=body)
        assert name in reply.json()["message"]
