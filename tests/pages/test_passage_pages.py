"""A passage's page and its log fragment (browserless): what the schedule's document and
the server's runtime know of one passage, the log shown as text, polling only while the
passage runs and for at most an hour per page load, and the same scope as the API."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.conftest import PASSWORD
from kalends.api import ApiContext, ApiSettings, create_app
from kalends.missions.runtime import PassageStart
from kalends.missions.runtime.process import ProcessRuntime
from kalends.missions.scheduler import Scheduler
from kalends.web.pages_passages import MAX_POLLS, duration_text
from kalends.web.render import wall
from missions.checklist_support import THREE_LEVELS
from pages.conftest import Pages, csrf_of
from runtime.support import kill_families, wait_until

ZONE = "America/New_York"
SHOUT = "<script>alert(1)</script>"
SUMMARY = "copied 3 files & checked them"
HTMX = {"HX-Request": "true"}
TRIGGER = 'hx-trigger="every 2s"'


@dataclass(frozen=True, slots=True)
class Ran:
    """A schedule of ``home`` and one of its passages, as the runtime and document hold it."""

    schedule: str
    passage_id: str
    session_id: str

    def url(self, pages: Pages, ident: str | None = None) -> str:
        return (
            f"/w/{pages.world.home.id}/schedules/{self.schedule}/passages/"
            f"{ident or self.passage_id}"
        )


@pytest.fixture
def runtime(pages: Pages) -> Iterator[ProcessRuntime]:
    root = pages.world.root / "runtime"  # the server's runtime directory (its settings)
    try:
        yield ProcessRuntime(root, clock=pages.world.clock)
    finally:
        kill_families(root)


def _reserve(pages: Pages, title: str, **config: Any) -> tuple[str, dict[str, Any]]:
    """A schedule of ``home`` with a Run now passage reserved; its ID and pending record."""
    schedule = pages.schedule("bob", title, **config)
    schedules = pages.world.services.schedules
    bob = pages.world.actors["bob"].id
    schedules.run_now(bob, schedule, request_id=f"run-{title}-1", expected_revision=1)
    pending: dict[str, Any] = schedules.detail(bob, schedule)["pending"]
    return schedule, pending


def _start(pending: dict[str, Any], schedule: str, pages: Pages) -> PassageStart:
    return PassageStart(
        passage_id=pending["passageId"],
        session_id=pending["sessionId"],
        message_id=pending["messageId"],
        schedule_id=schedule,
        workspace=pages.world.home.path,
        command=(sys.executable, "-c", f"print('copying'); print({SHOUT!r})"),
    )


@pytest.fixture
def admitted(pages: Pages, runtime: ProcessRuntime) -> Ran:
    """A passage the runtime admitted and has not launched yet: it still runs."""
    schedule, pending = _reserve(pages, "Admitted", template=THREE_LEVELS)
    runtime.admit(_start(pending, schedule, pages))
    return Ran(schedule, pending["passageId"], pending["sessionId"])


@pytest.fixture
def finished(pages: Pages, runtime: ProcessRuntime) -> Ran:
    """A passage that reported, printed a line of markup, exited 0 and was settled into
    its schedule's history by a scheduler round."""
    schedule, pending = _reserve(pages, "Settled", template=THREE_LEVELS)
    start = _start(pending, schedule, pages)
    runtime.admit(start)
    runtime.report(runtime.token(start.passage_id, start.session_id), "completed", SUMMARY)
    runtime.start(start)
    wait_until(lambda: runtime.observe(start.session_id).settled, what="the passage's end")
    scheduler = Scheduler(pages.world.store, runtime)
    bob = pages.world.actors["bob"].id
    for _ in range(3):
        scheduler.run_once()
        if pages.world.services.schedules.detail(bob, schedule)["results"]:
            break
        pages.world.clock.advance(timedelta(seconds=31))
    scheduler.release()
    assert pages.world.services.schedules.detail(bob, schedule)["results"], "not settled"
    return Ran(schedule, start.passage_id, start.session_id)


def _text(html: str) -> str:
    """The page's text with tags removed and spaces collapsed (for sentences split by
    markup)."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


class TestAFinishedPassage:
    def test_shows_outcome_times_in_the_schedule_zone_summary_and_log(
        self, pages: Pages, finished: Ran
    ) -> None:
        client = pages.sign_in("alice")
        reply = client.get(finished.url(pages))
        assert reply.status_code == 200, reply.text
        page = reply.text
        doc = pages.world.services.schedules.detail(
            pages.world.actors["alice"].id, finished.schedule
        )
        result = doc["results"][0]
        assert result["passageId"] == finished.passage_id
        assert f'<a href="/w/{pages.world.home.id}/schedules/{finished.schedule}">' in page
        assert "Settled" in page  # the schedule's title
        assert '<span aria-hidden="true">✓</span> Completed' in page
        assert "manual (Run now)" in page
        at = result["settledAt"]
        settled = f'<time datetime="{at}">{wall(at, ZONE)} {ZONE}</time>'
        assert settled in page
        assert "copied 3 files &amp; checked them" in page
        assert "exited 0" in page
        assert re.search(r"<dt>Duration</dt><dd>(under 1 s|\d+ s)</dd>", page)
        assert result["checklist"]["open"] == 5
        assert '0 of 5 item(s) done <span class="muted">(at settlement)</span>' in page
        assert f"<code>{finished.session_id}</code>" in page
        assert '<pre class="log"' in page and "copying" in page
        # Finished: nothing polls, nothing to refresh.
        assert TRIGGER not in page
        assert "Ended." in page

    def test_a_line_of_markup_in_the_log_is_shown_as_text(
        self, pages: Pages, finished: Ran
    ) -> None:
        page = pages.sign_in("carol").get(finished.url(pages, finished.session_id))
        assert page.status_code == 200, page.text
        assert SHOUT not in page.text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text

    def test_its_fragment_carries_no_trigger_and_says_it_ended(
        self, pages: Pages, finished: Ran
    ) -> None:
        reply = pages.sign_in("carol").get(finished.url(pages) + "/log?poll=3", headers=HTMX)
        assert reply.status_code == 200, reply.text
        assert "hx-get" not in reply.text and TRIGGER not in reply.text
        assert 'id="passage-status-text" hx-swap-oob="true">Ended (exited 0)' in reply.text
        assert "copying" in reply.text


class TestARunningPassage:
    def test_its_page_polls_the_log_and_offers_refresh(self, pages: Pages, admitted: Ran) -> None:
        page = pages.sign_in("carol").get(admitted.url(pages))
        assert page.status_code == 200, page.text
        fragment = re.search(r'<div id="passage-log"[^>]*>', page.text)
        assert fragment is not None
        assert fragment.group(0) == (
            '<div id="passage-log" class="log-follow" '
            f'hx-get="{admitted.url(pages, admitted.session_id)}/log?poll=1" '
            f'{TRIGGER} hx-swap="outerHTML">'
        )
        assert f'<a href="{admitted.url(pages)}">Refresh</a>' in page.text
        assert 'aria-live="polite"' in page.text
        assert "Running — the log below follows its output." in page.text
        reserved = pages.world.services.schedules.detail(
            pages.world.actors["carol"].id, admitted.schedule
        )["pending"]["reservedAt"]
        assert f'not yet (reserved <time datetime="{reserved}">' in page.text

    def test_the_checklist_progress_is_read_while_it_runs(
        self, pages: Pages, admitted: Ran
    ) -> None:
        page = pages.sign_in("alice").get(admitted.url(pages)).text
        assert (
            '<progress max="5" value="0" aria-label="Checklist progress">0 of 5</progress>' in page
        )
        assert "0 of 5 item(s) done" in page

    def test_each_poll_names_the_next_until_the_hour_is_up(
        self, pages: Pages, admitted: Ran
    ) -> None:
        client = pages.sign_in("bob")
        base = admitted.url(pages, admitted.session_id) + "/log"
        polled = client.get(f"{base}?poll=7", headers=HTMX)
        assert polled.status_code == 200
        assert f'hx-get="{base}?poll=8"' in polled.text and TRIGGER in polled.text
        assert "hx-swap-oob" not in polled.text  # the status line stays as it is
        last = client.get(f"{base}?poll={MAX_POLLS - 1}", headers=HTMX)
        assert f'hx-get="{base}?poll={MAX_POLLS}"' in last.text
        done = client.get(f"{base}?poll={MAX_POLLS}", headers=HTMX)
        assert done.status_code == 200
        assert "hx-get" not in done.text and TRIGGER not in done.text
        assert (
            f'<a href="{admitted.url(pages, admitted.session_id)}">Reload to keep following</a>'
            in done.text
        )


class TestAReservedPassageNotStartedYet:
    """Run now reserved it; this server's runtime has not started it yet. Its page follows
    it all the same, so that its log appears as it starts (a page loaded a moment after
    Run now must not sit on a still "Starting" page)."""

    def test_its_page_follows_it_and_says_it_has_not_started(
        self, pages: Pages, runtime: ProcessRuntime
    ) -> None:
        schedule, pending = _reserve(pages, "Reserved")
        ran = Ran(schedule, pending["passageId"], pending["sessionId"])
        page = pages.sign_in("carol").get(ran.url(pages))
        assert page.status_code == 200, page.text
        assert "Starting — the log below follows it from its start." in page.text
        assert "Not started yet: its output appears here as it starts." in page.text
        assert "holds no log" not in page.text
        assert f'hx-get="{ran.url(pages, ran.passage_id)}/log?poll=1" {TRIGGER}' in page.text

    def test_its_log_fragment_polls_until_it_starts_then_shows_its_output(
        self, pages: Pages, runtime: ProcessRuntime
    ) -> None:
        schedule, pending = _reserve(pages, "Reserved")
        ran = Ran(schedule, pending["passageId"], pending["sessionId"])
        client = pages.sign_in("bob")
        base = ran.url(pages) + "/log"
        waiting = client.get(f"{base}?poll=1", headers=HTMX)
        assert waiting.status_code == 200, waiting.text
        assert f'hx-get="{base}?poll=2"' in waiting.text and TRIGGER in waiting.text
        assert "Not started yet" in waiting.text
        start = _start(pending, schedule, pages)
        runtime.admit(start)
        runtime.start(start)
        wait_until(
            lambda: "copying" in client.get(f"{base}?poll=2", headers=HTMX).text,
            what="its output on the page",
        )


class TestScope:
    def test_a_non_member_gets_404_that_says_nothing_of_the_passage(
        self, pages: Pages, admitted: Ran
    ) -> None:
        client = pages.sign_in("dave")
        for url in (admitted.url(pages), admitted.url(pages) + "/log"):
            reply = client.get(url)
            assert reply.status_code == 404, reply.text
            assert admitted.passage_id not in reply.text
            assert "Admitted" not in reply.text  # nor the schedule's title
        unknown = client.get(admitted.url(pages, "psg_unknown"))
        assert unknown.status_code == 404
        assert _text(unknown.text) == _text(client.get(admitted.url(pages)).text)

    def test_an_unknown_passage_is_404(self, pages: Pages, admitted: Ran) -> None:
        client = pages.sign_in("alice")
        reply = client.get(admitted.url(pages, "psg_unknown"))
        assert reply.status_code == 404
        assert "no passage psg_unknown of this schedule" in reply.text
        polled = client.get(admitted.url(pages, "psg_unknown") + "/log", headers=HTMX)
        # To a script: a fragment that says so and polls no more.
        assert polled.status_code == 200
        assert "no passage psg_unknown of this schedule" in polled.text
        assert TRIGGER not in polled.text

    def test_a_bad_passage_id_is_refused_with_a_clear_message(
        self, pages: Pages, admitted: Ran
    ) -> None:
        reply = pages.sign_in("alice").get(admitted.url(pages, "not%20a%20passage"))
        assert reply.status_code == 422, reply.text
        assert "not a passage ID (psg_…) or session ID (ses_…)" in reply.text


def test_a_server_without_a_runtime_shows_the_documents_record(pages: Pages, admitted: Ran) -> None:
    world = pages.world
    ctx = ApiContext(services=world.services, accounts=world.accounts, settings=ApiSettings())
    client = TestClient(create_app(ctx, access_log_enabled=False), raise_server_exceptions=False)
    form = client.get("/login")
    signed = client.post(
        "/login",
        data={"handle": "alice", "password": PASSWORD, "csrf": csrf_of(form.text), "next": "/"},
        follow_redirects=False,
    )
    assert signed.status_code == 303
    reply = client.get(admitted.url(pages))
    assert reply.status_code == 200, reply.text
    said = "This server runs no passages: the log lives on the machine that ran it."
    assert reply.text.count(said) == 1
    assert "Pending: this page does not follow it." in reply.text
    assert f'<a href="{admitted.url(pages)}">Refresh</a>' in reply.text
    assert '<span aria-hidden="true">…</span> Starting' in reply.text
    assert TRIGGER not in reply.text
    assert '<pre class="log"' not in reply.text


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (0.4, "under 1 s"),  # a passage that printed a line and ended
        (42, "42 s"),
        (185, "3 min 5 s"),
        (3600, "1 h"),  # whole units drop the smaller ones
        (7380, "2 h 3 min"),
        (93600, "1 d 2 h"),
    ],
)
def test_a_duration_is_said_in_its_two_largest_units(seconds: float, said: str) -> None:
    assert duration_text(seconds) == said
