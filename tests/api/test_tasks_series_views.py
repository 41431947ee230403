"""What a series looks like over HTTP once time has passed and occurrences were skipped
(issue 17): the next date a series shows is the one completing would give, a task a skip
settled says ``skipped`` on every read, and a live series' checklist refuses its 501st
task. On SQLite and PostgreSQL, on the fake clock (Monday 2025-03-03 12:00 UTC here).
"""

from __future__ import annotations

import secrets
import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import insert, select

from api.conftest import ApiWorld
from api.test_tasks_support import ZONE, new_task, ok, refused, schedule
from kalends.api.routes.tasks_models import SeriesOut, SkipOut, TaskDetailOut, TreeNodeOut
from kalends.storage.task_tables import tasks
from kalends.tasks.refs import ALPHABET, REF_LENGTH
from kalends.tasks.series_rules import MAX_CHECKLIST_TASKS


def start_series(api: ApiWorld, task: dict[str, Any], rule: dict[str, Any]) -> dict[str, Any]:
    reply = api.client.post(
        f"/api/tasks/{task['ref']}/series",
        json={
            "expectedRevision": task["revision"],
            "rule": rule,
            "time": "09:00",
            "zone": ZONE,
        },
        headers=api.headers("alice"),
    )
    return ok(reply, 201)  # type: ignore[no-any-return]


def get(api: ApiWorld, url: str, who: str = "alice", **params: Any) -> Any:
    return ok(api.client.get(url, headers=api.headers(who), params=params))


def post(api: ApiWorld, url: str, body: dict[str, Any], who: str = "alice") -> Any:
    return ok(api.client.post(url, json=body, headers=api.headers(who)))


def walk(trees: list[dict[str, Any]]) -> dict[str, str]:
    """Title -> status of every task in the trees."""
    found: dict[str, str] = {}
    for node in trees:
        found[node["title"]] = node["status"]
        found.update(walk(node["children"]))
    return found


class TestNextDate:
    def test_the_next_date_is_the_date_completing_gives_caught_up_to_today(
        self, api: ApiWorld
    ) -> None:
        # Every second day from Monday 10 February; it is Monday 3 March now: the latest
        # date of the rule up to today is Sunday 2 March, not 12 February.
        task = schedule(api, new_task(api), due={"local": "2025-02-10T09:00:00", "zone": ZONE})
        started = start_series(api, task, {"kind": "daily", "interval_days": 2})
        series_id = started["series"]["id"]

        assert started["series"]["next_date"] == "2025-03-02"
        shown = get(api, f"/api/series/{series_id}")
        SeriesOut.model_validate(shown)
        assert shown["next_date"] == "2025-03-02"
        assert get(api, f"/api/tasks/{task['ref']}")["series"]["next_date"] == "2025-03-02"

        post(
            api,
            f"/api/tasks/{task['ref']}/complete",
            {"expectedRevision": started["task"]["revision"], "completeSubtree": True},
        )
        after = get(api, f"/api/series/{series_id}")
        successor = get(api, f"/api/tasks/{after['outstanding_task_id']}")
        # What the series said is what completing gave.
        assert successor["due"] == {"local": "2025-03-02T09:00:00", "zone": ZONE}
        # And again from today: 3 March is not a date of the rule; 4 March is.
        assert after["next_date"] == "2025-03-04"

    def test_the_next_date_follows_the_injected_clock(self, api: ApiWorld) -> None:
        task = schedule(api, new_task(api), due={"local": "2025-02-10T09:00:00", "zone": ZONE})
        series_id = start_series(api, task, {"kind": "weekdays", "days": [1]})["series"]["id"]
        # Mondays: today, Monday 3 March, is one (before or after 09:00, a date counts).
        assert get(api, f"/api/series/{series_id}")["next_date"] == "2025-03-03"

        api.clock.advance(timedelta(days=8))  # Tuesday 11 March
        assert get(api, f"/api/series/{series_id}")["next_date"] == "2025-03-10"

    def test_an_occurrence_not_yet_due_is_followed_by_the_rules_next_date(
        self, api: ApiWorld
    ) -> None:
        task = schedule(api, new_task(api), due={"local": "2025-03-20T09:00:00", "zone": ZONE})
        started = start_series(api, task, {"kind": "daily", "interval_days": 2})
        assert started["series"]["next_date"] == "2025-03-22"


class TestSkippedLooksSkipped:
    def skipped_occurrence(self, api: ApiWorld) -> tuple[dict[str, Any], dict[str, Any]]:
        """A daily series whose first occurrence ("Water", with "Soil" completed by hand
        and "Leaves" open) was skipped; the skip's answer and the root."""
        root = schedule(
            api,
            new_task(api, title="Water"),
            due={"local": "2025-03-04T09:00:00", "zone": ZONE},
        )
        soil = new_task(api, title="Soil", parent=root["ref"])
        new_task(api, title="Leaves", parent=root["ref"])
        post(api, f"/api/tasks/{soil['ref']}/complete", {"expectedRevision": 1})
        started = start_series(api, root, {"kind": "daily"})
        reply = api.client.post(
            f"/api/tasks/{root['ref']}/skip",
            json={"expectedRevision": started["task"]["revision"]},
            headers=api.headers("alice"),
        )
        return ok(reply), root

    def test_every_read_says_skipped_and_a_completed_item_stays_completed(
        self, api: ApiWorld
    ) -> None:
        skip, root = self.skipped_occurrence(api)
        SkipOut.model_validate(skip)
        assert skip["skipped"]["status"] == "skipped"
        assert skip["successor"]["status"] == "open"

        detail = get(api, f"/api/tasks/{root['ref']}")
        TaskDetailOut.model_validate(detail)
        assert detail["status"] == "skipped"
        checklist = get(api, f"/api/tasks/{root['ref']}/checklist")
        TreeNodeOut.model_validate(checklist)
        assert walk([checklist]) == {"Water": "skipped", "Soil": "completed", "Leaves": "skipped"}

        url = f"/api/lists/{api.home_list.id}/tasks"
        whole = get(api, url)
        page = get(api, url, limit=10)
        filtered = get(api, url, status="skipped")
        for trees in (whole, page):
            statuses = [walk([t]) for t in trees]
            assert {"Water": "skipped", "Soil": "completed", "Leaves": "skipped"} in statuses
            assert {"Water": "open", "Soil": "open", "Leaves": "open"} in statuses
        # A filter keeps matching tasks and their ancestors: a skipped task is not a
        # completed one, nor the other way round.
        assert walk(filtered) == {"Water": "skipped", "Leaves": "skipped"}
        completed = get(api, url, status="completed")
        assert walk(completed) == {"Water": "skipped", "Soil": "completed"}
        assert walk(get(api, url, status="skipped", limit=5)) == walk(filtered)

    def test_reopened_it_is_open_and_completed_again_it_is_completed(self, api: ApiWorld) -> None:
        _skip, root = self.skipped_occurrence(api)
        skipped = get(api, f"/api/tasks/{root['ref']}")
        reopened = post(
            api, f"/api/tasks/{root['ref']}/reopen", {"expectedRevision": skipped["revision"]}
        )
        assert reopened["status"] == "open"
        done = post(
            api,
            f"/api/tasks/{root['ref']}/complete",
            {"expectedRevision": reopened["revision"], "completeSubtree": True},
        )
        assert done["status"] == "completed"
        assert get(api, f"/api/tasks/{root['ref']}")["status"] == "completed"

    def test_an_edit_of_a_skipped_task_still_answers_skipped(self, api: ApiWorld) -> None:
        _skip, root = self.skipped_occurrence(api)
        skipped = get(api, f"/api/tasks/{root['ref']}")
        renamed = ok(
            api.client.patch(
                f"/api/tasks/{root['ref']}",
                json={"expectedRevision": skipped["revision"], "title": "Water well"},
                headers=api.headers("alice"),
            )
        )
        assert renamed["status"] == "skipped"
        rescheduled = schedule(api, renamed, priority=2)
        assert rescheduled["status"] == "skipped"

    def test_an_unknown_status_filter_is_refused(self, api: ApiWorld) -> None:
        url = f"/api/lists/{api.home_list.id}/tasks"
        reply = api.client.get(url, headers=api.headers("alice"), params={"status": "done"})
        assert reply.status_code == 422, reply.text


def insert_children(api: ApiWorld, parent: dict[str, Any], count: int) -> None:
    """``count`` open checklist items under ``parent``, written with one Core insert (a
    test's set-up: adding them one by one through the API would take long)."""
    now = api.clock.now()
    refs: set[str] = set()
    while len(refs) < count:
        refs.add("".join(secrets.choice(ALPHABET) for _ in range(REF_LENGTH)))
    rows = [
        {
            "id": uuid.uuid4(),
            "ref": ref,
            "list_id": api.home_list.id,
            "parent_id": uuid.UUID(parent["id"]),
            "position": (n + 1) * 1024,
            "title": f"Item {n}",
            "description": "",
            "status": "open",
            "trashed": False,
            "revision": 1,
            "schedule_revision": 0,
            "created_by": api.actors["alice"].id,
            "created_at": now,
            "updated_at": now,
        }
        for n, ref in enumerate(sorted(refs))
    ]
    with api.store.transaction() as conn:
        taken = set(conn.execute(select(tasks.c.ref).where(tasks.c.ref.in_(refs))).scalars())
        assert not taken, "a drawn reference is already used: run again"
        conn.execute(insert(tasks), rows)


class TestChecklistBound:
    def full_series(self, api: ApiWorld) -> dict[str, Any]:
        """A daily series whose outstanding occurrence holds 499 live tasks (the root
        and 498 items) and a trashed item, "Spare"; the root, as it is now."""
        root = new_task(api, title="Big chore")
        insert_children(api, root, MAX_CHECKLIST_TASKS - 2)
        spare = new_task(api, title="Spare", parent=root["ref"])
        post(api, f"/api/tasks/{spare['ref']}/trash", {"expectedRevision": 1})
        current = get(api, f"/api/tasks/{root['ref']}")
        start_series(api, current, {"kind": "daily"})
        return get(api, f"/api/tasks/{root['ref']}")  # type: ignore[no-any-return]

    def test_the_501st_task_is_refused_naming_the_limit_and_nothing_is_written(
        self, api: ApiWorld
    ) -> None:
        root = self.full_series(api)
        url = f"/api/lists/{api.home_list.id}/tasks"
        # The 500th is fine.
        ok(
            api.client.post(
                url, json={"title": "Last", "parent": root["ref"]}, headers=api.headers("bob")
            ),
            201,
        )
        reply = refused(
            api,
            "POST",
            url,
            api.headers("bob"),
            409,
            "checklist-too-large",
            json={"title": "One too many", "parent": root["ref"]},
        )
        body = reply.json()
        assert f"at most {MAX_CHECKLIST_TASKS} live tasks" in body["message"]
        assert body["details"] == {"field": "parent", "tasks": 501, "limit": 500}
        # A deeper item counts against the same checklist.
        item = get(api, f"/api/tasks/{root['ref']}/checklist")["children"][0]
        refused(
            api,
            "POST",
            url,
            api.headers("bob"),
            409,
            "checklist-too-large",
            json={"title": "Deeper", "parent": item["ref"]},
        )
        # Completing the occurrence still works: the checklist was never over the bound.
        done = post(
            api,
            f"/api/tasks/{root['ref']}/complete",
            {"expectedRevision": root["revision"], "completeSubtree": True},
        )
        assert done["status"] == "completed"

    def test_restoring_or_moving_tasks_into_a_full_checklist_is_refused(
        self, api: ApiWorld
    ) -> None:
        root = self.full_series(api)
        new_task(api, title="Last", parent=root["ref"])
        spare = next(
            t
            for t in get(api, f"/api/lists/{api.home_list.id}/tasks", trashed="true")
            if t["id"] == root["id"]
        )["children"]
        trashed = next(t for t in spare if t["title"] == "Spare")
        refused(
            api,
            "POST",
            f"/api/tasks/{trashed['ref']}/restore",
            api.headers("alice"),
            409,
            "checklist-too-large",
            json={"expectedRevision": trashed["revision"]},
        )
        outsider = new_task(api, title="Outsider")
        refused(
            api,
            "POST",
            f"/api/tasks/{outsider['ref']}/move",
            api.headers("alice"),
            409,
            "checklist-too-large",
            json={"expectedRevision": outsider["revision"], "parent": root["ref"]},
        )

    def test_a_checklist_outside_a_live_series_has_no_such_bound(self, api: ApiWorld) -> None:
        root = new_task(api, title="Plain chore")
        insert_children(api, root, MAX_CHECKLIST_TASKS)
        new_task(api, title="Item 501", parent=root["ref"])
