"""The task lists and a list's checklist tree without a browser: what they show (roles,
member counts, the tree with due chips, priority, tags, sections and a series' sentence),
that every write carries the revision the page showed and lands back on the list, that a
conflict or a refusal shows what the user sent beside what holds with nothing written,
and the Now page's tasks due or overdue."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from fastapi.testclient import TestClient

from kalends.tasks import Task, TaskStatus
from kalends.web.render import ZONE_COOKIE
from pages.conftest import Pages, csrf_of


def _at(pages: Pages, when: str) -> None:
    pages.world.clock.set(datetime.fromisoformat(when).replace(tzinfo=UTC))


def _actor(pages: Pages, who: str) -> UUID:
    return pages.world.actors[who].id


def _task(pages: Pages, task: UUID) -> Task:
    return pages.world.services.tasks.get(_actor(pages, "alice"), task).task


def _add(pages: Pages, title: str, parent: UUID | None = None, **new: Any) -> Task:
    """A task in ``home`` made by alice through the service."""
    return pages.world.services.tasks.create(
        _actor(pages, "alice"), pages.world.home_list.id, title, parent=parent, **new
    )


def _schedule(pages: Pages, task: Task, **schedule: Any) -> Task:
    alice = _actor(pages, "alice")
    done = pages.world.services.changes.schedule(
        alice, task.id, task.revision, lambda _t: schedule, from_current=False
    )
    return done.task


def _post(client: TestClient, url: str, page_html: str, **data: Any) -> Any:
    return client.post(url, data={"csrf": csrf_of(page_html), **data}, follow_redirects=False)


def _list_url(pages: Pages) -> str:
    return f"/lists/{pages.world.home_list.id}"


class TestTheListsPage:
    def test_it_shows_each_list_with_the_viewers_role_and_member_count(self, pages: Pages) -> None:
        alice = _actor(pages, "alice")
        other = pages.world.services.directory.create_list(alice, "Errands")
        pages.world.services.directory.archive(alice, other.id)
        html = pages.sign_in("carol").get("/lists").text
        assert 'href="/lists/' + str(pages.world.home_list.id) + '">home</a>' in html
        assert '<td data-label="Your role">viewer</td>' in html
        assert "3 members" in html  # alice, bob, carol
        assert "Errands" not in html  # carol is no member of it
        owner = pages.sign_in("alice").get("/lists").text
        assert "Archived (1)" in owner
        assert "Errands" in owner

    def test_creating_a_list_lands_on_its_page_owned_by_the_creator(self, pages: Pages) -> None:
        client = pages.sign_in("dave")
        page = client.get("/lists").text
        assert "You have no active list yet" in page
        reply = _post(client, "/lists", page, name="Groceries")
        assert reply.status_code == 303
        target = reply.headers["location"]
        assert re.fullmatch(r"/lists/[0-9a-f-]{36}\?said=created", target)
        html = client.get(target).text
        assert "<h1>Groceries</h1>" in html
        assert "your role: <strong>owner</strong>" in html
        assert "The list is active again" not in html

    def test_a_blank_name_is_said_beside_its_field_and_nothing_is_made(self, pages: Pages) -> None:
        client = pages.sign_in("dave")
        page = client.get("/lists").text
        reply = _post(client, "/lists", page, name="   ")
        assert reply.status_code == 422
        assert 'aria-invalid="true"' in reply.text
        assert 'id="list-name-error"' in reply.text
        assert "a name cannot be blank" in reply.text
        assert pages.world.services.directory.lists(_actor(pages, "dave")) == []


class TestTheTree:
    def test_it_nests_three_levels_with_due_priority_tags_and_section(self, pages: Pages) -> None:
        _at(pages, "2026-03-06T12:00:00")
        alice = _actor(pages, "alice")
        pages.world.services.directory.add_section(alice, pages.world.home_list.id, "Kitchen")
        trip = _add(pages, "Plan the <trip>", tags=["travel"])
        trip = _schedule(pages, trip, due="2026-03-05", priority=1)
        book = _add(pages, "Book hotel", trip.id, section="Kitchen")
        _schedule(pages, book, due={"local": "2026-03-06T18:30:00", "zone": "Europe/Paris"})
        _add(pages, "Compare prices", book.id)
        html = pages.sign_in("bob").get(_list_url(pages)).text
        assert "Plan the &lt;trip&gt;" in html and "<trip>" not in html
        # Three levels: a tree inside a tree inside the tree.
        assert html.count('<ul class="tree"') == 3
        assert '<time datetime="2026-03-05">2026-03-05</time> · <strong>overdue</strong>' in html
        timed = '<time datetime="2026-03-06T17:30:00Z">2026-03-06 18:30 Europe/Paris</time>'
        assert f"{timed} · <strong>today</strong>" in html
        assert "high priority" in html
        assert "#travel" in html
        assert "§ Kitchen" in html
        assert f'href="/tasks/{trip.id}"' in html
        # The parent with open items offers to complete them with it.
        assert "with its 2 open items" in html

    def test_a_series_root_says_its_rule_and_offers_skip(self, pages: Pages) -> None:
        _at(pages, "2026-03-06T12:00:00")
        alice = _actor(pages, "alice")
        root = _add(pages, "Water the plants")
        pages.world.services.changes.repeat(
            alice,
            root.id,
            root.revision,
            {"kind": "daily", "interval_days": 2},
            time_of_day="09:00",
            zone="Europe/Paris",
        )
        html = pages.sign_in("bob").get(_list_url(pages)).text
        assert "every 2 days at 09:00 Europe/Paris" in html
        assert f'formaction="/tasks/{root.id}/skip"' in html
        assert "the whole occurrence" in html  # a series root needs complete_subtree

    def test_a_viewer_sees_no_write_control(self, pages: Pages) -> None:
        parent = _add(pages, "Parent")
        _add(pages, "Child", parent.id)
        _add(pages, "Sibling")
        html = pages.sign_in("carol").get(_list_url(pages)).text
        assert "Parent" in html and "Child" in html
        assert "You are a viewer of this list" in html
        for control in ("/complete", "/move", "/reopen", "/skip", '/tasks"', "/share", "/archive"):
            assert control not in html, control
        assert "data-drag" not in html
        assert 'method="post"' in html  # only the header's theme and sign-out forms
        assert html.count('method="post"') == 2
        # Someone who is no member of the list is told it is not there.
        assert pages.sign_in("dave").get(_list_url(pages)).status_code == 404


class TestTaskWrites:
    def test_adding_under_a_parent_completing_with_the_subtree_and_reopening(
        self, pages: Pages
    ) -> None:
        client = pages.sign_in("bob")
        parent = _add(pages, "Pack")
        page = client.get(f"{_list_url(pages)}?parent={parent.id}").text
        assert f'<option value="{parent.id}" selected>' in page
        reply = _post(
            client,
            f"{_list_url(pages)}/tasks",
            page,
            title="Socks",
            parent=str(parent.id),
            tags="clothes, #winter",
        )
        assert reply.status_code == 303
        location = reply.headers["location"]
        assert location.startswith(f"{_list_url(pages)}?said=created&task=")
        child_id = UUID(location.split("task=")[1].split("#")[0])
        child = _task(pages, child_id)
        assert child.parent_id == parent.id
        assert child.tags == ("clothes", "winter")
        page = client.get(location).text
        assert "Added: “Socks”" in page
        # Without complete_subtree the parent is refused, and nothing is written.
        form = {"revision": parent.revision, "list": str(pages.world.home_list.id)}
        refused = _post(client, f"/tasks/{parent.id}/complete", page, **form)
        assert refused.status_code == 409
        assert "Not applied:" in refused.text
        assert "1 open checklist item(s) remain" in refused.text
        assert "tick “with its open items”" in refused.text
        assert _task(pages, parent.id).status is TaskStatus.OPEN
        done = _post(client, f"/tasks/{parent.id}/complete", page, complete_subtree="true", **form)
        assert done.status_code == 303
        assert done.headers["location"].endswith(
            f"said=completed&task={parent.id}#task-{parent.id}"
        )
        assert _task(pages, parent.id).status is TaskStatus.COMPLETED
        assert _task(pages, child_id).status is TaskStatus.COMPLETED
        page = client.get(done.headers["location"]).text
        assert f'formaction="/tasks/{child_id}/reopen"' in page
        child = _task(pages, child_id)
        again = _post(
            client,
            f"/tasks/{child_id}/reopen",
            page,
            revision=child.revision,
            list=str(pages.world.home_list.id),
        )
        assert again.status_code == 303
        # Reopening an item reopens its ancestors.
        assert _task(pages, parent.id).status is TaskStatus.OPEN

    def test_a_stale_revision_is_a_conflict_showing_what_was_sent_beside_what_holds(
        self, pages: Pages
    ) -> None:
        client = pages.sign_in("bob")
        task = _add(pages, "Call the plumber")
        page = client.get(_list_url(pages)).text
        # Meanwhile alice completes it.
        pages.world.services.tasks.complete(_actor(pages, "alice"), task.id, task.revision)
        reply = _post(
            client,
            f"/tasks/{task.id}/complete",
            page,
            revision=task.revision,
            list=str(pages.world.home_list.id),
        )
        assert reply.status_code == 409
        html = reply.text
        assert 'id="conflict"' in html
        assert "“Call the plumber” changed before your Done arrived" in html
        assert f"Done at revision {task.revision}" in html
        assert f"completed at revision {task.revision + 1}" in html
        assert f'formaction="/tasks/{task.id}/reopen"' in html  # the page as it is now

    def test_moving_up_and_down_among_siblings(self, pages: Pages) -> None:
        client = pages.sign_in("bob")
        first, second, third = (_add(pages, t) for t in ("First", "Second", "Third"))
        page = client.get(_list_url(pages)).text
        # First has no up button, third no down button.
        assert f'name="before" value="{first.id}"' in page  # second's up
        list_id = str(pages.world.home_list.id)
        reply = _post(
            client,
            f"/tasks/{third.id}/move",
            page,
            revision=third.revision,
            list=list_id,
            before=str(first.id),
        )
        assert reply.status_code == 303
        order = _titles(client.get(_list_url(pages)).text)
        assert order == ["Third", "First", "Second"]
        page = client.get(_list_url(pages)).text
        first = _task(pages, first.id)
        reply = _post(
            client,
            f"/tasks/{first.id}/move",
            page,
            revision=first.revision,
            list=list_id,
            after=str(second.id),
        )
        assert reply.status_code == 303
        assert _titles(client.get(_list_url(pages)).text) == ["Third", "Second", "First"]
        # Nowhere to go is said; nothing moves.
        first = _task(pages, first.id)
        nowhere = _post(
            client, f"/tasks/{first.id}/move", page, revision=first.revision, list=list_id
        )
        assert nowhere.status_code == 422
        assert _task(pages, first.id).revision == first.revision

    def test_skipping_a_series_occurrence_shows_the_next_one(self, pages: Pages) -> None:
        _at(pages, "2026-03-06T12:00:00")
        alice = _actor(pages, "alice")
        root = _add(pages, "Stand-up")
        started = pages.world.services.changes.repeat(
            alice, root.id, root.revision, {"kind": "daily", "interval_days": 1}
        )
        client = pages.sign_in("bob")
        page = client.get(_list_url(pages)).text
        reply = _post(
            client,
            f"/tasks/{root.id}/skip",
            page,
            revision=started.task.revision,
            list=str(pages.world.home_list.id),
        )
        assert reply.status_code == 303, reply.text
        html = client.get(reply.headers["location"]).text
        assert "Skipped: “Stand-up”" in html
        assert html.count(">Stand-up</a>") == 2  # the skipped one and its successor
        assert "skipped</span>" in html

    def test_completing_a_series_occurrence_whole_shows_the_fresh_successor(
        self, pages: Pages
    ) -> None:
        _at(pages, "2026-03-06T12:00:00")
        alice = _actor(pages, "alice")
        root = _add(pages, "Weekly review")
        step = _add(pages, "Inbox zero", root.id)
        pages.world.services.tasks.complete(alice, step.id, step.revision)
        started = pages.world.services.changes.repeat(
            alice, root.id, _task(pages, root.id).revision, {"kind": "daily", "interval_days": 7}
        )
        client = pages.sign_in("bob")
        page = client.get(_list_url(pages)).text
        form = {"revision": started.task.revision, "list": str(pages.world.home_list.id)}
        # Its items are done, yet a recurring checklist is completed only as a whole.
        alone = _post(client, f"/tasks/{root.id}/complete", page, **form)
        assert alone.status_code == 409
        assert "completed only as a whole" in alone.text
        whole = _post(client, f"/tasks/{root.id}/complete", page, complete_subtree="true", **form)
        assert whole.status_code == 303
        html = client.get(whole.headers["location"]).text
        assert html.count(">Weekly review</a>") == 2  # the completed one and its successor
        assert html.count(">Inbox zero</a>") == 2
        successor = next(
            n.task
            for n in pages.world.services.tasks.tree(alice, pages.world.home_list.id)
            if n.task.title == "Weekly review" and n.task.status is TaskStatus.OPEN
        )
        assert successor.id != root.id
        assert f'formaction="/tasks/{successor.id}/skip"' in html
        assert "every 7 days" in html

    def test_a_blank_title_keeps_the_typed_values_and_says_why(self, pages: Pages) -> None:
        client = pages.sign_in("bob")
        parent = _add(pages, "Garden")
        page = client.get(_list_url(pages)).text
        reply = _post(
            client,
            f"{_list_url(pages)}/tasks",
            page,
            title=" ",
            parent=str(parent.id),
            tags="outdoors",
        )
        assert reply.status_code == 422
        html = reply.text
        assert 'aria-invalid="true" aria-describedby="add-error" autofocus' in html
        assert 'value="outdoors"' in html
        assert f'<option value="{parent.id}" selected>' in html
        tree = pages.world.services.tasks.tree(_actor(pages, "alice"), pages.world.home_list.id)
        assert len(tree) == 1 and not tree[0].children

    def test_a_malformed_revision_or_task_is_said_and_nothing_is_written(
        self, pages: Pages
    ) -> None:
        task = _add(pages, "Exact")
        client = pages.sign_in("bob")
        page = client.get(_list_url(pages)).text
        list_id = str(pages.world.home_list.id)
        cases = [
            (f"/tasks/{task.id}/complete", {"revision": "0", "list": list_id}),  # out of range
            (f"/tasks/{task.id}/complete", {"revision": "two", "list": list_id}),  # not a number
            (f"/tasks/{task.id}/move", {"revision": "1", "list": list_id, "before": "nope"}),
            ("/tasks/not-a-task/complete", {"revision": "1", "list": list_id}),  # not an ID
        ]
        for url, data in cases:
            reply = _post(client, url, page, **data)
            assert reply.status_code == 422, (url, data, reply.status_code)
            assert "<h1>" in reply.text  # a page saying which, not JSON
        assert _task(pages, task.id).revision == task.revision

    def test_a_viewers_forged_write_is_refused_by_the_service(self, pages: Pages) -> None:
        task = _add(pages, "Read only")
        client = pages.sign_in("carol")
        page = client.get(_list_url(pages)).text
        reply = _post(
            client,
            f"/tasks/{task.id}/complete",
            page,
            revision=task.revision,
            list=str(pages.world.home_list.id),
        )
        assert reply.status_code == 403
        assert _task(pages, task.id).status is TaskStatus.OPEN


class TestListWrites:
    def test_sharing_with_a_viewer_and_a_stale_share_keeps_the_values(self, pages: Pages) -> None:
        client = pages.sign_in("alice")
        page = client.get(_list_url(pages)).text
        assert "Share the list" in page
        revision = pages.world.home_list.revision
        current = pages.world.services.directory.get_list(
            _actor(pages, "alice"), pages.world.home_list.id
        ).revision
        reply = _post(
            client,
            f"{_list_url(pages)}/share",
            page,
            member="dave",
            role="viewer",
            revision=current,
        )
        assert reply.status_code == 303
        html = client.get(reply.headers["location"]).text
        assert '<td data-label="Handle">dave</td>' in html
        # The page before that share showed an older revision: a conflict, values kept.
        stale = _post(
            client,
            f"{_list_url(pages)}/share",
            page,
            member="dave",
            role="editor",
            revision=current,
        )
        assert stale.status_code == 409
        assert "The list changed before your change arrived" in stale.text
        assert 'value="dave"' in stale.text
        assert '<option value="editor" selected>' in stale.text
        roles = {
            a.handle: r.value
            for a, r in pages.world.services.directory.members(
                _actor(pages, "alice"), pages.world.home_list.id
            )
        }
        assert roles["dave"] == "viewer"
        assert revision <= current
        # A person nobody knows is said beside the field, the values kept.
        unknown = _post(
            client,
            f"{_list_url(pages)}/share",
            page,
            member="nobody",
            role="viewer",
            revision=current + 1,
        )
        assert unknown.status_code == 404
        assert 'id="share-error"' in unknown.text
        assert "no actor &#39;nobody&#39;" in unknown.text
        assert 'value="nobody"' in unknown.text

    def test_archiving_makes_the_list_read_only_and_unarchiving_restores_it(
        self, pages: Pages
    ) -> None:
        _add(pages, "Something")
        client = pages.sign_in("alice")
        page = client.get(_list_url(pages)).text
        current = pages.world.services.directory.get_list(
            _actor(pages, "alice"), pages.world.home_list.id
        ).revision
        reply = _post(
            client, f"{_list_url(pages)}/archive", page, revision=current, archived="true"
        )
        assert reply.status_code == 303
        html = client.get(reply.headers["location"]).text
        assert "The list is archived" in html
        assert "<strong>Archived.</strong>" in html
        assert "/complete" not in html
        assert "Make the list active again" in html
        bob = pages.sign_in("bob").get(_list_url(pages)).text
        assert "/complete" not in bob
        back = _post(
            client,
            f"{_list_url(pages)}/archive",
            html,
            revision=current + 1,
            archived="false",
        )
        assert back.status_code == 303
        assert "/complete" in client.get(_list_url(pages)).text


class TestNowPage:
    def test_it_lists_open_tasks_due_today_or_overdue_with_overdue_in_words(
        self, pages: Pages
    ) -> None:
        _at(pages, "2026-03-06T12:00:00")
        late = _schedule(pages, _add(pages, "Pay the rent"), due="2026-03-01")
        _schedule(
            pages,
            _add(pages, "Dentist"),
            due={"local": "2026-03-06T17:00:00", "zone": "UTC"},
        )
        _schedule(pages, _add(pages, "Next week"), due="2026-03-13")
        done = _schedule(pages, _add(pages, "Done already"), due="2026-03-02")
        pages.world.services.tasks.complete(_actor(pages, "alice"), done.id, done.revision)
        html = pages.sign_in("carol").get("/").text
        assert "Tasks due or overdue (2)" in html
        section = html.split('id="due-h"')[1].split("</section>")[0]
        assert section.index("Pay the rent") < section.index("Dentist")
        assert "overdue</span>" in section and "due today" in section
        assert f'href="/tasks/{late.id}"' in section
        assert "Next week" not in section and "Done already" not in section
        assert '<time datetime="2026-03-06T17:00:00Z">2026-03-06 17:00 UTC</time>' in section

    def test_today_is_the_viewers_day_in_the_zone_their_browser_reports(self, pages: Pages) -> None:
        # 03:30 UTC on the 7th is still the 6th in New York: due today there, not in UTC.
        _at(pages, "2026-03-06T20:00:00")
        _schedule(
            pages,
            _add(pages, "Late call"),
            due={"local": "2026-03-07T03:30:00", "zone": "UTC"},
        )
        _schedule(
            pages,
            _add(pages, "Tomorrow in New York"),
            due={"local": "2026-03-07T00:30:00", "zone": "America/New_York"},
        )
        client = pages.sign_in("carol")
        utc = client.get("/").text.split('id="due-h"')[1].split("</section>")[0]
        assert "Late call" not in utc and "Tomorrow in New York" not in utc
        client.cookies.set(ZONE_COOKIE, "America/New_York")
        there = client.get("/").text.split('id="due-h"')[1].split("</section>")[0]
        assert "Tasks due or overdue (1)" in there
        assert "Late call" in there and "Tomorrow in New York" not in there


def _titles(html: str) -> list[str]:
    return re.findall(r'class="task-title" href="/tasks/[^"]+">([^<]+)</a>', html)
