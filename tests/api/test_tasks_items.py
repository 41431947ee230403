"""Tasks over HTTP: the tree of a list, creation, detail, edits, moves, trash,
comments and history."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from api.conftest import ApiWorld
from api.test_tasks_support import invalid, new_task, ok, refused, schedule
from kalends.api.routes.tasks_models import (
    CommentOut,
    HistoryEventOut,
    TaskDetailOut,
    TaskOut,
    TreeNodeOut,
)
from kalends.tasks import TaskStatus


def stored(api: ApiWorld, task: dict[str, Any]) -> Any:
    """The task as the service reads it now."""
    return api.services.tasks.get(api.actors["alice"].id, task["id"]).task


def tree_url(api: ApiWorld) -> str:
    return f"/api/lists/{api.home_list.id}/tasks"


class TestCreate:
    def test_an_editor_adds_a_task_with_tags_and_a_checklist_item(self, api: ApiWorld) -> None:
        parent = new_task(api, "bob", title="  clean the house ", tags=["home", "weekly"])
        TaskOut.model_validate(parent)
        assert parent["title"] == "clean the house"
        assert parent["tags"] == ["home", "weekly"]
        assert parent["revision"] == 1
        child = new_task(api, "bob", title="kitchen", parent=parent["ref"].lower())
        assert child["parent_id"] == parent["id"]
        assert stored(api, child).parent_id == UUID(parent["id"])
        first = new_task(api, "bob", title="first", before=parent["ref"])
        roots = [n["title"] for n in ok(api.client.get(tree_url(api), headers=api.headers("bob")))]
        assert roots == ["first", "clean the house"]
        assert stored(api, first).title == "first"

    def test_a_task_goes_into_a_section_by_name(self, api: ApiWorld) -> None:
        section = api.services.directory.add_section(
            api.actors["alice"].id, api.home_list.id, "garden"
        )
        task = new_task(api, section="garden")
        assert task["section_id"] == str(section.id)
        refused(
            api,
            "POST",
            tree_url(api),
            api.headers("alice"),
            404,
            "not-found",
            json={"title": "x", "section": "attic"},
        )

    def test_bad_task_bodies_name_their_field(self, api: ApiWorld) -> None:
        # Each case: the body, the field the 422 names.
        cases: list[tuple[dict[str, Any], str]] = [
            ({}, "title"),
            ({"title": ""}, "title"),
            ({"title": "   "}, "title"),
            ({"title": "x" * 501}, "title"),
            ({"title": ["x"]}, "title"),
            ({"title": "a\x00b"}, "title"),
            ({"title": "ok", "description": 5}, "description"),
            ({"title": "ok", "tags": "home"}, "tags"),
            ({"title": "ok", "tags": [""]}, "tags.0"),
            ({"title": "ok", "parent": "not a ref"}, "parent"),
            ({"title": "ok", "before": 12}, "before"),
            ({"title": "ok", "priority": 1}, "priority"),
        ]
        for body, field in cases:
            invalid(api, "POST", tree_url(api), field, json=body)
        invalid(api, "POST", "/api/lists/home/tasks", "list_id", json={"title": "x"})

    def test_viewers_and_strangers_cannot_add_tasks(self, api: ApiWorld) -> None:
        body = {"json": {"title": "not mine"}}
        refused(api, "POST", tree_url(api), api.headers("carol"), 403, "forbidden", **body)
        refused(api, "POST", tree_url(api), api.headers("dave"), 404, "not-found", **body)
        refused(api, "POST", tree_url(api), {}, 401, "unauthenticated", **body)


class TestRead:
    def test_the_tree_nests_checklist_items_and_filters_keep_ancestors(self, api: ApiWorld) -> None:
        house = new_task(api, title="house")
        new_task(api, title="kitchen", parent=house["ref"], tags=["wet"])
        garden = new_task(api, title="garden")
        schedule(api, garden, due="2025-03-05", planned="2025-03-04")
        nodes = ok(api.client.get(tree_url(api), headers=api.headers("carol")))
        for node in nodes:
            TreeNodeOut.model_validate(node)
        assert [(n["title"], [c["title"] for c in n["children"]]) for n in nodes] == [
            ("house", ["kitchen"]),
            ("garden", []),
        ]
        service = api.services.tasks.tree(api.actors["carol"].id, api.home_list.id)
        assert [n.to_json() for n in service] == nodes

        def titles(query: str) -> list[str]:
            found = ok(api.client.get(f"{tree_url(api)}?{query}", headers=api.headers("carol")))
            return [n["title"] for n in found]

        assert titles("tag=wet") == ["house"]
        assert titles("dueFrom=2025-03-05&dueTo=2025-03-05") == ["garden"]
        assert titles("dueFrom=2025-03-06") == []
        assert titles("planned=2025-03-04") == ["garden"]
        assert titles("status=completed") == []
        assert titles("status=open") == ["house", "garden"]

    def test_trashed_tasks_show_only_when_asked(self, api: ApiWorld) -> None:
        task = new_task(api)
        ok(
            api.client.post(
                f"/api/tasks/{task['ref']}/trash",
                json={"expectedRevision": 1},
                headers=api.headers("alice"),
            )
        )
        assert ok(api.client.get(tree_url(api), headers=api.headers("alice"))) == []
        shown = ok(api.client.get(f"{tree_url(api)}?trashed=true", headers=api.headers("alice")))
        assert [(n["id"], n["trashed"]) for n in shown] == [(task["id"], True)]

    def test_bad_tree_filters_name_their_field(self, api: ApiWorld) -> None:
        base = tree_url(api)
        invalid(api, "GET", f"{base}?status=done", "status")
        invalid(api, "GET", f"{base}?dueFrom=tomorrow", "dueFrom")
        invalid(api, "GET", f"{base}?dueTo=2025-02-30", "dueTo")
        invalid(api, "GET", f"{base}?planned=x", "planned")
        invalid(api, "GET", f"{base}?trashed=maybe", "trashed")
        invalid(api, "GET", f"{base}?tag=a%00b", "tag")
        invalid(api, "GET", "/api/lists/0000/tasks", "list_id")
        refused(api, "GET", base, api.headers("dave"), 404, "not-found")

    def test_detail_is_read_by_reference_in_any_case_or_by_id(self, api: ApiWorld) -> None:
        task = new_task(api, title="pay rent", description="before the 5th")
        api.services.tasks.comment(api.actors["bob"].id, task["id"], "done soon")
        by_ref = ok(
            api.client.get(f"/api/tasks/{task['ref'].lower()}", headers=api.headers("carol"))
        )
        by_id = ok(api.client.get(f"/api/tasks/{task['id']}", headers=api.headers("carol")))
        assert by_ref == by_id
        TaskDetailOut.model_validate(by_ref)
        detail = api.services.tasks.get(api.actors["carol"].id, task["id"])
        assert by_ref == {**detail.to_json(), "series": None}
        assert by_ref["list"]["role"] == "viewer"
        assert [c["body"] for c in by_ref["comments"]] == ["done soon"]

    def test_detail_refusals(self, api: ApiWorld) -> None:
        task = new_task(api)
        refused(api, "GET", f"/api/tasks/{task['ref']}", api.headers("dave"), 404, "not-found")
        refused(api, "GET", f"/api/tasks/{task['ref']}", {}, 401, "unauthenticated")
        refused(api, "GET", "/api/tasks/ZZZZZZ", api.headers("alice"), 404, "not-found")
        refused(api, "GET", f"/api/tasks/{UUID(int=1)}", api.headers("alice"), 404, "not-found")
        invalid(api, "GET", "/api/tasks/not-a-task", "task")
        invalid(api, "GET", "/api/tasks/ABCDEFG", "task")

    def test_the_checklist_is_one_tree_under_its_task(self, api: ApiWorld) -> None:
        house = new_task(api, title="house")
        new_task(api, title="kitchen", parent=house["ref"])
        tree = ok(
            api.client.get(f"/api/tasks/{house['ref']}/checklist", headers=api.headers("carol"))
        )
        TreeNodeOut.model_validate(tree)
        assert tree["title"] == "house"
        assert [c["title"] for c in tree["children"]] == ["kitchen"]
        refused(api, "GET", f"/api/tasks/{house['ref']}/checklist", api.headers("dave"), 404)


class TestEdit:
    def test_an_edit_changes_title_description_and_tags_in_one_go(self, api: ApiWorld) -> None:
        task = new_task(api, tags=["old"])
        edited = ok(
            api.client.patch(
                f"/api/tasks/{task['ref']}",
                json={
                    "expectedRevision": 1,
                    "title": "water the roses",
                    "description": "twice",
                    "addTags": ["garden"],
                    "removeTags": ["old"],
                },
                headers=api.headers("bob"),
            )
        )
        assert edited["title"] == "water the roses"
        assert edited["tags"] == ["garden"]
        after = stored(api, task)
        assert (after.title, after.description, after.tags) == (
            "water the roses",
            "twice",
            ("garden",),
        )
        assert after.revision == edited["revision"] > 1

    def test_a_stale_revision_is_refused_whole(self, api: ApiWorld) -> None:
        task = new_task(api)
        url = f"/api/tasks/{task['ref']}"
        ok(
            api.client.patch(
                url, json={"expectedRevision": 1, "title": "v2"}, headers=api.headers("bob")
            )
        )
        reply = refused(
            api,
            "PATCH",
            url,
            api.headers("alice"),
            409,
            "revision-conflict",
            json={"expectedRevision": 1, "title": "v3", "addTags": ["x"]},
        )
        assert reply.json()["details"]["actual"] == 2
        assert stored(api, task).title == "v2"

    def test_a_later_step_failing_undoes_the_earlier_ones(self, api: ApiWorld) -> None:
        task = new_task(api)
        # The title would be fine; the description is over the service's byte limit.
        refused(
            api,
            "PATCH",
            f"/api/tasks/{task['ref']}",
            api.headers("alice"),
            422,
            json={"expectedRevision": 1, "title": "renamed", "description": "é" * 40000},
        )
        assert stored(api, task).title == "water the plants"

    def test_bad_edits_name_their_field(self, api: ApiWorld) -> None:
        task = new_task(api)
        url = f"/api/tasks/{task['ref']}"
        invalid(api, "PATCH", url, "body", json={"expectedRevision": 1})
        invalid(api, "PATCH", url, "expectedRevision", json={"title": "x"})
        invalid(
            api, "PATCH", url, "expectedRevision", json={"expectedRevision": "one", "title": "x"}
        )
        invalid(
            api, "PATCH", url, "expectedRevision", json={"expectedRevision": 2**31, "title": "x"}
        )
        invalid(api, "PATCH", url, "title", json={"expectedRevision": 1, "title": ""})
        invalid(api, "PATCH", url, "addTags", json={"expectedRevision": 1, "addTags": "x"})
        invalid(api, "PATCH", url, "removeTags", json={"expectedRevision": 1, "removeTags": []})
        invalid(api, "PATCH", url, "tags", json={"expectedRevision": 1, "tags": ["x"]})
        refused(
            api,
            "PATCH",
            url,
            api.headers("carol"),
            403,
            "forbidden",
            json={"expectedRevision": 1, "title": "x"},
        )
        refused(
            api,
            "PATCH",
            url,
            api.headers("dave"),
            404,
            "not-found",
            json={"expectedRevision": 1, "title": "x"},
        )


class TestMove:
    def test_moves_among_siblings_into_sections_and_under_parents(self, api: ApiWorld) -> None:
        api.services.directory.add_section(api.actors["alice"].id, api.home_list.id, "garden")
        a = new_task(api, title="a")
        b = new_task(api, title="b")
        moved = ok(
            api.client.post(
                f"/api/tasks/{b['ref']}/move",
                json={"expectedRevision": 1, "before": a["ref"], "section": "garden"},
                headers=api.headers("bob"),
            )
        )
        roots = [n["title"] for n in ok(api.client.get(tree_url(api), headers=api.headers("bob")))]
        assert roots == ["b", "a"]
        assert stored(api, b).section_id is not None
        under = ok(
            api.client.post(
                f"/api/tasks/{b['ref']}/move",
                json={"expectedRevision": moved["revision"], "parent": a["ref"], "noSection": True},
                headers=api.headers("bob"),
            )
        )
        after = stored(api, b)
        assert (after.parent_id, after.section_id) == (UUID(a["id"]), None)
        ok(
            api.client.post(
                f"/api/tasks/{b['ref']}/move",
                json={"expectedRevision": under["revision"], "root": True},
                headers=api.headers("bob"),
            )
        )
        assert stored(api, b).parent_id is None

    def test_a_root_task_moves_to_another_list_of_the_editor(self, api: ApiWorld) -> None:
        other = api.services.directory.create_list(api.actors["bob"].id, "work")
        task = new_task(api)
        moved = ok(
            api.client.post(
                f"/api/tasks/{task['ref']}/move",
                json={"expectedRevision": 1, "list": str(other.id)},
                headers=api.headers("bob"),
            )
        )
        assert moved["list_id"] == str(other.id)
        assert api.services.tasks.get(api.actors["bob"].id, task["id"]).task.list_id == other.id
        # Alice is no member of bob's list: to her the task is not there.
        refused(
            api,
            "POST",
            f"/api/tasks/{task['ref']}/move",
            api.headers("alice"),
            404,
            "not-found",
            json={"expectedRevision": moved["revision"], "list": str(api.home_list.id)},
        )

    def test_bad_moves_name_their_field(self, api: ApiWorld) -> None:
        a = new_task(api, title="a")
        b = new_task(api, title="b")
        url = f"/api/tasks/{b['ref']}/move"
        invalid(api, "POST", url, "body", json={"expectedRevision": 1})
        invalid(
            api,
            "POST",
            url,
            "section",
            json={"expectedRevision": 1, "section": "x", "noSection": True},
        )
        invalid(
            api,
            "POST",
            url,
            "parent",
            json={"expectedRevision": 1, "parent": a["ref"], "root": True},
        )
        invalid(
            api,
            "POST",
            url,
            "list",
            json={"expectedRevision": 1, "list": str(api.home_list.id), "root": True},
        )
        invalid(api, "POST", url, "list", json={"expectedRevision": 1, "list": "home"})
        invalid(api, "POST", url, "noSection", json={"expectedRevision": 1, "noSection": "perhaps"})
        refused(
            api,
            "POST",
            url,
            api.headers("alice"),
            422,
            "reparent-cycle",
            json={"expectedRevision": 1, "parent": b["ref"]},
        )
        refused(
            api,
            "POST",
            url,
            api.headers("alice"),
            409,
            "revision-conflict",
            json={"expectedRevision": 7, "before": a["ref"]},
        )
        refused(
            api, "POST", url, api.headers("carol"), 403, json={"expectedRevision": 1, "root": True}
        )


class TestTrash:
    def test_trash_and_restore_round_trip(self, api: ApiWorld) -> None:
        task = new_task(api)
        url = f"/api/tasks/{task['ref']}"
        trashed = ok(
            api.client.post(
                f"{url}/trash", json={"expectedRevision": 1}, headers=api.headers("bob")
            )
        )
        assert trashed["trashed"] is True
        assert stored(api, task).trashed is True
        refused(
            api,
            "POST",
            f"{url}/trash",
            api.headers("bob"),
            409,
            "revision-conflict",
            json={"expectedRevision": 1},
        )
        back = ok(
            api.client.post(
                f"{url}/restore",
                json={"expectedRevision": trashed["revision"]},
                headers=api.headers("bob"),
            )
        )
        assert back["trashed"] is False
        assert stored(api, task).trashed is False
        refused(
            api,
            "POST",
            f"{url}/restore",
            api.headers("bob"),
            409,
            "conflict",
            json={"expectedRevision": back["revision"]},
        )

    def test_trash_refusals_write_nothing(self, api: ApiWorld) -> None:
        task = new_task(api)
        url = f"/api/tasks/{task['ref']}/trash"
        refused(
            api, "POST", url, api.headers("carol"), 403, "forbidden", json={"expectedRevision": 1}
        )
        refused(
            api, "POST", url, api.headers("dave"), 404, "not-found", json={"expectedRevision": 1}
        )
        refused(
            api,
            "POST",
            url,
            api.headers("erin"),
            401,
            "unauthenticated",
            json={"expectedRevision": 1},
        )
        refused(
            api,
            "POST",
            url,
            api.headers("frank"),
            401,
            "unauthenticated",
            json={"expectedRevision": 1},
        )
        invalid(api, "POST", url, "expectedRevision", json={})
        invalid(api, "POST", url, "expectedRevision", json={"expectedRevision": -1})
        refused(
            api,
            "POST",
            url,
            {**api.headers("alice"), "content-type": "application/json"},
            422,
            "invalid-input",
            content=b"not json",
        )


class TestComments:
    def test_comments_are_added_and_listed_without_changing_the_revision(
        self, api: ApiWorld
    ) -> None:
        task = new_task(api)
        url = f"/api/tasks/{task['ref']}/comments"
        made = ok(api.client.post(url, json={"body": "first!"}, headers=api.headers("bob")), 201)
        ok(api.client.post(url, json={"body": "second"}, headers=api.headers("alice")), 201)
        CommentOut.model_validate(made)
        assert made["author_id"] == str(api.actors["bob"].id)
        listed = ok(api.client.get(url, headers=api.headers("carol")))
        assert [c["body"] for c in listed] == ["first!", "second"]
        detail = api.services.tasks.get(api.actors["alice"].id, task["id"])
        assert [c.to_json() for c in detail.comments] == listed
        assert detail.task.revision == 1

    def test_comment_refusals_write_nothing(self, api: ApiWorld) -> None:
        task = new_task(api)
        url = f"/api/tasks/{task['ref']}/comments"
        refused(api, "POST", url, api.headers("carol"), 403, "forbidden", json={"body": "hi"})
        refused(api, "POST", url, api.headers("dave"), 404, "not-found", json={"body": "hi"})
        refused(api, "GET", url, api.headers("dave"), 404, "not-found")
        invalid(api, "POST", url, "body", json={"body": ""})
        invalid(api, "POST", url, "body", json={"body": "  "})
        invalid(api, "POST", url, "body", json={"text": "hi"})


class TestHistory:
    def test_history_lists_every_change_oldest_first(self, api: ApiWorld) -> None:
        task = new_task(api)
        ok(
            api.client.patch(
                f"/api/tasks/{task['ref']}",
                json={"expectedRevision": 1, "title": "renamed"},
                headers=api.headers("bob"),
            )
        )
        events = ok(
            api.client.get(f"/api/tasks/{task['ref']}/history", headers=api.headers("carol"))
        )
        for event in events:
            HistoryEventOut.model_validate(event)
        assert [(e["kind"], e["actor_id"]) for e in events] == [
            ("created", str(api.actors["alice"].id)),
            ("renamed", str(api.actors["bob"].id)),
        ]
        service = api.services.tasks.history(api.actors["carol"].id, task["id"])
        assert [e.to_json() for e in service] == events
        refused(api, "GET", f"/api/tasks/{task['ref']}/history", api.headers("dave"), 404)

    def test_a_completed_task_stays_readable(self, api: ApiWorld) -> None:
        task = new_task(api)
        api.services.tasks.complete(api.actors["alice"].id, task["id"], 1)
        got = ok(api.client.get(f"/api/tasks/{task['ref']}", headers=api.headers("carol")))
        assert got["status"] == TaskStatus.COMPLETED.value
