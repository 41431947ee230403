"""Schedules, completion and recurring series over HTTP, and the whole task journey."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from api.conftest import ApiWorld
from api.test_tasks_support import (
    DUE_LOCAL,
    ZONE,
    invalid,
    new_task,
    ok,
    refused,
    repeat_daily,
    schedule,
)
from kalends.api.routes.tasks_models import SeriesOut, SeriesStartOut, SkipOut, TaskOut
from kalends.storage.testing import nothing_written
from kalends.tasks import Channel, TaskStatus, TimedValue


def stored(api: ApiWorld, task_id: str) -> Any:
    return api.services.tasks.get(api.actors["alice"].id, task_id).task


class TestSchedule:
    def test_a_schedule_is_written_whole_with_reminders(self, api: ApiWorld) -> None:
        task = new_task(api)
        done = schedule(
            api,
            task,
            "bob",
            planned="2025-03-01",
            due={"local": DUE_LOCAL, "zone": ZONE},
            priority=1,
            reminders=[
                {"channel": "email", "local": "2025-03-02T08:00:00", "zone": ZONE},
                {
                    "channel": "push",
                    "local": "2025-03-02T08:30:00",
                    "zone": ZONE,
                    "recipient": "carol",
                },
            ],
        )
        TaskOut.model_validate(done)
        assert done["revision"] == 2
        assert done["schedule_revision"] == 1
        after = stored(api, task["id"])
        assert after.priority == 1
        assert isinstance(after.due, TimedValue)
        assert (after.due.zone, after.due.at.isoformat()) == (ZONE, "2025-03-02T08:00:00+00:00")
        assert [(r.channel, r.recipient_id) for r in after.reminders] == [
            (Channel.EMAIL, api.actors["bob"].id),
            (Channel.PUSH, api.actors["carol"].id),
        ]
        # What is left out is cleared.
        cleared = schedule(api, done, "bob", due="2025-03-09")
        after = stored(api, task["id"])
        assert (after.planned, after.priority, after.reminders) == (None, None, ())
        assert cleared["due"] == "2025-03-09"

    def test_a_stale_revision_is_refused(self, api: ApiWorld) -> None:
        task = new_task(api)
        schedule(api, task, due="2025-03-05")
        reply = refused(
            api,
            "PUT",
            f"/api/tasks/{task['ref']}/schedule",
            api.headers("bob"),
            409,
            "revision-conflict",
            json={"expectedRevision": 1, "due": "2025-03-06"},
        )
        assert reply.json()["details"]["expected"] == 1
        assert str(stored(api, task["id"]).due) == "2025-03-05"

    def test_bad_schedules_name_their_field(self, api: ApiWorld) -> None:
        task = new_task(api)
        url = f"/api/tasks/{task['ref']}/schedule"
        # Each case: the body, the field the 422 names.
        cases: list[tuple[dict[str, Any], str]] = [
            ({"due": "2025-03-05"}, "expectedRevision"),
            ({"expectedRevision": 1, "priority": 4}, "priority"),
            ({"expectedRevision": 1, "priority": "high"}, "priority"),
            ({"expectedRevision": 1, "planned": "2025-13-01"}, "planned"),
            ({"expectedRevision": 1, "due": {"local": DUE_LOCAL}}, "due"),
            ({"expectedRevision": 1, "due": {"local": "9am", "zone": ZONE}}, "due.local"),
            ({"expectedRevision": 1, "due": {"local": DUE_LOCAL, "zone": "Mars/Base"}}, "due.zone"),
            ({"expectedRevision": 1, "due": {"local": DUE_LOCAL, "zone": "+02:00"}}, "due.zone"),
            (
                {
                    "expectedRevision": 1,
                    "reminders": [{"channel": "sms", "local": DUE_LOCAL, "zone": ZONE}],
                },
                "reminders.0.channel",
            ),
            (
                {
                    "expectedRevision": 1,
                    "reminders": [
                        {
                            "channel": "email",
                            "local": DUE_LOCAL,
                            "zone": ZONE,
                            "recipient": "nobody",
                        }
                    ],
                },
                "reminders[0].recipient",
            ),
            (
                {
                    "expectedRevision": 1,
                    "reminders": [{"channel": "email", "local": DUE_LOCAL, "zone": ZONE}] * 2,
                },
                "reminders[1]",
            ),
            (
                {
                    "expectedRevision": 1,
                    "reminders": [{"channel": "push", "local": DUE_LOCAL, "zone": "Nowhere/Land"}],
                },
                "reminders[0].zone",
            ),
            ({"expectedRevision": 1, "due": 20250305}, "due"),
            ({"expectedRevision": 1, "due": "2025-03-05T09:00:00"}, "due"),
            ({"expectedRevision": 1, "due": {"local": DUE_LOCAL, "zone": ZONE, "x": 1}}, "due"),
            ({"expectedRevision": 1, "colour": "red"}, "colour"),
        ]
        for body, field in cases:
            invalid(api, "PUT", url, field, json=body)

    def test_a_wall_time_the_zone_skips_is_refused_not_shifted(self, api: ApiWorld) -> None:
        task = new_task(api)
        reply = refused(
            api,
            "PUT",
            f"/api/tasks/{task['ref']}/schedule",
            api.headers("alice"),
            422,
            "nonexistent-local-time",
            json={"expectedRevision": 1, "due": {"local": "2025-03-30T02:30:00", "zone": ZONE}},
        )
        assert reply.json()["details"]["field"] == "due"

    def test_reminders_go_to_list_members_only(self, api: ApiWorld) -> None:
        task = new_task(api)
        reminder = {
            "channel": "email",
            "local": "2025-03-04T08:00:00",
            "zone": ZONE,
            "recipient": "dave",
        }
        refused(
            api,
            "PUT",
            f"/api/tasks/{task['ref']}/schedule",
            api.headers("alice"),
            403,
            "forbidden",
            json={"expectedRevision": 1, "reminders": [reminder]},
        )

    def test_viewers_and_strangers_cannot_schedule(self, api: ApiWorld) -> None:
        task = new_task(api)
        url = f"/api/tasks/{task['ref']}/schedule"
        body = {"json": {"expectedRevision": 1, "due": "2025-03-05"}}
        refused(api, "PUT", url, api.headers("carol"), 403, "forbidden", **body)
        refused(api, "PUT", url, api.headers("dave"), 404, "not-found", **body)
        refused(api, "PUT", url, {}, 401, "unauthenticated", **body)


class TestTransitions:
    def test_complete_and_reopen(self, api: ApiWorld) -> None:
        task = new_task(api)
        url = f"/api/tasks/{task['ref']}"
        done = ok(
            api.client.post(
                f"{url}/complete", json={"expectedRevision": 1}, headers=api.headers("bob")
            )
        )
        assert done["status"] == "completed"
        assert stored(api, task["id"]).status is TaskStatus.COMPLETED
        refused(
            api,
            "POST",
            f"{url}/complete",
            api.headers("bob"),
            409,
            "conflict",
            json={"expectedRevision": 2},
        )
        again = ok(
            api.client.post(
                f"{url}/reopen", json={"expectedRevision": 2}, headers=api.headers("bob")
            )
        )
        assert again["status"] == "open"
        assert stored(api, task["id"]).status is TaskStatus.OPEN
        refused(
            api,
            "POST",
            f"{url}/reopen",
            api.headers("bob"),
            409,
            "conflict",
            json={"expectedRevision": 3},
        )

    def test_open_checklist_items_need_complete_subtree(self, api: ApiWorld) -> None:
        parent = new_task(api, title="house")
        child = new_task(api, title="kitchen", parent=parent["ref"])
        url = f"/api/tasks/{parent['ref']}/complete"
        reply = refused(
            api,
            "POST",
            url,
            api.headers("alice"),
            409,
            "open-descendants",
            json={"expectedRevision": 1},
        )
        assert "completeSubtree" in reply.json()["message"]
        ok(
            api.client.post(
                url,
                json={"expectedRevision": 1, "completeSubtree": True},
                headers=api.headers("alice"),
            )
        )
        assert stored(api, child["id"]).status is TaskStatus.COMPLETED

    def test_transition_refusals_write_nothing(self, api: ApiWorld) -> None:
        task = new_task(api)
        for action in ("complete", "reopen", "skip"):
            url = f"/api/tasks/{task['ref']}/{action}"
            refused(
                api,
                "POST",
                url,
                api.headers("carol"),
                403,
                "forbidden",
                json={"expectedRevision": 1},
            )
            refused(
                api,
                "POST",
                url,
                api.headers("dave"),
                404,
                "not-found",
                json={"expectedRevision": 1},
            )
            invalid(api, "POST", url, "expectedRevision", json={})
        invalid(
            api,
            "POST",
            f"/api/tasks/{task['ref']}/complete",
            "completeSubtree",
            json={"expectedRevision": 1, "completeSubtree": "all"},
        )
        refused(
            api,
            "POST",
            f"/api/tasks/{task['ref']}/complete",
            api.headers("alice"),
            409,
            "revision-conflict",
            json={"expectedRevision": 5},
        )
        # Only the outstanding occurrence of a series can be skipped.
        refused(
            api,
            "POST",
            f"/api/tasks/{task['ref']}/skip",
            api.headers("alice"),
            409,
            "conflict",
            json={"expectedRevision": 1},
        )


class TestSeries:
    def test_starting_a_series_answers_the_series_and_the_task(self, api: ApiWorld) -> None:
        task = new_task(api)
        task = schedule(api, task, due={"local": DUE_LOCAL, "zone": ZONE})
        started = repeat_daily(api, task, "bob")
        SeriesStartOut.model_validate(started)
        series = started["series"]
        assert series["rule"] == {"kind": "daily", "interval_days": 1}
        assert (series["status"], series["revision"], series["outstanding_ordinal"]) == (
            "active",
            1,
            1,
        )
        assert started["task"]["series_id"] == series["id"]
        assert started["task"]["revision"] == task["revision"] + 1
        view = api.services.series.get(api.actors["alice"].id, UUID(series["id"]))
        assert view.to_json() == series
        detail = ok(api.client.get(f"/api/tasks/{task['ref']}", headers=api.headers("carol")))
        assert detail["series"]["id"] == series["id"]
        assert detail["series"]["occurrence"] == 1
        assert (
            ok(api.client.get(f"/api/series/{series['id']}", headers=api.headers("carol")))
            == series
        )
        assert (
            ok(api.client.get(f"/api/series/{task['ref']}", headers=api.headers("carol"))) == series
        )

    def test_bad_series_bodies_name_their_field(self, api: ApiWorld) -> None:
        task = new_task(api)
        url = f"/api/tasks/{task['ref']}/series"
        # Each case: the body beside expectedRevision 1, the field the 422 names.
        cases: list[tuple[dict[str, Any], str]] = [
            ({}, "rule"),
            ({"rule": {"kind": "hourly"}}, "rule"),
            ({"rule": {"kind": "daily", "interval_days": 0}}, "rule.daily.interval_days"),
            ({"rule": {"kind": "weekdays", "days": []}}, "rule.weekdays.days"),
            ({"rule": {"kind": "weekdays", "days": [8]}}, "rule.weekdays.days.0"),
            ({"rule": {"kind": "weekdays", "days": [1, 1]}}, "rule.days[1]"),
            (
                {"rule": {"kind": "completion_relative", "days": -1}},
                "rule.completion_relative.days",
            ),
            ({"rule": {"kind": "daily"}, "time": "25:00", "zone": ZONE}, "time"),
            ({"rule": {"kind": "daily"}, "time": "09:00"}, "zone"),
            ({"rule": {"kind": "daily"}, "zone": "Nowhere"}, "zone"),
            ({"rule": {"kind": "daily"}, "count": 0}, "count"),
            ({"rule": {"kind": "daily"}, "count": 2**40}, "count"),
            ({"rule": {"kind": "daily"}, "until": "2025-01-01"}, "until"),
            ({"rule": {"kind": "daily"}, "until": "soon"}, "until"),
            ({"rule": {"kind": "daily"}, "every": 2}, "every"),
        ]
        for extra, field in cases:
            invalid(api, "POST", url, field, json={"expectedRevision": 1, **extra})

    def test_series_refusals_write_nothing(self, api: ApiWorld) -> None:
        task = new_task(api)
        url = f"/api/tasks/{task['ref']}/series"
        body = {"json": {"expectedRevision": 1, "rule": {"kind": "daily"}}}
        refused(api, "POST", url, api.headers("carol"), 403, "forbidden", **body)
        refused(api, "POST", url, api.headers("dave"), 404, "not-found", **body)
        started = repeat_daily(api, task)
        sid = started["series"]["id"]
        refused(api, "POST", url, api.headers("alice"), 409, "revision-conflict", **body)
        for action in ("pause", "resume", "stop"):
            refused(
                api,
                "POST",
                f"/api/series/{sid}/{action}",
                api.headers("carol"),
                403,
                json={"expectedRevision": 1},
            )
            refused(
                api,
                "POST",
                f"/api/series/{sid}/{action}",
                api.headers("dave"),
                404,
                json={"expectedRevision": 1},
            )
            invalid(api, "POST", f"/api/series/{sid}/{action}", "expectedRevision", json={})
        refused(api, "GET", f"/api/series/{sid}", api.headers("dave"), 404, "not-found")
        refused(api, "GET", f"/api/series/{UUID(int=3)}", api.headers("alice"), 404, "not-found")
        invalid(api, "GET", "/api/series/whatever", "series")
        # A task of no series has no series.
        plain = new_task(api, title="plain")
        refused(api, "GET", f"/api/series/{plain['ref']}", api.headers("alice"), 404, "not-found")

    def test_pause_resume_and_stop_take_the_series_revision(self, api: ApiWorld) -> None:
        task = new_task(api)
        sid = repeat_daily(api, task)["series"]["id"]
        base = f"/api/series/{sid}"
        paused = ok(
            api.client.post(
                f"{base}/pause", json={"expectedRevision": 1}, headers=api.headers("bob")
            )
        )
        SeriesOut.model_validate(paused)
        assert (paused["status"], paused["revision"]) == ("paused", 2)
        refused(
            api,
            "POST",
            f"{base}/resume",
            api.headers("bob"),
            409,
            "revision-conflict",
            json={"expectedRevision": 1},
        )
        refused(
            api,
            "POST",
            f"{base}/pause",
            api.headers("bob"),
            409,
            "conflict",
            json={"expectedRevision": 2},
        )
        resumed = ok(
            api.client.post(
                f"{base}/resume", json={"expectedRevision": 2}, headers=api.headers("bob")
            )
        )
        assert resumed["status"] == "active"
        stopped = ok(
            api.client.post(
                f"{base}/stop", json={"expectedRevision": 3}, headers=api.headers("bob")
            )
        )
        assert stopped["status"] == "stopped"
        assert api.services.series.get(api.actors["alice"].id, UUID(sid)).status == "stopped"
        refused(
            api,
            "POST",
            f"{base}/resume",
            api.headers("bob"),
            409,
            "conflict",
            json={"expectedRevision": 4},
        )

    def test_skip_settles_the_occurrence_and_creates_the_next(self, api: ApiWorld) -> None:
        task = schedule(api, new_task(api), due={"local": DUE_LOCAL, "zone": ZONE})
        first = repeat_daily(api, task)["task"]
        skipped = ok(
            api.client.post(
                f"/api/tasks/{first['ref']}/skip",
                json={"expectedRevision": first["revision"]},
                headers=api.headers("bob"),
            )
        )
        SkipOut.model_validate(skipped)
        # Settled by the skip, and shown as skipped, not completed (issue 17).
        assert skipped["skipped"]["status"] == "skipped"
        successor = skipped["successor"]
        assert successor["occurrence"] == 2
        assert successor["status"] == "open"
        assert skipped["series"]["outstanding_task_id"] == successor["id"]
        assert stored(api, successor["id"]).series_id == UUID(skipped["series"]["id"])
        kinds = [e.kind for e in api.services.tasks.history(api.actors["alice"].id, first["id"])]
        assert "recurrence-skip" in kinds


def test_the_task_journey_create_schedule_repeat_complete_history(api: ApiWorld) -> None:
    """A list, a task in it, its schedule, a daily series, a completion: the next
    occurrence exists, due the next day at the same wall time, and history tells it all."""
    h = api.headers("bob")
    made = ok(api.client.post("/api/lists", json={"name": "chores"}, headers=h), 201)
    task = ok(
        api.client.post(
            f"/api/lists/{made['id']}/tasks", json={"title": "feed the cat"}, headers=h
        ),
        201,
    )
    task = ok(
        api.client.put(
            f"/api/tasks/{task['ref']}/schedule",
            json={
                "expectedRevision": task["revision"],
                "due": {"local": "2025-03-03T18:00:00", "zone": ZONE},
                "reminders": [{"channel": "email", "local": "2025-03-03T17:30:00", "zone": ZONE}],
            },
            headers=h,
        )
    )
    started = ok(
        api.client.post(
            f"/api/tasks/{task['ref']}/series",
            json={
                "expectedRevision": task["revision"],
                "rule": {"kind": "daily"},
                "time": "18:00",
                "zone": ZONE,
            },
            headers=h,
        ),
        201,
    )
    first = started["task"]
    # A recurring occurrence is completed only as a whole.
    refused(
        api,
        "POST",
        f"/api/tasks/{first['ref']}/complete",
        h,
        409,
        "open-descendants",
        json={"expectedRevision": first["revision"]},
    )
    done = ok(
        api.client.post(
            f"/api/tasks/{first['ref']}/complete",
            json={"expectedRevision": first["revision"], "completeSubtree": True},
            headers=h,
        )
    )
    assert done["status"] == "completed"
    series = ok(api.client.get(f"/api/series/{first['ref']}", headers=h))
    assert series["outstanding_ordinal"] == 2
    successor_id = series["outstanding_task_id"]
    assert successor_id not in (None, first["id"])
    successor = ok(api.client.get(f"/api/tasks/{successor_id}", headers=h))
    assert (successor["status"], successor["occurrence"], successor["title"]) == (
        "open",
        2,
        "feed the cat",
    )
    assert successor["due"] == {"local": "2025-03-04T18:00:00", "zone": ZONE}
    assert [r["local"] for r in successor["reminders"]] == ["2025-03-04T17:30:00"]
    assert successor["series"]["outstanding_ordinal"] == 2
    # The service agrees.
    nodes = api.services.tasks.tree(api.actors["bob"].id, UUID(made["id"]), status="open")
    assert [n.task.id for n in nodes] == [UUID(successor_id)]
    events = ok(api.client.get(f"/api/tasks/{first['ref']}/history", headers=h))
    kinds = [e["kind"] for e in events]
    assert kinds[:4] == ["created", "schedule-set", "series-started", "completed"]
    assert all(e["actor_id"] == str(api.actors["bob"].id) for e in events[:4])
    # The successor's reminder waits in the outbox; the completed one's was cancelled.
    pending = ok(api.client.get(f"/api/tasks/{successor_id}/reminders", headers=h))
    assert [(r["status"], r["at"]) for r in pending] == [("pending", "2025-03-04T16:30:00Z")]
    cancelled = ok(api.client.get(f"/api/tasks/{first['ref']}/reminders", headers=h))
    assert [r["status"] for r in cancelled] == ["cancelled"]


def test_a_cookie_session_needs_its_csrf_header_to_write(api: ApiWorld) -> None:
    csrf = api.login("bob")
    url = f"/api/lists/{api.home_list.id}/tasks"
    # Reads need no CSRF header.
    assert api.client.get(url).status_code == 200
    with nothing_written(api.store):
        reply = api.client.post(url, json={"title": "forged"})
    assert reply.status_code == 403, reply.text
    assert reply.json()["code"] == "csrf-failed"
    with nothing_written(api.store):
        wrong = api.client.post(url, json={"title": "forged"}, headers={"X-CSRF-Token": "guess"})
    assert wrong.status_code == 403
    made = ok(api.client.post(url, json={"title": "real"}, headers=csrf), 201)
    assert stored(api, made["id"]).title == "real"
