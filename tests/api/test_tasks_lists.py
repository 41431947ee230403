"""Lists, memberships and sections over HTTP."""

from __future__ import annotations

from uuid import UUID

from api.conftest import ApiWorld
from api.test_tasks_support import invalid, ok, refused
from kalends.api.routes.tasks_models import ListOut, MemberOut, SectionOut
from kalends.tasks import ListStatus, Role


def list_revision(api: ApiWorld) -> int:
    return api.services.directory.get_list(api.actors["alice"].id, api.home_list.id).revision


class TestLists:
    def test_creating_a_list_makes_the_caller_its_owner(self, api: ApiWorld) -> None:
        made = ok(
            api.client.post("/api/lists", json={"name": "errands"}, headers=api.headers("bob")), 201
        )
        ListOut.model_validate(made)
        assert made["name"] == "errands"
        assert made["role"] == "owner"
        stored = api.services.directory.get_list(api.actors["bob"].id, UUID(made["id"]))
        assert stored.role is Role.OWNER
        assert stored.revision == made["revision"]

    def test_the_lists_read_shows_each_members_role(self, api: ApiWorld) -> None:
        found = ok(api.client.get("/api/lists", headers=api.headers("carol")))
        assert [(x["id"], x["role"]) for x in found] == [(str(api.home_list.id), "viewer")]
        assert ok(api.client.get("/api/lists", headers=api.headers("dave"))) == []

    def test_active_only_leaves_out_archived_lists(self, api: ApiWorld) -> None:
        api.services.directory.archive(api.actors["alice"].id, api.home_list.id)
        every = ok(api.client.get("/api/lists", headers=api.headers("alice")))
        active = ok(api.client.get("/api/lists?active=true", headers=api.headers("alice")))
        assert [x["status"] for x in every] == ["archived"]
        assert active == []

    def test_one_list_is_read_by_a_member_and_refused_to_others(self, api: ApiWorld) -> None:
        url = f"/api/lists/{api.home_list.id}"
        got = ok(api.client.get(url, headers=api.headers("carol")))
        assert (
            got
            == api.services.directory.get_list(api.actors["carol"].id, api.home_list.id).to_json()
        )
        refused(api, "GET", url, api.headers("dave"), 404, "not-found")
        refused(api, "GET", url, {}, 401, "unauthenticated")

    def test_an_unknown_list_is_404_and_a_malformed_id_422(self, api: ApiWorld) -> None:
        refused(api, "GET", f"/api/lists/{UUID(int=7)}", api.headers("alice"), 404, "not-found")
        invalid(api, "GET", "/api/lists/not-an-id", "list_id")

    def test_bad_list_bodies_name_their_field(self, api: ApiWorld) -> None:
        # Each case: the body, the field the 422 names.
        cases = [
            ({}, "name"),
            ({"name": ""}, "name"),
            ({"name": "x" * 201}, "name"),
            ({"name": 7}, "name"),
            ({"name": "a\x00b"}, "name"),
            ({"name": "ok", "colour": "red"}, "colour"),
        ]
        for body, field in cases:
            invalid(api, "POST", "/api/lists", field, json=body)

    def test_archiving_needs_the_owner_and_the_current_revision(self, api: ApiWorld) -> None:
        url = f"/api/lists/{api.home_list.id}/archive"
        refused(api, "POST", url, api.headers("bob"), 403, "forbidden", json={})
        refused(
            api,
            "POST",
            url,
            api.headers("alice"),
            409,
            "revision-conflict",
            json={"expectedRevision": 99},
        )
        before = list_revision(api)
        done = ok(
            api.client.post(url, json={"expectedRevision": before}, headers=api.headers("alice"))
        )
        assert done["status"] == "archived"
        assert done["revision"] == before + 1 == list_revision(api)
        stored = api.services.directory.get_list(api.actors["alice"].id, api.home_list.id)
        assert stored.status is ListStatus.ARCHIVED
        # An archived list refuses writes.
        refused(
            api,
            "POST",
            f"/api/lists/{api.home_list.id}/tasks",
            api.headers("bob"),
            409,
            "list-archived",
            json={"title": "too late"},
        )
        back = ok(
            api.client.post(
                f"/api/lists/{api.home_list.id}/unarchive", json={}, headers=api.headers("alice")
            )
        )
        assert back["status"] == "active"
        assert (
            api.services.directory.get_list(api.actors["alice"].id, api.home_list.id).status
            is ListStatus.ACTIVE
        )


class TestMembers:
    def test_members_are_listed_with_their_roles(self, api: ApiWorld) -> None:
        found = ok(
            api.client.get(f"/api/lists/{api.home_list.id}/members", headers=api.headers("carol"))
        )
        for item in found:
            MemberOut.model_validate(item)
        assert [(m["handle"], m["role"]) for m in found] == [
            ("alice", "owner"),
            ("bob", "editor"),
            ("carol", "viewer"),
        ]
        refused(api, "GET", f"/api/lists/{api.home_list.id}/members", api.headers("dave"), 404)

    def test_an_owner_gives_a_role_by_handle_or_id(self, api: ApiWorld) -> None:
        url = f"/api/lists/{api.home_list.id}/members"
        before = list_revision(api)
        made = ok(
            api.client.put(f"{url}/dave", json={"role": "viewer"}, headers=api.headers("alice"))
        )
        assert made["revision"] == before + 1 == list_revision(api)
        ok(
            api.client.put(
                f"{url}/{api.actors['carol'].id}",
                json={"role": "editor"},
                headers=api.headers("alice"),
            )
        )
        roles = {
            a.handle: r
            for a, r in api.services.directory.members(api.actors["alice"].id, api.home_list.id)
        }
        assert roles["dave"] is Role.VIEWER
        assert roles["carol"] is Role.EDITOR

    def test_only_owners_change_memberships(self, api: ApiWorld) -> None:
        url = f"/api/lists/{api.home_list.id}/members/dave"
        refused(api, "PUT", url, api.headers("bob"), 403, "forbidden", json={"role": "owner"})
        refused(api, "PUT", url, api.headers("carol"), 403, "forbidden", json={"role": "viewer"})
        refused(api, "PUT", url, api.headers("dave"), 404, "not-found", json={"role": "owner"})
        refused(
            api, "DELETE", f"/api/lists/{api.home_list.id}/members/carol", api.headers("bob"), 403
        )

    def test_removing_a_member_takes_their_access(self, api: ApiWorld) -> None:
        url = f"/api/lists/{api.home_list.id}/members/carol"
        refused(
            api,
            "DELETE",
            f"{url}?expectedRevision=42",
            api.headers("alice"),
            409,
            "revision-conflict",
        )
        ok(
            api.client.delete(
                f"{url}?expectedRevision={list_revision(api)}", headers=api.headers("alice")
            )
        )
        handles = [
            a.handle
            for a, _ in api.services.directory.members(api.actors["alice"].id, api.home_list.id)
        ]
        assert handles == ["alice", "bob"]
        # To her the list is now one that does not exist.
        refused(api, "GET", f"/api/lists/{api.home_list.id}", api.headers("carol"), 404)

    def test_the_last_owner_stays(self, api: ApiWorld) -> None:
        url = f"/api/lists/{api.home_list.id}/members/alice"
        refused(api, "DELETE", url, api.headers("alice"), 409, "conflict")
        refused(api, "PUT", url, api.headers("alice"), 409, "conflict", json={"role": "editor"})

    def test_bad_membership_input_names_its_field(self, api: ApiWorld) -> None:
        url = f"/api/lists/{api.home_list.id}/members"
        invalid(api, "PUT", f"{url}/dave", "role", json={"role": "admin"})
        invalid(api, "PUT", f"{url}/dave", "role", json={})
        invalid(
            api,
            "PUT",
            f"{url}/dave",
            "expectedRevision",
            json={"role": "viewer", "expectedRevision": -1},
        )
        invalid(api, "PUT", f"{url}/da%20ve", "member", json={"role": "viewer"})
        invalid(api, "DELETE", f"{url}/dave?expectedRevision=x", "expectedRevision")
        refused(
            api,
            "PUT",
            f"{url}/nobody",
            api.headers("alice"),
            404,
            "not-found",
            json={"role": "viewer"},
        )


class TestSections:
    def test_an_editor_appends_sections_in_order(self, api: ApiWorld) -> None:
        url = f"/api/lists/{api.home_list.id}/sections"
        first = ok(api.client.post(url, json={"name": "kitchen"}, headers=api.headers("bob")), 201)
        ok(api.client.post(url, json={"name": "garden"}, headers=api.headers("alice")), 201)
        SectionOut.model_validate(first)
        found = ok(api.client.get(url, headers=api.headers("carol")))
        assert [s["name"] for s in found] == ["kitchen", "garden"]
        stored = api.services.directory.sections(api.actors["alice"].id, api.home_list.id)
        assert [s.to_json() for s in stored] == found

    def test_section_refusals_write_nothing(self, api: ApiWorld) -> None:
        url = f"/api/lists/{api.home_list.id}/sections"
        ok(api.client.post(url, json={"name": "kitchen"}, headers=api.headers("bob")), 201)
        refused(api, "POST", url, api.headers("bob"), 409, "conflict", json={"name": "kitchen"})
        refused(api, "POST", url, api.headers("carol"), 403, "forbidden", json={"name": "attic"})
        refused(api, "POST", url, api.headers("dave"), 404, "not-found", json={"name": "attic"})
        refused(api, "GET", url, api.headers("dave"), 404, "not-found")
        invalid(api, "POST", url, "name", json={"name": "   "})
