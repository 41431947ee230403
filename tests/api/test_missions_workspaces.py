"""Workspace routes over HTTP (the operations of ``kalends workspace``): list, register,
show, remove, and members managed by owners; on both backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest

from api.conftest import ApiWorld
from kalends.storage.testing import nothing_written
from missions.conftest import daily_config

NIL = "00000000-0000-0000-0000-000000000000"


@pytest.fixture(autouse=True)
def _tokens_used(api: ApiWorld) -> None:
    """Each token's first use records it (``lastUsedAt``); done here, so that a refusal
    in a test writes nothing of its own."""
    for who in ("alice", "bob", "carol", "dave"):
        assert api.client.get("/api/auth/me", headers=api.headers(who)).status_code == 200


def error(reply: httpx2.Response, status: int, code: str) -> dict[str, Any]:
    assert reply.status_code == status, reply.text
    body: dict[str, Any] = reply.json()
    assert body["code"] == code, body
    return body


def members_of(api: ApiWorld, workspace: Any) -> dict[str, str]:
    found = api.services.workspaces.members(api.actors["alice"].id, workspace)
    return {m.handle: m.role.value for m in found}


def test_list_shows_my_workspaces_and_my_role(api: ApiWorld) -> None:
    reply = api.client.get("/api/workspaces", headers=api.headers("carol"))
    assert reply.status_code == 200, reply.text
    assert [(w["name"], w["role"]) for w in reply.json()] == [("home", "viewer")]
    assert reply.json()[0]["id"] == str(api.home.id)
    assert reply.json()[0]["path"] == api.home.path
    dave = api.client.get("/api/workspaces", headers=api.headers("dave")).json()
    assert [w["name"] for w in dave] == ["away"]
    assert dave == [w.to_json() for w in api.services.workspaces.list(api.actors["dave"].id)]


def test_register_a_directory_and_become_its_owner(api: ApiWorld) -> None:
    (api.root / "third").mkdir()
    reply = api.client.post(
        "/api/workspaces",
        json={"path": str(api.root / "third"), "name": "third"},
        headers=api.headers("alice"),
    )
    assert reply.status_code == 201, reply.text
    body = reply.json()
    assert body["role"] == "owner" and body["name"] == "third" and body["schedules"] == 0
    assert body["path"] == str((api.root / "third").resolve())
    stored = api.services.workspaces.get(api.actors["alice"].id, body["id"])
    assert stored.to_json() == body
    # Registered once: the same directory again is a conflict.
    with nothing_written(api.store):
        again = api.client.post(
            "/api/workspaces", json={"path": str(api.root / "third")}, headers=api.headers("alice")
        )
    error(again, 409, "conflict")


def test_a_default_name_is_the_directory_name(api: ApiWorld) -> None:
    (api.root / "projects").mkdir()
    reply = api.client.post(
        "/api/workspaces", json={"path": str(api.root / "projects")}, headers=api.headers("alice")
    )
    assert reply.status_code == 201, reply.text
    assert reply.json()["name"] == "projects"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "x"}, "path"),
        ({"path": ""}, "path"),
        ({"path": "/no/such/directory/here"}, "path"),
        ({"path": "a\x00b"}, "path"),
        ({"path": "/" + "x" * 300}, "path"),
        ({"path": "~no-such-user-of-kalends/x"}, "path"),
        ({"path": "/tmp", "name": ""}, "name"),
        ({"path": "/tmp", "name": "n" * 121}, "name"),
        ({"path": "/tmp", "owner": "me"}, "owner"),
        ({"path": 42}, "path"),
    ],
)
def test_bad_registrations_name_their_field(
    api: ApiWorld, body: dict[str, Any], field: str
) -> None:
    with nothing_written(api.store):
        reply = api.client.post("/api/workspaces", json=body, headers=api.headers("alice"))
    assert error(reply, 422, reply.json()["code"])["details"]["field"] == field


def test_a_file_is_not_a_directory(api: ApiWorld, tmp_path: Path) -> None:
    (tmp_path / "plain.txt").write_text("x")
    with nothing_written(api.store):
        reply = api.client.post(
            "/api/workspaces",
            json={"path": str(tmp_path / "plain.txt")},
            headers=api.headers("alice"),
        )
    assert error(reply, 422, "invalid-input")["details"]["field"] == "path"


def test_show_a_workspace_with_its_members(api: ApiWorld) -> None:
    api.services.schedules.create(
        api.actors["bob"].id, api.home.id, daily_config(), request_id="create-0001"
    )
    with nothing_written(api.store):
        reply = api.client.get(f"/api/workspaces/{api.home.id}", headers=api.headers("carol"))
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["name"] == "home" and body["role"] == "viewer" and body["schedules"] == 1
    assert {m["handle"]: m["role"] for m in body["members"]} == members_of(api, api.home.id)
    assert {m["handle"] for m in body["members"]} == {"alice", "bob", "carol"}


def test_show_is_refused_to_non_members_and_unknown_ids(api: ApiWorld) -> None:
    with nothing_written(api.store):
        foreign = api.client.get(f"/api/workspaces/{api.home.id}", headers=api.headers("dave"))
        unknown = api.client.get(f"/api/workspaces/{NIL}", headers=api.headers("dave"))
        malformed = api.client.get("/api/workspaces/home", headers=api.headers("alice"))
        anonymous = api.client.get(f"/api/workspaces/{api.home.id}")
    # Told as for an ID nobody uses: the same answer but for the ID itself.
    error(foreign, 404, "not-found")
    assert "alice" not in foreign.text
    error(unknown, 404, "not-found")
    assert foreign.text.replace(str(api.home.id), NIL) == unknown.text
    assert error(malformed, 422, "invalid-input")["details"]["field"] == "id"
    error(anonymous, 401, "unauthenticated")


def test_owners_manage_members(api: ApiWorld) -> None:
    dave = api.actors["dave"].id
    url = f"/api/workspaces/{api.home.id}/members/{dave}"
    reply = api.client.put(url, json={"role": "viewer"}, headers=api.headers("alice"))
    assert reply.status_code == 200, reply.text
    assert reply.json() == {"actorId": str(dave), "handle": "dave", "role": "viewer"}
    assert members_of(api, api.home.id)["dave"] == "viewer"
    listed = api.client.get(f"/api/workspaces/{api.home.id}/members", headers=api.headers("dave"))
    assert {m["handle"] for m in listed.json()} == {"alice", "bob", "carol", "dave"}
    promoted = api.client.put(url, json={"role": "editor"}, headers=api.headers("alice"))
    assert promoted.json()["role"] == "editor"
    assert members_of(api, api.home.id)["dave"] == "editor"
    removed = api.client.delete(url, headers=api.headers("alice"))
    assert removed.status_code == 204, removed.text
    assert "dave" not in members_of(api, api.home.id)


def test_only_owners_manage_members_and_an_owner_stays(api: ApiWorld) -> None:
    dave, alice = api.actors["dave"].id, api.actors["alice"].id
    home = f"/api/workspaces/{api.home.id}/members"
    with nothing_written(api.store):
        by_editor = api.client.put(
            f"{home}/{dave}", json={"role": "viewer"}, headers=api.headers("bob")
        )
        by_viewer = api.client.delete(
            f"{home}/{api.actors['bob'].id}", headers=api.headers("carol")
        )
        by_stranger = api.client.get(home, headers=api.headers("dave"))
        last_owner = api.client.put(
            f"{home}/{alice}", json={"role": "editor"}, headers=api.headers("alice")
        )
        remove_last = api.client.delete(f"{home}/{alice}", headers=api.headers("alice"))
        not_member = api.client.delete(f"{home}/{dave}", headers=api.headers("alice"))
        unknown = api.client.put(
            f"{home}/{NIL}", json={"role": "viewer"}, headers=api.headers("alice")
        )
        bad_role = api.client.put(
            f"{home}/{dave}", json={"role": "admin"}, headers=api.headers("alice")
        )
        bad_id = api.client.put(
            f"{home}/no%20way", json={"role": "viewer"}, headers=api.headers("alice")
        )
    error(by_editor, 403, "forbidden")
    error(by_viewer, 403, "forbidden")
    error(by_stranger, 404, "not-found")
    error(last_owner, 409, "conflict")
    error(remove_last, 409, "conflict")
    error(not_member, 404, "not-found")
    error(unknown, 404, "not-found")
    assert error(bad_role, 422, "invalid-input")["details"]["field"] == "role"
    assert error(bad_id, 422, "invalid-input")["details"]["field"] == "actorID"


def test_remove_a_workspace(api: ApiWorld) -> None:
    url = f"/api/workspaces/{api.away.id}"
    with nothing_written(api.store):
        refused = api.client.delete(url, headers=api.headers("alice"))
    error(refused, 404, "not-found")  # alice has no role on dave's workspace
    receipt = api.services.schedules.create(
        api.actors["dave"].id, api.away.id, daily_config(), request_id="create-0001"
    )
    with nothing_written(api.store):
        busy = api.client.delete(url, headers=api.headers("dave"))
    assert error(busy, 409, "conflict")["details"]["schedules"] == 1
    api.services.schedules.delete(
        api.actors["dave"].id,
        str(receipt.mission_id),
        request_id="delete-0001",
        expected_revision=1,
    )
    done = api.client.delete(url, headers=api.headers("dave"))
    assert done.status_code == 204, done.text
    assert api.services.workspaces.list(api.actors["dave"].id) == []


@pytest.mark.parametrize("who", ["bob", "carol", "dave"])
def test_only_the_server_owner_account_registers_directories(api: ApiWorld, who: str) -> None:
    (api.root / "mine").mkdir()
    with nothing_written(api.store):
        reply = api.client.post(
            "/api/workspaces", json={"path": str(api.root / "mine")}, headers=api.headers(who)
        )
    assert error(reply, 403, "forbidden")["message"].startswith("only the server's owner")


def test_members_are_named_by_handle_or_id(api: ApiWorld) -> None:
    home = f"/api/workspaces/{api.home.id}/members"
    by_handle = api.client.put(
        f"{home}/dave", json={"role": "viewer"}, headers=api.headers("alice")
    )
    assert by_handle.status_code == 200, by_handle.text
    assert by_handle.json()["actorId"] == str(api.actors["dave"].id)
    assert members_of(api, api.home.id)["dave"] == "viewer"
    with nothing_written(api.store):
        ghost = api.client.put(
            f"{home}/ghost", json={"role": "viewer"}, headers=api.headers("alice")
        )
        odd = api.client.put(
            f"{home}/no%20way", json={"role": "viewer"}, headers=api.headers("alice")
        )
    error(ghost, 404, "not-found")
    assert error(odd, 422, "invalid-input")["details"]["field"] == "actorID"
    assert api.client.delete(f"{home}/dave", headers=api.headers("alice")).status_code == 204
    assert "dave" not in members_of(api, api.home.id)
