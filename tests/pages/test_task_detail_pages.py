"""The task page without a browser, on SQLite and PostgreSQL: what it shows (checklist,
schedule, reminders with their times, comments, attachments, history, a series' timeline
and next dates with DST notes) and its forms (schedule, comment, attach, done, skip, make
it a series, pause / resume / end), each refusing bad input with the field named and
nothing written, and a stale revision with what holds now."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Any

from fastapi.testclient import TestClient

from kalends.identity import Role
from kalends.tasks import Task, TimedValue
from kalends.tasks.values import MAX_ATTACHMENT_BYTES
from pages.conftest import Pages, csrf_of

NY = "America/New_York"
GAP_MESSAGE = (
    "2026-03-08T02:30:00 does not exist in America/New_York: clocks jump from 02:00 to "
    "03:00 on 2026-03-08"
)


def _task(pages: Pages, title: str = "Water the plants", **kw: Any) -> Task:
    world = pages.world
    return world.services.tasks.create(world.actors["alice"].id, world.home_list.id, title, **kw)


def _read(pages: Pages, task: Task | str) -> Task:
    world = pages.world
    ref = task if isinstance(task, str) else task.id
    return world.services.tasks.get(world.actors["alice"].id, ref).task


def _bob(pages: Pages) -> tuple[TestClient, str]:
    client = pages.sign_in("bob")
    return client, csrf_of(client.get("/").text)


def _schedule_form(csrf: str, revision: int, **fields: str) -> dict[str, str]:
    form = {
        "csrf": csrf,
        "revision": str(revision),
        "planned": "",
        "due_kind": "none",
        "due_date": "",
        "due_local": "",
        "due_zone": NY,
        "priority": "",
        "rem_count": "0",
    }
    form.update(fields)
    return form


def _field_error(html: str, field: str) -> str:
    found = re.search(rf'<p class="error" id="err-{field}">([^<]*)</p>', html)
    assert found is not None, f"no error beside {field}"
    return found.group(1)


class TestReading:
    def test_an_editor_reads_it_all_a_viewer_without_controls_a_stranger_nothing(
        self, pages: Pages
    ) -> None:
        world = pages.world
        alice = world.actors["alice"].id
        root = _task(pages, "Pack for the trip")
        child = _task(pages, "Passport", parent=root.id)
        world.services.tasks.complete(alice, child.id, child.revision)
        world.services.tasks.comment(alice, root.id, "Do not forget the charger")
        client, _ = _bob(pages)
        page = client.get(f"/tasks/{root.ref}")
        assert page.status_code == 200, page.text
        html = page.text
        assert "<h1>Pack for the trip</h1>" in html
        assert f'href="/lists/{world.home_list.id}"' in html
        # The checklist item with its state in a word and a symbol.
        assert re.search(r"✓</span> Done</span> <a href=\"/tasks/[^\"]+\">Passport</a>", html)
        assert "Do not forget the charger" in html
        assert "History (" in html and "created" in html
        assert 'action="/tasks/' in html and "Save schedule" in html
        assert "Make it a series" in html
        # A viewer reads it without any write control; a non-member finds nothing.
        page = pages.sign_in("carol").get(f"/tasks/{root.id}")
        assert page.status_code == 200
        assert "you can read this task but not change it" in page.text
        assert "Pack for the trip" in page.text
        for control in ("Save schedule", "Add comment", "Upload", "Make it a series", ">Done<"):
            assert control not in page.text
        assert pages.sign_in("dave").get(f"/tasks/{root.id}").status_code == 404
        assert client.get("/tasks/NOSUCH").status_code == 404


class TestSchedule:
    def test_gap_overlap_and_bad_values_are_refused_beside_their_fields_as_the_api_does(
        self, pages: Pages
    ) -> None:
        task = _task(pages)
        client, csrf = _bob(pages)
        form = _schedule_form(
            csrf,
            task.revision,
            due_kind="datetime",
            due_local="2026-03-08T02:30",
            rem_count="1",
            rem0_amount="15",
            rem0_unit="minutes",
            rem0_channel="email",
        )
        reply = client.post(f"/tasks/{task.id}/page/schedule", data=form)
        assert reply.status_code == 422
        said = _field_error(reply.text, "due_local")
        api = pages.world.client.put(
            f"/api/tasks/{task.id}/schedule",
            json={
                "expectedRevision": task.revision,
                "due": {"local": "2026-03-08T02:30:00", "zone": NY},
            },
            headers=pages.world.headers("bob"),
        )
        assert api.status_code == 422
        assert GAP_MESSAGE in api.json()["message"]
        assert said == GAP_MESSAGE[:1].upper() + GAP_MESSAGE[1:]
        assert (
            'id="f-due_local" name="due_local" type="datetime-local" value="2026-03-08T02:30"'
            in (reply.text)
        )
        assert 'aria-invalid="true"' in reply.text and "autofocus" in reply.text
        assert _read(pages, task).revision == task.revision  # nothing written

        form = _schedule_form(
            csrf, task.revision, due_kind="datetime", due_local="2026-11-01T01:30"
        )
        reply = client.post(f"/tasks/{task.id}/page/schedule", data=form)
        assert reply.status_code == 422
        assert _field_error(reply.text, "due_local") == (
            "2026-11-01T01:30:00 is ambiguous in America/New_York: clocks fall back from "
            "02:00 to 01:00 on 2026-11-01, so it occurs twice"
        )
        assert _read(pages, task).revision == task.revision
        self._reminder_without_due_time_priority_and_zone(pages, task, client, csrf)

    def test_reminders_before_the_due_time_are_stored_as_wall_times_and_shown_back(
        self, pages: Pages
    ) -> None:
        task = _task(pages)
        client, csrf = _bob(pages)
        form = _schedule_form(
            csrf,
            task.revision,
            planned="2026-03-06",
            due_kind="datetime",
            due_local="2026-03-09T09:00",
            priority="2",
            rem_count="3",
            rem0_amount="15",
            rem0_unit="minutes",
            rem0_channel="email",
            rem1_amount="1",
            rem1_unit="days",
            rem1_channel="push",
            rem2_amount="",
        )
        # "Show the reminders' times" shows them without saving.
        shown = client.post(f"/tasks/{task.id}/page/schedule", data={**form, "op": "preview"})
        assert shown.status_code == 200 and 'id="schedule-preview"' in shown.text
        assert '→ <time datetime="2026-03-09T12:45:00Z">' in shown.text
        # In the due time's zone, as it is saved.
        assert "2026-03-09 08:45 Mon America/New_York</time>" in shown.text
        assert _read(pages, task).revision == task.revision
        # A day before 02:30 on the 9th is 02:30 on the 8th, which New York skips.
        early = {**form, "due_local": "2026-03-09T02:30", "op": "preview"}
        refused = client.post(f"/tasks/{task.id}/page/schedule", data=early)
        assert refused.status_code == 422
        assert _field_error(refused.text, "rem1_amount").startswith(
            "2026-03-08T02:30:00 does not exist in America/New_York"
        )
        reply = client.post(f"/tasks/{task.id}/page/schedule", data=form, follow_redirects=False)
        assert reply.status_code == 303, reply.text
        saved = _read(pages, task)
        assert saved.planned == date(2026, 3, 6) and saved.priority == 2
        assert isinstance(saved.due, TimedValue) and saved.due.zone == NY
        times = sorted((r.channel.value, r.time.local.isoformat()) for r in saved.reminders)
        # A day before is the same wall time the day before: 09:00 EST on the 8th, across
        # the change to EDT (23 elapsed hours).
        assert times == [("email", "2026-03-09T08:45:00"), ("push", "2026-03-08T09:00:00")]
        page = client.get(reply.headers["location"]).text
        assert "Schedule saved." in page
        assert 'name="rem0_amount" type="number" min="1" inputmode="numeric" value="15"' in page
        assert 'name="rem1_amount" type="number" min="1" inputmode="numeric" value="1"' in page
        # The absolute times, each in a <time> with its instant.
        assert '<time datetime="2026-03-09T12:45:00Z">2026-03-09 08:45 Mon America/New_York' in page
        assert '<time datetime="2026-03-08T13:00:00Z">2026-03-08 09:00 Sun America/New_York' in page

    def _reminder_without_due_time_priority_and_zone(
        self, pages: Pages, task: Task, client: TestClient, csrf: str
    ) -> None:
        form = _schedule_form(
            csrf,
            task.revision,
            due_kind="date",
            due_date="2026-03-09",
            rem_count="1",
            rem0_amount="1",
            rem0_unit="hours",
            rem0_channel="email",
        )
        reply = client.post(f"/tasks/{task.id}/page/schedule", data=form)
        assert reply.status_code == 422
        assert "give the task a day and time it is due" in _field_error(reply.text, "rem0_amount")
        assert _read(pages, task).revision == task.revision
        reply = client.post(
            f"/tasks/{task.id}/page/schedule",
            data=_schedule_form(csrf, task.revision, priority="7"),
        )
        assert reply.status_code == 422
        assert "between 1 and 3" in _field_error(reply.text, "priority")
        form = _schedule_form(
            csrf,
            task.revision,
            due_kind="datetime",
            due_local="2026-03-09T09:00",
            due_zone="+02:00",
        )
        reply = client.post(f"/tasks/{task.id}/page/schedule", data=form)
        assert reply.status_code == 422
        assert _field_error(reply.text, "due_zone")
        assert _read(pages, task).revision == task.revision

    def test_a_stale_revision_keeps_the_typed_values_beside_the_saved_ones(
        self, pages: Pages
    ) -> None:
        world = pages.world
        task = _task(pages)
        client, csrf = _bob(pages)
        shown = task.revision
        world.services.tasks.rename(world.actors["alice"].id, task.id, shown, "Water them twice")
        form = _schedule_form(csrf, shown, due_kind="date", due_date="2026-04-01", priority="1")
        reply = client.post(f"/tasks/{task.id}/page/schedule", data=form)
        assert reply.status_code == 409
        html = reply.text
        assert 'id="conflict"' in html and "nothing was saved" in html
        assert "<td>2026-04-01</td>" in html  # theirs beside ...
        assert 'value="2026-04-01"' in html  # ... and kept in the form
        current = _read(pages, task)
        assert f'name="revision" value="{current.revision}"' in html
        assert current.due is None and current.priority is None


class TestCommentsAndAttachments:
    def test_a_comment_and_a_file_are_added_and_bad_ones_refused(self, pages: Pages) -> None:
        task = _task(pages)
        client, csrf = _bob(pages)
        reply = client.post(f"/tasks/{task.id}/page/comment", data={"csrf": csrf, "body": "  "})
        assert reply.status_code == 422 and _field_error(reply.text, "comment")
        reply = client.post(
            f"/tasks/{task.id}/page/comment", data={"csrf": csrf, "body": "Soil is dry <b>"}
        )
        assert reply.status_code == 200 and "Comment added." in reply.text
        assert "Soil is dry &lt;b&gt;" in reply.text
        reply = client.post(
            f"/tasks/{task.id}/page/attachments",
            data={"csrf": csrf},
            files={"file": ("notes.txt", b"water on Sundays\n", "text/plain")},
        )
        assert reply.status_code == 200, reply.text
        link = re.search(r'<a href="(/api/attachments/[^"]+)" download>notes.txt</a>', reply.text)
        assert link is not None
        got = client.get(link.group(1))
        assert got.status_code == 200 and got.content == b"water on Sundays\n"
        # One byte over the limit is refused beside the file field; nothing is stored.
        reply = client.post(
            f"/tasks/{task.id}/page/attachments",
            data={"csrf": csrf},
            files={"file": ("big.bin", b"\0" * (MAX_ATTACHMENT_BYTES + 1), "application/zip")},
        )
        assert reply.status_code == 413
        assert "at most 26214400 bytes" in _field_error(reply.text, "file")
        world = pages.world
        assert len(world.services.tasks.get(world.actors["alice"].id, task.id).attachments) == 1


def _series_page(pages: Pages) -> tuple[TestClient, str, Task]:
    """A task due 2026-03-06 at 02:30 in New York, with a checklist item, made a daily
    series at 02:30 through the form; the clock on 2026-03-05."""
    world = pages.world
    world.clock.set(datetime(2026, 3, 5, 12, 0, tzinfo=UTC))
    alice = world.actors["alice"].id
    root = _task(pages, "Feed the cat")
    _task(pages, "Fresh water", parent=root.id)
    world.services.changes.schedule(
        alice,
        root.id,
        root.revision,
        lambda _t: {"due": {"local": "2026-03-06T02:30:00", "zone": NY}},
        from_current=False,
    )
    root = _read(pages, root)
    client, csrf = _bob(pages)
    form = {
        "csrf": csrf,
        "revision": str(root.revision),
        "kind": "daily",
        "every": "1",
        "time": "02:30",
        "zone": NY,
    }
    reply = client.post(f"/tasks/{root.id}/page/series/start", data=form)
    assert reply.status_code == 200, reply.text
    assert "It is a series now." in reply.text
    return client, csrf, _read(pages, root)


class TestSeries:
    def test_the_timeline_marks_the_day_the_wall_time_does_not_exist(self, pages: Pages) -> None:
        editor, csrf, root = _series_page(pages)
        self._bad_series_forms_are_refused(pages, editor, csrf)
        client = pages.sign_in("carol")
        html = client.get(f"/tasks/{root.id}").text
        assert "Every day at 02:30 America/New_York" in html
        assert "Outstanding</span>" in html and "#1" in html
        upcoming = html.split('id="next-h"', 1)[1].split("</ul>", 1)[0]
        days = re.findall(r'<time datetime="([^"]+)"', upcoming)
        # The 7th, then the 8th has no 02:30 (said in its place), then the 9th onwards.
        assert days == [
            "2026-03-07T07:30:00Z",
            "2026-03-08",
            "2026-03-09T06:30:00Z",
            "2026-03-10T06:30:00Z",
            "2026-03-11T06:30:00Z",
            "2026-03-12T06:30:00Z",
        ]
        assert "02:30 does not exist on Sun 8 Mar (clocks go forward) — no occurrence that day" in (
            upcoming
        )
        # A viewer gets no control of the series.
        assert "Pause the series" not in html and "Skip this occurrence" not in html

    def test_done_needs_the_subtree_then_makes_the_successor(self, pages: Pages) -> None:
        client, csrf, root = _series_page(pages)
        url = f"/tasks/{root.id}/page/complete"
        reply = client.post(url, data={"csrf": csrf, "revision": str(root.revision)})
        assert reply.status_code == 409
        assert 'id="problem"' in reply.text and "Done was refused" in reply.text
        assert _read(pages, root).status.value == "open"
        # Done on the 10th: the series catches up to the 10th, the 7th and 9th missed (the
        # 8th has no 02:30 at all), never a backlog.
        pages.world.clock.set(datetime(2026, 3, 10, 12, 0, tzinfo=UTC))
        reply = client.post(
            url, data={"csrf": csrf, "revision": str(root.revision), "subtree": "1"}
        )
        assert reply.status_code == 200, reply.text
        assert "Marked done." in reply.text
        successor = re.search(
            r'The outstanding occurrence is <a href="/tasks/([^"]+)">#2', reply.text
        )
        assert successor is not None
        fresh = _read(pages, successor.group(1))
        assert fresh.occurrence == 2 and isinstance(fresh.due, TimedValue)
        assert fresh.due.local == datetime(2026, 3, 10, 2, 30)
        page = client.get(f"/tasks/{fresh.id}").text
        timeline = page.split('id="timeline-h"', 1)[1].split("</ol>", 1)[0]
        items = re.findall(r"<li.*?</li>", timeline, re.S)
        rows = [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", li)).strip() for li in items]
        assert [row.split(" ", 2)[:2] for row in rows] == [
            ["✓", "Done"],
            ["✕", "Missed"],
            ["⚠", "No"],
            ["●", "Outstanding"],
        ]
        assert "Sat 2026-03-07, Mon 2026-03-09" in rows[1]
        assert "Sun 2026-03-08" in rows[2] and "02:30 does not exist" in rows[2]
        # Reopening the settled one keeps the successor; the timeline says so.
        done = _read(pages, root)
        reply = client.post(
            f"/tasks/{root.id}/page/reopen", data={"csrf": csrf, "revision": str(done.revision)}
        )
        assert reply.status_code == 200 and "Reopened." in reply.text
        page = reply.text
        timeline = page.split('id="timeline-h"', 1)[1].split("</ol>", 1)[0]
        assert re.search(r"Reopened</span>\s*<span class=\"ordinal\">#1</span>", timeline)
        assert re.search(r"Outstanding</span>\s*<span class=\"ordinal\">#2</span>", timeline)

    def test_skip_then_pause_resume_and_end_with_the_series_revision(self, pages: Pages) -> None:
        client, csrf, root = _series_page(pages)
        reply = client.post(
            f"/tasks/{root.id}/page/skip", data={"csrf": csrf, "revision": str(root.revision)}
        )
        assert reply.status_code == 200, reply.text
        assert "Occurrence skipped." in reply.text
        assert _read(pages, root).skipped
        second = re.search(r'The outstanding occurrence is <a href="/tasks/([^"]+)">#2', reply.text)
        assert second is not None
        fresh = _read(pages, second.group(1))
        reply = client.post(
            f"/tasks/{fresh.id}/page/skip", data={"csrf": csrf, "revision": str(fresh.revision)}
        )
        assert "Occurrence skipped." in reply.text
        # A skip is not a completion: it needs no tick of the checklist, and a stale
        # revision is refused with nothing written.
        reply = client.post(
            f"/tasks/{fresh.id}/page/skip", data={"csrf": csrf, "revision": str(fresh.revision)}
        )
        assert reply.status_code == 409
        view = pages.world.services.series.get(pages.world.actors["alice"].id, root.id)
        stale = view.revision - 1 if view.revision > 1 else view.revision + 1
        reply = client.post(
            f"/tasks/{root.id}/page/series/pause",
            data={"csrf": csrf, "series_revision": str(stale)},
        )
        assert reply.status_code == 409 and 'id="conflict"' in reply.text
        for action, status in (("pause", "paused"), ("resume", "active"), ("stop", "stopped")):
            reply = client.post(
                f"/tasks/{root.id}/page/series/{action}",
                data={"csrf": csrf, "series_revision": str(view.revision)},
            )
            assert reply.status_code == 200, reply.text
            view = pages.world.services.series.get(pages.world.actors["alice"].id, root.id)
            assert view.status == status
        page = client.get(f"/tasks/{root.id}").text
        timeline = page.split('id="timeline-h"', 1)[1].split("</ol>", 1)[0]
        assert re.search(r"Skipped</span>\s*<span class=\"ordinal\">#1</span>", timeline)
        assert re.search(r"Skipped</span>\s*<span class=\"ordinal\">#2</span>", timeline)
        # The series ended while #3 was outstanding: an ordinary open task now.
        assert re.search(r"Open, series ended</span>\s*<span class=\"ordinal\">#3</span>", timeline)
        # #2 was due the 7th, #3 the 9th; the 8th has no 02:30, which the timeline says.
        assert re.search(r"No occurrence</span>\s*<time datetime=\"2026-03-08\">", timeline)
        assert "02:30 does not exist on Sun 8 Mar" in timeline
        assert "No date ahead" in page

    def _bad_series_forms_are_refused(self, pages: Pages, client: TestClient, csrf: str) -> None:
        task = _task(pages)
        form = {"csrf": csrf, "revision": str(task.revision), "kind": "weekdays", "zone": NY}
        reply = client.post(f"/tasks/{task.id}/page/series/start", data=form)
        assert reply.status_code == 422
        assert _field_error(reply.text, "s_days")
        form = {**form, "kind": "daily", "every": "0"}
        reply = client.post(f"/tasks/{task.id}/page/series/start", data=form)
        assert reply.status_code == 422 and _field_error(reply.text, "s_every")
        form = {**form, "every": "1", "time": "02:30", "zone": "Mars/Olympus"}
        reply = client.post(f"/tasks/{task.id}/page/series/start", data=form)
        assert reply.status_code == 422 and _field_error(reply.text, "s_zone")
        # A stale revision: refused, the typed values kept in the form.
        form = {**form, "zone": NY, "time": "07:45", "revision": str(task.revision + 3)}
        reply = client.post(f"/tasks/{task.id}/page/series/start", data=form)
        assert reply.status_code == 409 and 'id="conflict"' in reply.text
        assert 'name="time" type="time" value="07:45"' in reply.text
        assert _read(pages, task).series_id is None


class TestMoving:
    def test_under_another_task_and_back_to_the_top_each_refusal_writing_nothing(
        self, pages: Pages
    ) -> None:
        trip = _task(pages, "Pack for the trip")
        socks = _task(pages, "Socks")
        sub = _task(pages, "Wool ones", parent=socks.id)
        client, csrf = _bob(pages)
        page = client.get(f"/tasks/{socks.id}").text
        # Its own checklist is no place to put it.
        assert f'<option value="{trip.id}">' in page
        assert f'<option value="{sub.id}">' not in page

        url = f"/tasks/{socks.id}/page/move"
        form = {"csrf": csrf, "revision": str(socks.revision), "parent": str(trip.id)}
        moved = client.post(url, data=form, follow_redirects=False)
        assert moved.status_code == 303, moved.text
        now = _read(pages, socks)
        assert now.parent_id == trip.id
        assert _read(pages, sub).parent_id == socks.id  # its checklist went with it

        # A stale revision: refused with what holds now, nothing moved.
        stale = client.post(url, data={**form, "parent": ""}, follow_redirects=False)
        assert stale.status_code == 409
        assert _read(pages, socks).parent_id == trip.id
        # Malformed and unknown parents: refused, nothing moved.
        fresh = {"csrf": csrf, "revision": str(now.revision)}
        bad = client.post(url, data={**fresh, "parent": "not-an-id"}, follow_redirects=False)
        assert bad.status_code == 422 and "Not an ID: &#39;not-an-id&#39;" in bad.text
        assert _read(pages, socks).revision == now.revision
        # Back to the top of the list.
        top = client.post(url, data={**fresh, "parent": ""}, follow_redirects=False)
        assert top.status_code == 303
        now = _read(pages, socks)
        assert now.parent_id is None

        # A viewer's forged move is refused by the service, nothing moved.
        carol = pages.sign_in("carol")
        forged = carol.post(
            url,
            data={
                "csrf": csrf_of(carol.get("/").text),
                "revision": str(now.revision),
                "parent": str(trip.id),
            },
            follow_redirects=False,
        )
        assert forged.status_code == 403
        assert _read(pages, socks).parent_id is None

    def test_to_another_list_with_its_checklist_and_each_refusal_writing_nothing(
        self, pages: Pages
    ) -> None:
        world = pages.world
        alice, bob = world.actors["alice"].id, world.actors["bob"].id
        directory = world.services.directory
        errands = directory.create_list(alice, "Errands")
        directory.share(alice, errands.id, bob, Role.EDITOR)
        watched = directory.create_list(alice, "Watched")
        directory.share(alice, watched.id, bob, Role.VIEWER)
        trip = _task(pages, "Pack for the trip")
        socks = _task(pages, "Socks", parent=trip.id)
        client, csrf = _bob(pages)
        page = client.get(f"/tasks/{trip.id}").text
        # Only the other lists bob edits are offered; an item is moved with its task.
        assert f'<option value="{errands.id}">Errands</option>' in page
        assert str(watched.id) not in page
        assert f'<option value="{world.home_list.id}">' not in page
        assert "/page/move-list" not in client.get(f"/tasks/{socks.id}").text

        url = f"/tasks/{trip.id}/page/move-list"
        form = {"csrf": csrf, "revision": str(trip.revision)}
        # A list bob only views: refused by the service, nothing moved.
        viewer_only = client.post(
            url, data={**form, "list": str(watched.id)}, follow_redirects=False
        )
        assert viewer_only.status_code == 403
        # Malformed, missing and unknown lists: refused beside the field, nothing moved.
        bad = client.post(url, data={**form, "list": "not-an-id"}, follow_redirects=False)
        assert bad.status_code == 422 and "Not an ID: &#39;not-an-id&#39;" in bad.text
        assert 'id="err-list"' in bad.text and 'aria-invalid="true"' in bad.text
        none = client.post(url, data={**form, "list": ""}, follow_redirects=False)
        assert none.status_code == 422 and "Choose the list to move it to" in none.text
        unknown = client.post(url, data={**form, "list": "00000000-0000-4000-8000-000000000000"})
        assert unknown.status_code == 404
        # A forged post without the CSRF token.
        forged = client.post(url, data={"revision": str(trip.revision), "list": str(errands.id)})
        assert forged.status_code == 403
        assert _read(pages, trip).list_id == world.home_list.id
        assert _read(pages, trip).revision == trip.revision

        moved = client.post(url, data={**form, "list": str(errands.id)}, follow_redirects=False)
        assert moved.status_code == 303, moved.text
        assert moved.headers["location"].endswith("?done=moved-list#move-h")
        assert _read(pages, trip).list_id == errands.id
        assert _read(pages, socks).list_id == errands.id  # its checklist went with it
        shown = client.get(moved.headers["location"]).text
        assert "Moved to Errands." in shown
        assert f'href="/lists/{errands.id}"' in shown

        # The page it was sent from is stale now: a conflict, nothing moved back.
        stale = client.post(
            url, data={**form, "list": str(world.home_list.id)}, follow_redirects=False
        )
        assert stale.status_code == 409
        assert _read(pages, trip).list_id == errands.id
