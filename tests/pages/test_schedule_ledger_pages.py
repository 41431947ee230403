"""The slot ledger on a schedule's pages, without a browser (issue 24 §1): the History
shows the slots that did not launch on their own between the settled passages with
their reasons, the full ledger page pages and filters, **Why didn't it run?** answers
from the same page, viewers read it all, strangers get nothing, and reading writes
nothing; on both backends.

The rows come from a real scheduler on the fake clock (a New York schedule at 02:30 that
skips DST gaps, across the 2027-03-14 change and a three-day outage), or are written
with the ledger's own writer where a shape is hard to reach (a summary row, 250 rows).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from kalends.missions.ledger import Entry, Outcome, Reason
from kalends.missions.ledger_writes import record
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import Scheduler
from kalends.storage.ledger_tables import slot_ledger
from pages.conftest import Pages

NEW_YORK = "America/New_York"
SKIP_GAPS = {"kind": "daily", "time": "02:30", "zone": NEW_YORK, "gap": "skip"}


def _at(pages: Pages, when: str) -> None:
    pages.world.clock.set(datetime.fromisoformat(when).replace(tzinfo=UTC))


def _alice(pages: Pages) -> UUID:
    return pages.world.actors["alice"].id


def _play(pages: Pages, sid: str) -> None:
    rev = pages.world.services.schedules.detail(_alice(pages), sid)["revision"]
    pages.world.services.schedules.control(
        _alice(pages), sid, "play", request_id=f"req-ledger-play-{rev}", expected_revision=rev
    )


def _run_at(pages: Pages, scheduler: Scheduler, *moments: str) -> None:
    """The scheduler looks at each moment, and again 30 s later (its passages settle)."""
    for when in moments:
        _at(pages, when)
        scheduler.run_once()
        pages.world.clock.advance(timedelta(seconds=30))
        scheduler.run_once()


def _across_dst_and_an_outage(pages: Pages, policy: dict[str, Any] = SKIP_GAPS) -> str:
    """Nightly at 02:30 New York, played on Friday 2027-03-12: it runs on Saturday, the
    02:30 of Sunday 14 March does not exist, it runs on Monday, then no scheduler runs
    until Thursday noon (UTC), when the slot of that morning is caught up and Tuesday's
    and Wednesday's are coalesced into it."""
    _at(pages, "2027-03-12T12:00:00")
    sid = pages.schedule("alice", "Nightly", policy=policy)
    _play(pages, sid)
    runtime = MemoryRuntime(clock=pages.world.clock, instant=True)
    scheduler = Scheduler(pages.world.services.store, runtime, owner="pages-ledger")
    # (under the shift policy, Sunday's slot is at 03:00, when the gap ends)
    sunday = [] if policy.get("gap") == "skip" else ["2027-03-14T07:00:00"]
    _run_at(pages, scheduler, "2027-03-13T07:30:00", *sunday, "2027-03-15T06:30:00")
    _run_at(pages, scheduler, "2027-03-18T12:00:00")
    return sid


def _doc(pages: Pages, sid: str) -> dict[str, Any]:
    return pages.world.services.schedules.detail(_alice(pages), sid)


def _passage_of(doc: dict[str, Any], slot: str) -> str:
    found = [r["passageId"] for r in doc["results"] if r["slot"] == slot]
    assert len(found) == 1, doc["results"]
    return str(found[0])


def _history(html: str) -> str:
    """The History section of a schedule page."""
    section = html.split('<section aria-labelledby="history-h">', 1)[1]
    return section.split("</section>", 1)[0]


def _rows(section: str) -> list[str]:
    body = section.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return re.split(r"<tr\b", body)[1:]


def _why(html: str) -> str:
    section = html.split('<section aria-labelledby="why-slot-h" id="why-slot">', 1)[1]
    return section.split("</section>", 1)[0]


def _ledger_rows(pages: Pages, sid: str) -> list[tuple[Any, ...]]:
    return pages.world.services.store.run(
        lambda conn: [
            tuple(row)
            for row in conn.execute(
                select(slot_ledger).where(slot_ledger.c.schedule_id == UUID(sid))
            ).all()
        ],
        write=False,
    )


def _write(pages: Pages, sid: str, entries: list[Entry]) -> None:
    now = pages.world.clock.now()
    pages.world.services.store.run(
        lambda conn: record(conn, [(UUID(sid), e) for e in entries], now)
    )


def _skipped(at: datetime, reason: Reason = Reason.PAUSED, **kw: Any) -> Entry:
    local = at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return Entry(
        key=at.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        at=at,
        local=local,
        zone="UTC",
        outcome=Outcome.SKIPPED,
        reason=reason,
        detail="the schedule was paused",
        **kw,
    )


class TestHistory:
    def test_skipped_and_coalesced_slots_stand_between_the_passages_newest_first(
        self, pages: Pages
    ) -> None:
        sid = _across_dst_and_an_outage(pages)
        doc = _doc(pages, sid)
        catch_up = _passage_of(doc, "2027-03-18T06:30:00Z")
        monday = _passage_of(doc, "2027-03-15T06:30:00Z")
        client = pages.sign_in("alice")
        html = client.get(f"/w/{pages.world.home.id}/schedules/{sid}").text
        history = _history(html)
        rows = _rows(history)
        said = [
            ("Completed", "2027-03-18T06:30:00Z"),  # the catch-up passage
            ("Coalesced", "2027-03-17T06:30:00Z"),
            ("Coalesced", "2027-03-16T06:30:00Z"),
            ("Completed", "2027-03-15T06:30:00Z"),
            ("Skipped", "DST gap"),
            ("Completed", "2027-03-13T07:30:00Z"),
        ]
        assert len(rows) == len(said), rows
        for row, (word, mark) in zip(rows, said, strict=True):
            assert word in row and mark in row, (word, mark, row)
        # Status is never colour alone: each outcome is a word in its badge.
        assert '<span aria-hidden="true">⤵</span> Coalesced</span>' in rows[1]
        assert '<span aria-hidden="true">↷</span> Skipped</span>' in rows[4]
        # Each coalesced slot names the catch-up passage it was folded into, and why.
        for row in rows[1:3]:
            assert "Coalesced into <a href=" in row
            assert f"/passages/{catch_up}" in row
            assert "— no scheduler was running" in row
        # The DST gap: the wall time that never existed, and the engine's sentence.
        assert "2027-03-14 02:30 America/New_York" in rows[4]
        assert (
            "Skipped — DST gap: 02:30 does not exist in America/New_York on 2027-03-14: "
            "clocks jump from 02:00 to 03:00"
        ) in rows[4]
        # The catch-up says it came late; the table keeps its columns and mobile labels.
        assert "started 5 h 30 min after its slot (caught up)" in rows[0]
        for label in ("Outcome", "Trigger", "Scheduled", "Started", "Settled", "Summary"):
            assert all(f'data-label="{label}"' in row for row in rows)
        assert '<table class="stack history">' in history
        assert f'href="/w/{pages.world.home.id}/schedules/{sid}/ledger">Full ledger</a>' in history
        # A launched row is shown with its settled passage, never a second time.
        assert history.count(f"/passages/{monday}") == 1
        # (its own row once; each folded slot names it and links its log)
        assert history.count(f'/passages/{catch_up}"') == 5
        assert "History (3)" in history

    def test_a_slot_shifted_out_of_the_gap_carries_its_dst_note(self, pages: Pages) -> None:
        shifting = {"kind": "daily", "time": "02:30", "zone": NEW_YORK}
        sid = _across_dst_and_an_outage(pages, shifting)
        client = pages.sign_in("alice")
        history = _history(client.get(f"/w/{pages.world.home.id}/schedules/{sid}").text)
        sunday = next(r for r in _rows(history) if "2027-03-14T07:00:00Z" in r)
        assert "Completed" in sunday
        assert (
            "DST: the planned wall time did not exist on 2027-03-14 (clocks went forward) "
            "— ran at 03:00"
        ) in sunday
        assert "Skipped" not in history  # nothing was skipped under the shift policy

    def test_a_summary_row_says_how_many_slots_from_when_to_when(self, pages: Pages) -> None:
        _at(pages, "2027-03-12T12:00:00")
        sid = pages.schedule("alice", "Every minute")
        first = datetime(2027, 3, 10, 0, 0, tzinfo=UTC)
        last = datetime(2027, 3, 11, 0, 59, tzinfo=UTC)
        summary = Entry(
            key=f"summary:{first.isoformat()}",
            at=first,
            local="2027-03-09T19:00:00",
            zone=NEW_YORK,
            outcome=Outcome.SKIPPED,
            reason=Reason.PAUSED,
            detail="1500 slots from 2027-03-09T19:00:00 to 2027-03-10T20:59:00 (paused 1500)",
            slots=1500,
            through=last,
        )
        _write(pages, sid, [summary])
        client = pages.sign_in("alice")
        home = pages.world.home.id
        history = _history(client.get(f"/w/{home}/schedules/{sid}").text)
        (row,) = _rows(history)
        assert "1500 slots from" in row
        assert '<time datetime="2027-03-10T00:00:00Z">2027-03-09 19:00 Tue America/New_York' in row
        assert '<time datetime="2027-03-11T00:59:00Z">2027-03-10 19:59 Wed America/New_York' in row
        assert "Skipped — paused" in row
        ledger = client.get(f"/w/{home}/schedules/{sid}/ledger").text
        assert "1500 slots from" in ledger
        assert "<strong>1500</strong> slots" in ledger  # the counts sum the slots

    def test_it_shows_the_newest_page_of_a_crowded_period_and_says_where_the_rest_is(
        self, pages: Pages
    ) -> None:
        _at(pages, "2027-03-12T12:00:00")
        sid = pages.schedule("alice", "Hourly")
        start = datetime(2027, 3, 1, 0, 0, tzinfo=UTC)
        _write(pages, sid, [_skipped(start + timedelta(hours=h)) for h in range(250)])
        client = pages.sign_in("alice")
        history = _history(client.get(f"/w/{pages.world.home.id}/schedules/{sid}").text)
        rows = _rows(history)
        assert len(rows) == 200
        newest, oldest = start + timedelta(hours=249), start + timedelta(hours=50)
        assert f'datetime="{newest:%Y-%m-%dT%H:%M:%S}Z"' in rows[0]
        assert f'datetime="{oldest:%Y-%m-%dT%H:%M:%S}Z"' in rows[-1]
        assert "Older slots of this period are in the" in history

    def test_every_reason_is_said_in_words_and_a_moved_slot_says_both_instants(
        self, pages: Pages
    ) -> None:
        _at(pages, "2027-03-12T12:00:00")
        sid = pages.schedule("alice", "Nightly")
        day = datetime(2027, 3, 1, 12, 0, tzinfo=UTC)
        words = {
            Reason.PAUSED: "Skipped — paused",
            Reason.STOPPED: "Skipped — stopped",
            Reason.QUOTA: "Skipped — quota used up",
            Reason.END_BOUND: "Skipped — end bound reached",
            Reason.CONDITION_FALSE: "Skipped — condition unchanged",
            Reason.PENDING_PASSAGE: "Skipped — passage pending",
            Reason.NO_SCHEDULER: "Skipped — no scheduler was running",
        }
        entries = [_skipped(day + timedelta(days=n), r) for n, r in enumerate(words)]
        moved_to, moved_from = (
            datetime(2027, 3, 20, 17, tzinfo=UTC),
            datetime(2027, 3, 20, 16, tzinfo=UTC),
        )
        entries.append(
            Entry(
                key="2027-03-20T17:00:00Z",
                at=moved_to,
                local="2027-03-20T12:00:00",
                zone=NEW_YORK,
                outcome=Outcome.MOVED,
                reason=Reason.ZONE_RULES_CHANGED,
                other_at=moved_from,
                detail="new zone data moved it",
            )
        )
        _write(pages, sid, entries)
        client = pages.sign_in("alice")
        history = _history(client.get(f"/w/{pages.world.home.id}/schedules/{sid}").text)
        rows = _rows(history)
        assert len(rows) == len(entries)
        for n, said in enumerate(words.values()):
            assert said in rows[-1 - n], (said, rows[-1 - n])
        moved = rows[0]
        assert '<span aria-hidden="true">⇄</span> Moved</span>' in moved
        assert "Moved by new zone rules (was" in moved
        assert '<time datetime="2027-03-20T16:00:00Z">' in moved
        assert '<time datetime="2027-03-20T17:00:00Z">' in moved


class TestLedgerPage:
    def test_it_counts_pages_with_the_cursor_and_filters_by_day(self, pages: Pages) -> None:
        _at(pages, "2027-03-12T12:00:00")
        sid = pages.schedule("alice", "Hourly")
        start = datetime(2027, 3, 1, 0, 0, tzinfo=UTC)
        _write(pages, sid, [_skipped(start + timedelta(hours=h)) for h in range(250)])
        client = pages.sign_in("alice")
        base = f"/w/{pages.world.home.id}/schedules/{sid}/ledger"
        first = client.get(base)
        assert first.status_code == 200
        assert (
            "<h1>Slot ledger — Nightly</h1>" in first.text or "Slot ledger — Hourly" in first.text
        )
        assert "<strong>250</strong> slots" in first.text
        assert "By reason: paused 250." in first.text
        rows = _rows(first.text.split('<section aria-labelledby="rows-h">', 1)[1])
        assert len(rows) == 200
        assert "2027-03-01T00:00:00Z" in rows[0]  # earliest first
        following = re.search(r'<a href="([^"]+)" rel="next">', first.text)
        assert following is not None
        second = client.get(following.group(1).replace("&amp;", "&"))
        assert second.status_code == 200
        later = _rows(second.text.split('<section aria-labelledby="rows-h">', 1)[1])
        assert len(later) == 50
        assert 'rel="next"' not in second.text
        assert "First page" in second.text
        # Days in the schedule's zone (New York: 2027-03-02 is 05:00Z to 05:00Z).
        days = client.get(base, params={"from": "2027-03-02", "to": "2027-03-02"})
        assert days.status_code == 200
        shown = _rows(days.text.split('<section aria-labelledby="rows-h">', 1)[1])
        assert len(shown) == 24
        assert "2027-03-02T05:00:00Z" in shown[0] and "2027-03-03T04:00:00Z" in shown[-1]
        assert "<strong>24</strong> slots" in days.text
        assert 'value="2027-03-02"' in days.text  # the form keeps what was asked

    def test_a_malformed_day_a_reversed_window_or_a_forged_cursor_is_said_in_the_page(
        self, pages: Pages
    ) -> None:
        _at(pages, "2027-03-12T12:00:00")
        sid = pages.schedule("alice", "Hourly")
        client = pages.sign_in("alice")
        base = f"/w/{pages.world.home.id}/schedules/{sid}/ledger"
        cases = [
            # not a calendar date
            ({"from": "2027-13-01"}, "f-from", "is not a calendar date"),
            # not a date at all
            ({"to": "<script>"}, "f-to", "expected a date YYYY-MM-DD"),
            # the last day before the first
            ({"from": "2027-03-05", "to": "2027-03-01"}, "f-to", "is before the first"),
            # a window longer than ten years
            ({"from": "2000-01-01", "to": "2027-01-01"}, "f-to", "at most 10 years"),
            # a cursor nobody gave
            ({"after": "not-a-cursor"}, None, "not a ledger cursor"),
        ]
        for params, field, message in cases:
            reply = client.get(base, params=params)
            assert reply.status_code == 422, params
            assert 'role="alert"' in reply.text
            assert message in reply.text, (params, reply.text)
            assert "<script>" not in reply.text.split("<main", 1)[1]
            if field is not None:
                control = reply.text.split(f'id="{field}"', 1)[1].split(">", 1)[0]
                assert 'aria-invalid="true"' in control and "aria-describedby=" in control

    def test_a_deleted_schedules_ledger_is_empty_and_says_so(self, pages: Pages) -> None:
        sid = _across_dst_and_an_outage(pages)
        rev = _doc(pages, sid)["revision"]
        pages.world.services.schedules.control(
            _alice(pages), sid, "delete", request_id="req-ledger-delete-1", expected_revision=rev
        )
        client = pages.sign_in("alice")
        page = f"/w/{pages.world.home.id}/schedules/{sid}"
        ledger = client.get(page + "/ledger")
        assert ledger.status_code == 200
        assert "This schedule was deleted" in ledger.text
        assert "its ledger went with it" in ledger.text
        detail = client.get(page, params={"at": "2027-03-14T02:30"})
        assert detail.status_code == 200
        assert "This schedule was deleted" in detail.text
        assert "Why didn't it run?" not in detail.text


class TestWhy:
    def test_the_form_answers_for_a_dst_gap_a_coalesced_slot_and_a_time_that_is_no_slot(
        self, pages: Pages
    ) -> None:
        sid = _across_dst_and_an_outage(pages)
        catch_up = _passage_of(_doc(pages, sid), "2027-03-18T06:30:00Z")
        client = pages.sign_in("alice")
        page = f"/w/{pages.world.home.id}/schedules/{sid}"
        form = _why(client.get(page).text)
        assert f'<form method="get" action="{page}#why-slot"' in form
        assert 'type="datetime-local" step="60"' in form and 'name="at"' in form
        assert 'aria-live="polite"' in form

        gap = client.get(page, params={"at": "2027-03-14T02:30"})
        assert gap.status_code == 200
        answer = _why(gap.text)
        assert "Skipped</span>" in answer
        assert "The slot at 2027-03-14" in answer and "DST gap" in answer
        assert 'value="2027-03-14T02:30"' in answer
        assert "2027-03-14 02:30 America/New_York" in answer

        folded = _why(client.get(page, params={"at": "2027-03-16T02:30"}).text)
        assert "Coalesced</span>" in folded
        assert "no scheduler was running" in folded
        assert f"/passages/{catch_up}" in folded
        assert '<time datetime="2027-03-16T06:30:00Z">' in folded  # in the schedule's zone

        none = _why(client.get(page, params={"at": "2027-03-16T05:00"}).text)
        assert "Not a slot</span>" in none
        assert "is not a slot of this schedule" in none
        # The nearest slots link to their own answers.
        assert f'href="{page}?at=2027-03-16T02%3A30#why-slot"' in none

    def test_bad_input_is_said_next_to_the_field_with_status_422(self, pages: Pages) -> None:
        _at(pages, "2027-03-12T12:00:00")
        sid = pages.schedule("alice", "Nightly", policy=SKIP_GAPS)
        client = pages.sign_in("alice")
        page = f"/w/{pages.world.home.id}/schedules/{sid}"
        cases = [
            # nothing entered
            ("", "enter a date and a time"),
            # a date alone names no slot
            ("2027-03-14", "a date alone names no slot"),
            # not a wall time
            ("<b>noon</b>", "expected a local wall time"),
            # out of range
            ("2027-03-14T25:00", "is not a time of day"),
            # an offset is not a wall time
            ("2027-03-14T02:30+01:00", "expected a local wall time"),
            # far too long
            ("2027-03-14T02:30" * 4, "at most 40 characters"),
        ]
        for at, message in cases:
            reply = client.get(page, params={"at": at})
            assert reply.status_code == 422, at
            answer = _why(reply.text)
            assert 'role="alert"' in answer and message in answer, (at, answer)
            assert "<b>noon</b>" not in answer
            control = answer.split('id="f-at"', 1)[1].split(">", 1)[0]
            assert 'aria-invalid="true"' in control and "err-at" in control
            assert "autofocus" in control


class TestAccess:
    def test_a_viewer_reads_the_history_the_ledger_and_the_answer(self, pages: Pages) -> None:
        sid = _across_dst_and_an_outage(pages)
        client = pages.sign_in("carol")
        page = f"/w/{pages.world.home.id}/schedules/{sid}"
        detail = client.get(page, params={"at": "2027-03-14T02:30"})
        assert detail.status_code == 200
        assert "Skipped — DST gap" in _history(detail.text)
        assert "Skipped</span>" in _why(detail.text)
        ledger = client.get(page + "/ledger")
        assert ledger.status_code == 200
        assert "<strong>2</strong> slots" in ledger.text  # two coalesced

    def test_a_stranger_gets_not_found_and_learns_nothing(self, pages: Pages) -> None:
        sid = _across_dst_and_an_outage(pages)
        client = pages.sign_in("dave")
        page = f"/w/{pages.world.home.id}/schedules/{sid}"
        for path, params in (
            (page, {"at": "2027-03-14T02:30"}),
            (page + "/ledger", {}),
            (page + "/ledger", {"from": "2027-03-01"}),
        ):
            reply = client.get(path, params=params)
            assert reply.status_code == 404, path
            assert "Nightly" not in reply.text and "DST gap" not in reply.text
        # Dave's own workspace does not open alice's schedule either.
        away = f"/w/{pages.world.away.id}/schedules/{sid}"
        assert client.get(away + "/ledger").status_code == 404
        assert client.get(away, params={"at": "2027-03-14T02:30"}).status_code == 404

    def test_reading_writes_nothing(self, pages: Pages) -> None:
        sid = _across_dst_and_an_outage(pages)
        before = (_ledger_rows(pages, sid), _doc(pages, sid)["revision"])
        count = pages.world.services.store.run(
            lambda conn: conn.execute(select(func.count()).select_from(slot_ledger)).scalar_one(),
            write=False,
        )
        page = f"/w/{pages.world.home.id}/schedules/{sid}"
        for who in ("alice", "carol", "dave"):
            client: TestClient = pages.sign_in(who)
            for at in ("2027-03-14T02:30", "2027-03-19T02:30", "nonsense", ""):
                client.get(page, params={"at": at})
            client.get(page + "/ledger", params={"from": "2027-03-01", "to": "2027-03-31"})
            client.get(page + "/ledger", params={"after": "forged"})
        assert (_ledger_rows(pages, sid), _doc(pages, sid)["revision"]) == before
        assert (
            pages.world.services.store.run(
                lambda conn: conn.execute(
                    select(func.count()).select_from(slot_ledger)
                ).scalar_one(),
                write=False,
            )
            == count
        )
