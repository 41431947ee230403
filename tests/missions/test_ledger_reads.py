"""Reading the slot ledger (issue 24 §1 "Reads"): ``ScheduleService.ledger`` (rows over a
window, page by page, with the window's counts) and ``ScheduleService.why`` (one wall
time's verdict and sentence), on every backend.

Rows come two ways: written with :func:`~kalends.missions.ledger_writes.record` directly
(to reach every shape: summary rows, moved rows, missing days), and written by a real
:class:`~kalends.missions.scheduler.Scheduler` over the in-process runtime on the fake
clock (New York's and Berlin's DST weekends of 2027, an outage).
"""

from __future__ import annotations

import base64
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import delete, select

from kalends.errors import InvalidInput, NotFound
from kalends.missions.ledger import RETAIN_AGE, Entry, Outcome, Reason
from kalends.missions.ledger_reads import MAX_LEDGER_PAGE, VERDICTS, decode_cursor, encode_cursor
from kalends.missions.ledger_writes import record
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import Scheduler
from kalends.storage.ledger_tables import slot_ledger
from kalends.storage.testing import nothing_written
from missions.conftest import MissionWorld
from missions.scheduler_support import Driver, create, play, stored_body
from missions.surgery import edit_body

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
DAILY = {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"}


def _at(y: int, m: int, d: int, hh: int, mm: int = 0, zone: ZoneInfo = BERLIN) -> datetime:
    return datetime(y, m, d, hh, mm, tzinfo=zone).astimezone(UTC)


def _played(mw: MissionWorld, policy: dict[str, Any], start: datetime, **overrides: Any) -> UUID:
    mw.clock.set(start)
    sid = create(mw, policy, "create-00001", **overrides)
    play(mw, sid)
    return sid


def _control(mw: MissionWorld, sid: UUID, action: str) -> None:
    rev = mw.schedules.detail(mw.bob.id, sid)["revision"]
    getattr(mw.schedules, action)(
        mw.bob.id, sid, request_id=f"{action}-{rev:05d}", expected_revision=rev
    )


def _driver(mw: MissionWorld, *, instant: bool = True) -> tuple[Driver, MemoryRuntime]:
    runtime = MemoryRuntime(clock=mw.clock, instant=instant)
    return Driver(mw, Scheduler(mw.store, runtime, owner="ledger-reads")), runtime


def _entry(
    d: int,
    outcome: Outcome,
    reason: Reason | None = None,
    *,
    m: int = 5,
    passage: str | None = None,
    **more: Any,
) -> Entry:
    """The row of Berlin's 09:00 slot on 2027-``m``-``d``."""
    at = _at(2027, m, d, 9)
    return Entry(
        key=more.pop("key", at.isoformat().replace("+00:00", "Z")),
        at=at,
        local=f"2027-{m:02d}-{d:02d}T09:00:00",
        zone="Europe/Berlin",
        outcome=outcome,
        reason=reason,
        passage_id=passage,
        detail=more.pop("detail", None),
        **more,
    )


def _record(mw: MissionWorld, sid: UUID, *entries: Entry) -> None:
    now = mw.clock.now()
    mw.store.run(lambda conn: record(conn, [(sid, e) for e in entries], now))


def _ledger_rows(mw: MissionWorld, sid: UUID) -> int:
    return len(
        mw.store.run(
            lambda conn: conn.execute(
                select(slot_ledger.c.slot_key).where(slot_ledger.c.schedule_id == sid)
            ).all(),
            write=False,
        )
    )


def _summary(first: int, last: int, outcome: Outcome, reason: Reason) -> Entry:
    """A summary row standing for Berlin's 09:00 slots of May ``first`` to ``last``."""
    at = _at(2027, 5, first, 9)
    return _entry(
        first,
        outcome,
        reason,
        key=f"summary:{at.isoformat().replace('+00:00', 'Z')}",
        slots=last - first + 1,
        through=_at(2027, 5, last, 9),
        detail=f"{last - first + 1} slots",
    )


@pytest.fixture
def daily(mw: MissionWorld) -> UUID:
    """Berlin's daily 09:00, played on 2027-05-01 at 08:00, the clock on 2027-05-20."""
    sid = _played(mw, DAILY, _at(2027, 5, 1, 8))
    mw.clock.set(_at(2027, 5, 20, 12))
    return sid


# --- ledger: rows, counts, pages, windows ----------------------------------------------------


class TestLedger:
    def test_rows_come_ascending_with_the_policys_zone_and_counts_that_sum_summary_slots(
        self, mw: MissionWorld, daily: UUID
    ) -> None:
        _record(
            mw,
            daily,
            _entry(9, Outcome.SKIPPED, Reason.PAUSED),
            _summary(2, 6, Outcome.COALESCED, Reason.NO_SCHEDULER),
            _entry(7, Outcome.LAUNCHED, passage="psg_7"),
            _entry(1, Outcome.LAUNCHED, passage="psg_1"),
        )
        with nothing_written(mw.store):
            page = mw.schedules.ledger(mw.carol.id, daily)
        assert page["missionId"] == str(daily) and page["zone"] == "Europe/Berlin"
        assert page["from"] is None and page["to"] is None and page["nextAfter"] is None
        assert [(i["local"], i["outcome"], i["slots"]) for i in page["items"]] == [
            ("2027-05-01T09:00:00", "launched", 1),
            ("2027-05-02T09:00:00", "coalesced", 5),
            ("2027-05-07T09:00:00", "launched", 1),
            ("2027-05-09T09:00:00", "skipped", 1),
        ]
        summary = page["items"][1]
        assert summary["slot"] == "2027-05-02T07:00:00Z"
        assert summary["through"] == "2027-05-06T07:00:00Z"
        assert summary["decidedAt"] == "2027-05-20T10:00:00Z"
        assert page["counts"] == {
            "launched": 2,
            "coalesced": 5,
            "skipped": 1,
            "moved": 0,
            "reasons": {"no-scheduler": 5, "paused": 1},
        }

    def test_pages_follow_the_cursor_and_together_give_every_row_once(
        self, mw: MissionWorld, daily: UUID
    ) -> None:
        _record(mw, daily, *(_entry(d, Outcome.LAUNCHED, passage=f"psg_{d}") for d in range(1, 8)))
        whole = mw.schedules.ledger(mw.carol.id, daily)["items"]
        seen: list[dict[str, Any]] = []
        after: str | None = None
        sizes = []
        while True:
            page = mw.schedules.ledger(mw.carol.id, daily, after=after, limit=3)
            seen += page["items"]
            sizes.append(len(page["items"]))
            # Every page counts the whole window, not itself.
            assert page["counts"]["launched"] == 7
            after = page["nextAfter"]
            if after is None:
                break
        assert sizes == [3, 3, 1]
        assert seen == whole

    def test_a_full_last_page_has_no_next_cursor(self, mw: MissionWorld, daily: UUID) -> None:
        _record(mw, daily, *(_entry(d, Outcome.LAUNCHED, passage=f"psg_{d}") for d in (1, 2)))
        first = mw.schedules.ledger(mw.carol.id, daily, limit=1)
        assert first["nextAfter"] is not None
        last = mw.schedules.ledger(mw.carol.id, daily, limit=1, after=first["nextAfter"])
        assert [i["local"][:10] for i in last["items"]] == ["2027-05-02"]
        assert last["nextAfter"] is None

    def test_a_window_holds_the_rows_that_overlap_it_its_end_excluded(
        self, mw: MissionWorld, daily: UUID
    ) -> None:
        _record(
            mw,
            daily,
            _entry(1, Outcome.LAUNCHED, passage="psg_1"),
            _summary(2, 6, Outcome.SKIPPED, Reason.PAUSED),
            _entry(7, Outcome.LAUNCHED, passage="psg_7"),
            _entry(8, Outcome.LAUNCHED, passage="psg_8"),
        )

        def locals_(start: datetime | None, end: datetime | None) -> list[str]:
            page = mw.schedules.ledger(mw.carol.id, daily, start=start, end=end)
            return [i["local"][:10] for i in page["items"]]

        # The summary row starts before the window and ends inside it: it overlaps.
        assert locals_(_at(2027, 5, 4, 0), _at(2027, 5, 8, 9)) == ["2027-05-02", "2027-05-07"]
        assert locals_(_at(2027, 5, 7, 0), None) == ["2027-05-07", "2027-05-08"]
        assert locals_(None, _at(2027, 5, 2, 0)) == ["2027-05-01"]
        # A window after the summary's last slot does not hold it.
        assert locals_(_at(2027, 5, 6, 10), _at(2027, 5, 7, 10)) == ["2027-05-07"]
        page = mw.schedules.ledger(
            mw.carol.id, daily, start=_at(2027, 5, 4, 0), end=_at(2027, 5, 8, 9)
        )
        assert page["from"] == "2027-05-03T22:00:00Z" and page["to"] == "2027-05-08T07:00:00Z"
        assert page["counts"]["skipped"] == 5 and page["counts"]["launched"] == 1
        # An empty window is no error.
        assert locals_(_at(2027, 5, 9, 0), _at(2027, 5, 9, 0)) == []

    def test_a_window_of_exactly_ten_years_is_accepted(self, mw: MissionWorld, daily: UUID) -> None:
        start = _at(2020, 1, 1, 0)
        page = mw.schedules.ledger(mw.carol.id, daily, start=start, end=start + timedelta(3653))
        assert page["items"] == []

    @pytest.mark.parametrize(
        ("keywords", "field", "words"),
        [
            # The window starts after it ends.
            ({"start": _at(2027, 5, 9, 0), "end": _at(2027, 5, 8, 0)}, "from", "after it ends"),
            # Ten years and a day.
            (
                {"start": _at(2017, 5, 1, 0), "end": _at(2027, 5, 3, 0)},
                "to",
                "at most 10 years",
            ),
            # A naive start.
            ({"start": datetime(2027, 5, 1)}, "from", "aware instant"),
            # A naive end.
            ({"end": datetime(2027, 5, 1)}, "to", "aware instant"),
            # Page sizes out of range.
            ({"limit": 0}, "limit", f"1-{MAX_LEDGER_PAGE}"),
            ({"limit": MAX_LEDGER_PAGE + 1}, "limit", f"1-{MAX_LEDGER_PAGE}"),
            ({"limit": True}, "limit", f"1-{MAX_LEDGER_PAGE}"),
            # Cursors that no page gave.
            ({"after": "not a cursor"}, "after", "not a ledger cursor"),
            ({"after": ""}, "after", "not a ledger cursor"),
            ({"after": base64.urlsafe_b64encode(b"[1, 2]").decode()}, "after", "cursor"),
            (
                {"after": base64.urlsafe_b64encode(b'{"at": "x", "key": "k"}').decode()},
                "after",
                "cursor",
            ),
            (
                {
                    "after": base64.urlsafe_b64encode(
                        b'{"at": "2027-05-01T07:00:00", "key": "k"}'
                    ).decode()
                },
                "after",
                "cursor",
            ),
            ({"after": "x" * 401}, "after", "cursor"),
        ],
    )
    def test_bad_input_is_refused_naming_its_field_and_nothing_is_written(
        self, mw: MissionWorld, daily: UUID, keywords: dict[str, Any], field: str, words: str
    ) -> None:
        _record(mw, daily, _entry(1, Outcome.LAUNCHED, passage="psg_1"))
        with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
            mw.schedules.ledger(mw.carol.id, daily, **keywords)
        assert caught.value.details["field"] == field
        assert words in caught.value.message

    def test_a_cursor_round_trips(self) -> None:
        at = _at(2027, 5, 1, 9)
        assert decode_cursor(encode_cursor(at, "missing:x@Europe/Berlin")) == (
            at,
            "missing:x@Europe/Berlin",
        )

    def test_only_members_read_it_and_only_under_its_own_workspace(
        self, mw: MissionWorld, daily: UUID
    ) -> None:
        _record(mw, daily, _entry(1, Outcome.LAUNCHED, passage="psg_1"))
        # carol views home: she reads it, under its workspace too.
        assert len(mw.schedules.ledger(mw.carol.id, daily, workspace=mw.home.id)["items"]) == 1
        with nothing_written(mw.store):
            # dave is no member of home: the schedule does not exist for him.
            with pytest.raises(NotFound):
                mw.schedules.ledger(mw.dave.id, daily)
            with pytest.raises(NotFound):
                mw.schedules.why(mw.dave.id, daily, "2027-05-01T09:00")
            # Under another workspace's name it is not found either.
            with pytest.raises(NotFound):
                mw.schedules.ledger(mw.dave.id, daily, workspace=mw.away.id)
            with pytest.raises(NotFound):
                mw.schedules.ledger(mw.carol.id, uuid4())
            with pytest.raises(NotFound):
                mw.schedules.why(mw.carol.id, uuid4(), "2027-05-01T09:00")
            with pytest.raises(InvalidInput):
                mw.schedules.ledger(mw.carol.id, "not-an-id")

    def test_a_deleted_schedule_has_an_empty_ledger_and_no_why(
        self, mw: MissionWorld, daily: UUID
    ) -> None:
        _record(mw, daily, _entry(1, Outcome.LAUNCHED, passage="psg_1"))
        _control(mw, daily, "delete")
        assert mw.schedules.detail(mw.carol.id, daily)["kind"] == "tombstone"
        page = mw.schedules.ledger(mw.carol.id, daily)
        assert page["items"] == [] and page["nextAfter"] is None
        assert page["counts"] == {
            "launched": 0,
            "coalesced": 0,
            "skipped": 0,
            "moved": 0,
            "reasons": {},
        }
        with pytest.raises(NotFound, match="deleted"):
            mw.schedules.why(mw.carol.id, daily, "2027-05-01T09:00")


# --- why: a recorded slot ---------------------------------------------------------------------


class TestWhyRecorded:
    def test_a_coalesced_slot_names_its_reason_and_the_catch_up_passage(
        self, mw: MissionWorld, daily: UUID
    ) -> None:
        _record(
            mw,
            daily,
            _entry(3, Outcome.COALESCED, Reason.NO_SCHEDULER, passage="psg_5", detail="outage"),
            _entry(5, Outcome.LAUNCHED, passage="psg_5"),
        )
        with nothing_written(mw.store):
            answer = mw.schedules.why(mw.carol.id, daily, "2027-05-03T09:00")
        assert answer["at"] == "2027-05-03T09:00:00" and answer["zone"] == "Europe/Berlin"
        assert answer["instant"] == "2027-05-03T07:00:00Z"
        assert answer["verdict"] == "coalesced"
        assert answer["row"]["reason"] == "no-scheduler"
        assert "no scheduler was running" in answer["sentence"]
        assert "coalesced into the catch-up passage psg_5" in answer["sentence"]
        # psg_5 is no settled result of the document: no passage is shown.
        assert answer["passage"] is None
        assert answer["nearest"] == {
            "before": {"slot": "2027-05-02T07:00:00Z", "local": "2027-05-02T09:00:00"},
            "after": {"slot": "2027-05-04T07:00:00Z", "local": "2027-05-04T09:00:00"},
        }

    def test_a_skipped_slot_says_why_with_its_detail(self, mw: MissionWorld, daily: UUID) -> None:
        _record(mw, daily, _entry(4, Outcome.SKIPPED, Reason.QUOTA, detail="the quota is used"))
        answer = mw.schedules.why(mw.carol.id, daily, "2027-05-04T09:00:00")
        assert answer["verdict"] == "skipped"
        assert answer["sentence"] == (
            "The slot at 2027-05-04 09:00:00 Europe/Berlin was skipped: the schedule's "
            "passage quota was used up; the quota is used."
        )

    def test_a_slot_inside_a_summary_row_takes_its_verdict_and_other_times_are_no_slots(
        self, mw: MissionWorld, daily: UUID
    ) -> None:
        _record(mw, daily, _summary(2, 6, Outcome.SKIPPED, Reason.PAUSED))
        answer = mw.schedules.why(mw.carol.id, daily, "2027-05-04T09:00")
        assert answer["verdict"] == "skipped"
        assert answer["row"]["slots"] == 5
        assert "one of 5 slots summarised in one row" in answer["sentence"]
        assert "the schedule was paused" in answer["sentence"]
        other = mw.schedules.why(mw.carol.id, daily, "2027-05-04T10:00")
        assert other["verdict"] == "not-a-slot" and other["row"] is None

    def test_a_slot_moved_by_new_zone_rules_is_found_by_its_old_wall_time(
        self, mw: MissionWorld, daily: UUID
    ) -> None:
        old, new = _at(2027, 5, 25, 9), _at(2027, 5, 25, 9) + timedelta(hours=1)
        _record(
            mw,
            daily,
            Entry(
                key=new.isoformat().replace("+00:00", "Z"),
                at=new,
                local="2027-05-25T09:00:00",
                zone="Europe/Berlin",
                outcome=Outcome.MOVED,
                reason=Reason.ZONE_RULES_CHANGED,
                other_at=old,
            ),
        )
        answer = mw.schedules.why(mw.carol.id, daily, "2027-05-25T09:00")
        assert answer["verdict"] == "moved"
        assert answer["row"]["otherAt"] == "2027-05-25T07:00:00Z"
        assert (
            "was moved from 2027-05-25 09:00:00 Europe/Berlin to 2027-05-25 10:00:00"
            in (answer["sentence"])
        )
        assert "new time zone rules moved it" in answer["sentence"]

    def test_a_month_without_the_day_is_answered_from_its_missing_row(
        self, mw: MissionWorld
    ) -> None:
        sid = _played(
            mw,
            {"kind": "monthly", "day": 31, "time": "09:00", "zone": "Europe/Berlin"},
            _at(2027, 1, 1, 8),
        )
        driver, _ = _driver(mw)
        mw.clock.set(_at(2027, 3, 31, 8))
        driver.until(_at(2027, 3, 31, 10), step=timedelta(hours=1))
        answer = mw.schedules.why(mw.carol.id, sid, "2027-02-31T09:00")
        assert answer["verdict"] == "skipped"
        assert answer["row"]["reason"] == "day-missing"
        assert answer["instant"] is None
        assert "its day does not exist" in answer["sentence"]
        # A date no month has and no row names is bad input.
        with pytest.raises(InvalidInput, match="not a calendar date"):
            mw.schedules.why(mw.carol.id, sid, "2027-04-31T09:00")


# --- why: no row ------------------------------------------------------------------------------


class TestWhyUnrecorded:
    def test_a_time_that_is_no_slot_names_the_nearest_slots_in_local_time(
        self, mw: MissionWorld, daily: UUID
    ) -> None:
        answer = mw.schedules.why(mw.carol.id, daily, "2027-05-10T08:15")
        assert answer["verdict"] == "not-a-slot"
        assert answer["sentence"] == (
            "2027-05-10 08:15:00 Europe/Berlin is not a slot of this schedule's policy; the "
            "one before is 2027-05-09 09:00:00 Europe/Berlin and the one after is "
            "2027-05-10 09:00:00 Europe/Berlin."
        )
        assert answer["nearest"]["before"]["local"] == "2027-05-09T09:00:00"
        assert answer["nearest"]["after"]["slot"] == "2027-05-10T07:00:00Z"

    def test_another_zone_reads_the_wall_time_there(self, mw: MissionWorld, daily: UUID) -> None:
        # 03:00 in New York is 09:00 in Berlin.
        answer = mw.schedules.why(mw.carol.id, daily, "2027-05-10T03:00", zone="America/New_York")
        assert answer["zone"] == "America/New_York"
        assert answer["instant"] == "2027-05-10T07:00:00Z"
        assert answer["verdict"] == "undecided"

    @pytest.mark.parametrize(
        ("state", "words"),
        [
            # Running: the next slot launches if nothing changes.
            ("running", "if nothing changes it launches then (the next slot is 2027-05-02"),
            # Paused: not unless Play comes first.
            ("paused", "the schedule is paused, so it will not launch unless Play comes first"),
            # Stopped: never.
            ("stopped", "the schedule is stopped, so it will not launch"),
        ],
    )
    def test_a_future_slot_is_not_yet_and_says_what_its_state_does_to_it(
        self, mw: MissionWorld, state: str, words: str
    ) -> None:
        sid = _played(mw, DAILY, _at(2027, 5, 1, 10))
        if state != "running":
            _control(mw, sid, "pause" if state == "paused" else "stop")
        # (Stop records the next slot, the 2nd, as skipped: ask the 3rd.)
        answer = mw.schedules.why(mw.carol.id, sid, "2027-05-03T09:00")
        assert answer["verdict"] == "not-yet"
        assert words in answer["sentence"]

    def test_a_later_future_slot_names_the_next_one(self, mw: MissionWorld) -> None:
        sid = _played(mw, DAILY, _at(2027, 5, 1, 10))
        answer = mw.schedules.why(mw.carol.id, sid, "2027-05-09T09:00")
        assert answer["verdict"] == "not-yet"
        assert "the next slot is 2027-05-02 09:00:00 Europe/Berlin" in answer["sentence"]
        following = mw.schedules.why(mw.carol.id, sid, "2027-05-02T09:00")
        assert "it is the next slot; if nothing changes it launches then" in following["sentence"]

    def test_a_future_slot_of_a_schedule_never_played_waits_for_play(
        self, mw: MissionWorld
    ) -> None:
        mw.clock.set(_at(2027, 5, 1, 10))
        sid = create(mw, DAILY, "create-00001")
        answer = mw.schedules.why(mw.carol.id, sid, "2027-05-02T09:00")
        assert answer["verdict"] == "not-yet"
        assert "never been played" in answer["sentence"]
        before = mw.schedules.why(mw.carol.id, sid, "2027-04-30T09:00")
        assert before["verdict"] == "before-first-play"
        assert "never been played" in before["sentence"]

    def test_future_slots_past_the_end_bound_or_the_quota_will_not_launch(
        self, mw: MissionWorld
    ) -> None:
        sid = _played(
            mw,
            DAILY,
            _at(2027, 5, 1, 10),
            end={"until": {"local": "2027-05-05T00:00:00", "zone": "Europe/Berlin"}},
        )
        answer = mw.schedules.why(mw.carol.id, sid, "2027-05-06T09:00")
        assert answer["verdict"] == "not-yet"
        assert "after the schedule's end bound" in answer["sentence"]
        quota = create(mw, DAILY, "create-00002", end={"maxPassages": 1})
        play(mw, quota)
        driver, _ = _driver(mw)
        driver.until(_at(2027, 5, 2, 10))
        assert stored_body(mw.store, quota).admitted == 1
        done = mw.schedules.why(mw.carol.id, quota, "2027-05-04T09:00")
        assert done["verdict"] == "not-yet"
        assert "has finished (quota-exhausted)" in done["sentence"]

    def test_a_slot_before_the_first_play_is_before_first_play(
        self, mw: MissionWorld, daily: UUID
    ) -> None:
        answer = mw.schedules.why(mw.carol.id, daily, "2027-04-30T09:00")
        assert answer["verdict"] == "before-first-play"
        assert "first played at 2027-05-01 08:00:00 Europe/Berlin" in answer["sentence"]

    def test_a_slot_older_than_every_kept_row_and_the_retention_age_is_forgotten(
        self, mw: MissionWorld, daily: UUID
    ) -> None:
        mw.clock.set(_at(2027, 5, 1, 9) + RETAIN_AGE + timedelta(days=30))
        _record(mw, daily, _entry(25, Outcome.LAUNCHED, m=7, passage="psg_x"))
        answer = mw.schedules.why(mw.carol.id, daily, "2027-05-10T09:00")
        assert answer["verdict"] == "forgotten"
        assert "last 1,000 rows or 90 days" in answer["sentence"]
        # A missing slot within the retention age is not forgotten but undecided.
        recent = mw.schedules.why(mw.carol.id, daily, "2027-07-20T09:00")
        assert recent["verdict"] == "undecided"

    def test_a_passed_over_slot_without_a_row_is_forgotten(self, mw: MissionWorld) -> None:
        sid = _played(mw, DAILY, _at(2027, 5, 1, 8))
        driver, _ = _driver(mw)
        driver.until(_at(2027, 5, 2, 10))
        # As before the ledger existed: the slot was decided, its row is not there.
        mw.store.run(lambda conn: conn.execute(delete(slot_ledger)))
        answer = mw.schedules.why(mw.carol.id, sid, "2027-05-01T09:00")
        assert answer["verdict"] == "forgotten"

    def test_a_due_slot_without_a_scheduler_is_undecided_and_says_so(
        self, mw: MissionWorld, daily: UUID
    ) -> None:
        answer = mw.schedules.why(mw.carol.id, daily, "2027-05-19T09:00")
        assert answer["verdict"] == "undecided"
        assert "no live scheduler holds the schedule's wake" in answer["sentence"]

    def test_a_due_slot_under_a_live_scheduler_waits_for_its_next_look(
        self, mw: MissionWorld
    ) -> None:
        sid = _played(mw, DAILY, _at(2027, 5, 1, 8, 59) + timedelta(seconds=30))
        driver, _ = _driver(mw)
        driver.once()
        # Within the scheduler's 60-second lease, after the slot.
        mw.clock.advance(timedelta(seconds=40))
        answer = mw.schedules.why(mw.carol.id, sid, "2027-05-01T09:00")
        assert answer["verdict"] == "undecided"
        assert "waits for the scheduler's next look" in answer["sentence"]

    def test_a_due_slot_of_a_paused_schedule_is_undecided_since_the_pause(
        self, mw: MissionWorld
    ) -> None:
        sid = _played(mw, DAILY, _at(2027, 5, 1, 8))
        _control(mw, sid, "pause")
        mw.clock.set(_at(2027, 5, 3, 12))
        answer = mw.schedules.why(mw.carol.id, sid, "2027-05-02T09:00")
        assert answer["verdict"] == "undecided"
        assert "paused since 2027-05-01 08:00:00 Europe/Berlin" in answer["sentence"]

    def test_a_due_slot_behind_a_pending_passage_is_undecided_naming_it(
        self, mw: MissionWorld
    ) -> None:
        sid = _played(mw, DAILY, _at(2027, 5, 1, 8))
        driver, _ = _driver(mw, instant=False)
        mw.clock.set(_at(2027, 5, 1, 9))
        assert driver.once().admitted == 1
        pending = stored_body(mw.store, sid).pending
        assert pending is not None
        mw.clock.set(_at(2027, 5, 2, 9, 30))
        answer = mw.schedules.why(mw.carol.id, sid, "2027-05-02T09:00")
        assert answer["verdict"] == "undecided"
        assert f"passage {pending.passage_id} is still pending" in answer["sentence"]
        launched = mw.schedules.why(mw.carol.id, sid, "2027-05-01T09:00")
        assert launched["verdict"] == "launched" and launched["passage"] is None
        assert "it is still pending" in launched["sentence"]

    def test_a_due_slot_of_an_interrupted_schedule_is_undecided_naming_the_interruption(
        self, mw: MissionWorld, daily: UUID
    ) -> None:
        edit_body(
            mw,
            daily,
            lambda body: replace(
                body, interruption="admission-uncertain", interrupted_at=_at(2027, 5, 18, 9)
            ),
        )
        answer = mw.schedules.why(mw.carol.id, daily, "2027-05-19T09:00")
        assert answer["verdict"] == "undecided"
        assert "interrupted (admission-uncertain)" in answer["sentence"]
        later = mw.schedules.why(mw.carol.id, daily, "2027-05-25T09:00")
        assert "interrupted (admission-uncertain); it launches once resumed" in later["sentence"]

    def test_a_wall_time_in_a_dst_gap_with_no_slot_there_does_not_exist(
        self, mw: MissionWorld, daily: UUID
    ) -> None:
        answer = mw.schedules.why(mw.carol.id, daily, "2028-03-26T02:30")
        assert answer["verdict"] == "nonexistent"
        assert answer["instant"] is None and answer["row"] is None
        assert answer["sentence"] == (
            "2028-03-26T02:30:00 does not exist in Europe/Berlin: clocks jump from 02:00 to "
            "03:00 on 2028-03-26, so no slot can be at that wall time."
        )
        assert answer["nearest"]["after"]["local"] == "2028-03-26T09:00:00"

    def test_a_repeated_wall_time_takes_the_pass_that_is_a_slot(self, mw: MissionWorld) -> None:
        # Hourly at :30 from an origin on the hour's half: both passes of 02:30 are slots.
        sid = _played(mw, {"kind": "every", "minutes": 60}, _at(2027, 10, 31, 0, 30))
        answer = mw.schedules.why(mw.carol.id, sid, "2027-10-31T02:30", zone="Europe/Berlin")
        assert answer["verdict"] == "not-yet"
        assert answer["instant"] == "2027-10-31T00:30:00Z"
        assert "the earlier of the two" in answer["sentence"]

    def test_a_repeated_wall_time_that_is_a_slot_only_in_its_later_pass_says_so(
        self, mw: MissionWorld
    ) -> None:
        # Every two hours from 23:30 UTC: 01:30 UTC (02:30 CET, the later pass) is a slot,
        # 00:30 UTC (02:30 CEST, the earlier) is not.
        sid = _played(
            mw, {"kind": "every", "minutes": 120}, datetime(2027, 10, 30, 23, 30, tzinfo=UTC)
        )
        answer = mw.schedules.why(mw.carol.id, sid, "2027-10-31T02:30", zone="Europe/Berlin")
        assert answer["instant"] == "2027-10-31T01:30:00Z"
        assert answer["verdict"] == "not-yet"
        assert "this is the later of the two, 2027-10-31T01:30:00Z" in answer["sentence"]

    def test_a_row_of_the_later_pass_of_a_repeated_hour_answers_for_it(
        self, mw: MissionWorld, daily: UUID
    ) -> None:
        later = datetime(2027, 10, 31, 1, 30, tzinfo=UTC)
        _record(
            mw,
            daily,
            Entry(
                key="2027-10-31T01:30:00Z",
                at=later,
                local="2027-10-31T02:30:00",
                zone="Europe/Berlin",
                outcome=Outcome.SKIPPED,
                reason=Reason.STOPPED,
            ),
        )
        answer = mw.schedules.why(mw.carol.id, daily, "2027-10-31T02:30")
        assert answer["verdict"] == "skipped"
        assert answer["instant"] == "2027-10-31T01:30:00Z"
        assert "the schedule was stopped" in answer["sentence"]
        assert "this is the later of the two" in answer["sentence"]

    def test_a_due_slot_of_a_stopped_schedule_past_its_recorded_ones_is_undecided(
        self, mw: MissionWorld
    ) -> None:
        sid = _played(mw, DAILY, _at(2027, 5, 1, 10))
        _control(mw, sid, "stop")
        mw.clock.set(_at(2027, 5, 5, 12))
        # Stop recorded the next slot, the 2nd, as stopped; the 4th has no row.
        assert mw.schedules.why(mw.carol.id, sid, "2027-05-02T09:00")["verdict"] == "skipped"
        answer = mw.schedules.why(mw.carol.id, sid, "2027-05-04T09:00")
        assert answer["verdict"] == "undecided"
        assert answer["sentence"].endswith("is due and not decided yet: the schedule is stopped.")

    @pytest.mark.parametrize("verdict", VERDICTS)
    def test_every_verdict_is_one_of_the_documented_ones(self, verdict: str) -> None:
        # The documented list the web and the CLI read: each has a test above.
        assert verdict in {
            "launched",
            "coalesced",
            "skipped",
            "moved",
            "not-a-slot",
            "not-yet",
            "undecided",
            "before-first-play",
            "forgotten",
            "nonexistent",
        }


class TestWhyBadInput:
    @pytest.mark.parametrize(
        ("at", "zone", "field", "words"),
        [
            # A date alone names no slot.
            ("2027-05-03", None, "at", "a date alone names no slot; give a wall time such as"),
            # An offset is not a wall time.
            ("2027-05-03T09:00+02:00", None, "at", "expected a local wall time"),
            # Words.
            ("tomorrow", None, "at", "expected a local wall time"),
            # Hours past 23.
            ("2027-05-03T24:00", None, "at", "not a time of day"),
            # A month that does not exist.
            ("2027-13-03T09:00", None, "at", "not a calendar date"),
            # Outside the civil engine's years.
            ("0001-01-01T00:00", None, "at", "outside the dates slots are computed for"),
            ("9999-12-31T23:59", None, "at", "outside the dates slots are computed for"),
            ("0000-01-01T00:00", None, "at", "outside the dates"),
            # Day zero.
            ("2027-05-00T09:00", None, "at", "not a calendar date"),
            # A zone nobody has.
            ("2027-05-03T09:00", "Mars/Olympus", "zone", ""),
            ("2027-05-03T09:00", "", "zone", ""),
        ],
    )
    def test_bad_input_is_refused_clearly_and_nothing_is_written(
        self, mw: MissionWorld, daily: UUID, at: str, zone: str | None, field: str, words: str
    ) -> None:
        with nothing_written(mw.store), pytest.raises(InvalidInput) as caught:
            mw.schedules.why(mw.carol.id, daily, at, zone=zone)
        assert caught.value.details["field"] == field
        assert words in caught.value.message


# --- rows a real scheduler wrote ------------------------------------------------------------


class TestWhyFromTheScheduler:
    def test_new_yorks_skipped_0230_on_the_spring_night_says_dst_gap(
        self, mw: MissionWorld
    ) -> None:
        policy = {"kind": "daily", "time": "02:30", "zone": "America/New_York", "gap": "skip"}
        sid = _played(mw, policy, _at(2027, 3, 12, 12, zone=NEW_YORK))
        driver, _ = _driver(mw)
        driver.until(_at(2027, 3, 16, 3, zone=NEW_YORK), step=timedelta(minutes=30))
        answer = mw.schedules.why(mw.carol.id, sid, "2027-03-14T02:30")
        assert answer["verdict"] == "skipped"
        assert answer["row"]["reason"] == "dst-gap"
        assert answer["sentence"].startswith(
            "The slot at 2027-03-14 02:30:00 America/New_York was skipped: its wall time "
            "falls in a DST gap and the policy skips such times; 02:30 does not exist"
        )
        page = mw.schedules.ledger(mw.carol.id, sid)
        assert page["zone"] == "America/New_York"
        assert [(i["local"][:10], i["outcome"], i["reason"]) for i in page["items"]] == [
            ("2027-03-13", "launched", None),
            ("2027-03-14", "skipped", "dst-gap"),
            ("2027-03-15", "launched", None),
            ("2027-03-16", "launched", None),
        ]
        assert page["counts"]["reasons"] == {"dst-gap": 1}
        launched = mw.schedules.why(mw.carol.id, sid, "2027-03-15T02:30")
        assert launched["verdict"] == "launched"
        assert launched["passage"] is not None
        assert launched["passage"]["passageId"] == launched["row"]["passageId"]
        assert launched["sentence"].endswith("; it settled completed.")

    def test_berlins_spring_gap_shifts_and_its_autumn_hour_takes_the_earlier(
        self, mw: MissionWorld
    ) -> None:
        policy = {"kind": "daily", "time": "02:30", "zone": "Europe/Berlin"}
        sid = _played(mw, policy, _at(2027, 3, 27, 12))
        driver, _ = _driver(mw)
        driver.until(_at(2027, 3, 29, 3), step=timedelta(minutes=30))
        spring = mw.schedules.why(mw.carol.id, sid, "2027-03-28T02:30")
        assert spring["verdict"] == "launched"
        assert spring["row"]["reason"] == "dst-shifted"
        assert spring["instant"] == "2027-03-28T01:00:00Z"
        assert spring["sentence"].startswith("2027-03-28T02:30:00 does not exist")
        assert "the slot moved past the gap" in spring["sentence"]
        mw.clock.set(_at(2027, 10, 30, 12))
        driver.until(_at(2027, 11, 1, 3), step=timedelta(minutes=30))
        autumn = mw.schedules.why(mw.carol.id, sid, "2027-10-31T02:30")
        assert autumn["verdict"] == "launched"
        assert autumn["row"]["note"] == "earlier-of-two"
        assert autumn["instant"] == "2027-10-31T00:30:00Z"
        assert "this is the earlier of the two" in autumn["sentence"]
        counts = mw.schedules.ledger(
            mw.carol.id, sid, start=_at(2027, 10, 30, 0), end=_at(2027, 11, 2, 0)
        )["counts"]
        assert counts["launched"] == 3

    def test_an_outage_coalesces_the_missed_days_into_the_catch_up_passage(
        self, mw: MissionWorld
    ) -> None:
        sid = _played(mw, DAILY, _at(2027, 5, 3, 8))
        driver, _ = _driver(mw)
        driver.until(_at(2027, 5, 3, 10))
        # No scheduler round for three days, then one.
        mw.clock.set(_at(2027, 5, 6, 12))
        driver.once()
        page = mw.schedules.ledger(mw.carol.id, sid)
        assert [(i["local"][:10], i["outcome"], i["reason"]) for i in page["items"]] == [
            ("2027-05-03", "launched", None),
            ("2027-05-04", "coalesced", "no-scheduler"),
            ("2027-05-05", "coalesced", "no-scheduler"),
            ("2027-05-06", "launched", None),
        ]
        catch_up = page["items"][-1]["passageId"]
        for day in ("04", "05"):
            answer = mw.schedules.why(mw.carol.id, sid, f"2027-05-{day}T09:00")
            assert answer["verdict"] == "coalesced"
            assert answer["row"]["passageId"] == catch_up
            assert "no scheduler was running at its time" in answer["sentence"]
            assert f"coalesced into the catch-up passage {catch_up}" in answer["sentence"]
        assert page["counts"] == {
            "launched": 2,
            "coalesced": 2,
            "skipped": 0,
            "moved": 0,
            "reasons": {"no-scheduler": 2},
        }
        assert _ledger_rows(mw, sid) == 4
