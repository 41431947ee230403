"""The slot ledger as the scheduler and the controls write it (issue 24 §1), on every
backend, with the fake clock and the in-process runtime: one row per nominal slot when it
is decided, launched, coalesced into a catch-up or skipped with its reason."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo

from sqlalchemy import insert, select

from kalends.civil import parse_rule, slots_between
from kalends.civil.missing import missing_slots
from kalends.missions.ledger import MAX_PASSED_ROWS, RETAIN_AGE, RETAIN_ROWS
from kalends.missions.ledger_writes import trim
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import Scheduler
from kalends.storage.ledger_tables import slot_ledger
from missions.conftest import MissionWorld
from missions.scheduler_support import Driver, create, play, stored_body

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
DAILY = {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"}


def _at(y: int, m: int, d: int, hh: int, mm: int = 0, zone: ZoneInfo = BERLIN) -> datetime:
    return datetime(y, m, d, hh, mm, tzinfo=zone).astimezone(UTC)


def _rows(mw: MissionWorld, sid: UUID) -> list[dict[str, Any]]:
    return mw.store.run(
        lambda conn: [
            dict(r._mapping)
            for r in conn.execute(
                select(slot_ledger)
                .where(slot_ledger.c.schedule_id == sid)
                .order_by(slot_ledger.c.slot_at, slot_ledger.c.slot_key)
            )
        ],
        write=False,
    )


def _said(rows: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    return [(r["local"], r["outcome"], r["reason"]) for r in rows]


def _control(mw: MissionWorld, sid: UUID, action: str) -> None:
    rev = mw.schedules.detail(mw.bob.id, sid)["revision"]
    getattr(mw.schedules, action)(
        mw.bob.id, sid, request_id=f"{action}-{rev:05d}", expected_revision=rev
    )


def _driver(mw: MissionWorld, *, instant: bool = True) -> tuple[Driver, MemoryRuntime]:
    runtime = MemoryRuntime(clock=mw.clock, instant=instant)
    return Driver(mw, Scheduler(mw.store, runtime, owner="ledger")), runtime


def _played(mw: MissionWorld, policy: dict[str, Any], start: datetime, **overrides: Any) -> UUID:
    mw.clock.set(start)
    sid = create(mw, policy, "create-00001", **overrides)
    play(mw, sid)
    return sid


def test_each_slot_that_launches_gets_one_launched_row_naming_its_passage(
    mw: MissionWorld,
) -> None:
    sid = _played(mw, DAILY, _at(2027, 5, 3, 8))
    driver, _ = _driver(mw)
    driver.until(_at(2027, 5, 5, 10))
    rows = _rows(mw, sid)
    assert _said(rows) == [
        ("2027-05-03T09:00:00", "launched", None),
        ("2027-05-04T09:00:00", "launched", None),
        ("2027-05-05T09:00:00", "launched", None),
    ]
    results = {r.slot: r.passage_id for r in stored_body(mw.store, sid).results}
    assert {r["slot_at"]: r["passage_id"] for r in rows} == results
    assert all(r["zone"] == "Europe/Berlin" and r["detail"] is None for r in rows)
    # Looking again decides nothing twice.
    driver.once()
    assert _rows(mw, sid) == rows


def test_an_outage_coalesces_the_missed_slots_into_the_catch_up_passage(
    mw: MissionWorld,
) -> None:
    sid = _played(mw, DAILY, _at(2027, 5, 3, 8))
    driver, _ = _driver(mw)
    driver.until(_at(2027, 5, 3, 10))
    # No scheduler from the 3rd at 10:00 to the 7th at 11:30: the 4th to the 6th pass.
    mw.clock.set(_at(2027, 5, 7, 11, 30))
    driver.until(_at(2027, 5, 7, 11, 45))
    rows = _rows(mw, sid)
    assert _said(rows) == [
        ("2027-05-03T09:00:00", "launched", None),
        ("2027-05-04T09:00:00", "coalesced", "no-scheduler"),
        ("2027-05-05T09:00:00", "coalesced", "no-scheduler"),
        ("2027-05-06T09:00:00", "coalesced", "no-scheduler"),
        ("2027-05-07T09:00:00", "launched", None),
    ]
    catch_up = rows[-1]["passage_id"]
    assert catch_up is not None
    assert {r["passage_id"] for r in rows[1:4]} == {catch_up}
    assert "2 h after its slot" in rows[-1]["detail"]


def test_slots_due_while_a_passage_runs_are_coalesced_for_the_pending_passage(
    mw: MissionWorld,
) -> None:
    sid = _played(mw, DAILY, _at(2027, 5, 3, 8))
    driver, runtime = _driver(mw, instant=False)
    driver.once()
    mw.clock.set(_at(2027, 5, 3, 9))
    assert driver.once().admitted == 1
    (session,) = runtime.sessions()
    # The passage runs for two and a half days; the scheduler keeps looking.
    for day in (4, 5):
        mw.clock.set(_at(2027, 5, day, 9, 1))
        assert driver.once().admitted == 0
    mw.clock.set(_at(2027, 5, 5, 21))
    runtime.report(session, "completed", "done")
    runtime.finish(session, status=0)
    driver.once()
    mw.clock.set(_at(2027, 5, 5, 21, 0) + timedelta(seconds=30))
    driver.once()
    rows = _rows(mw, sid)
    assert _said(rows) == [
        ("2027-05-03T09:00:00", "launched", None),
        ("2027-05-04T09:00:00", "coalesced", "pending-passage"),
        ("2027-05-05T09:00:00", "launched", None),
    ]
    first = rows[0]["passage_id"]
    assert first in rows[1]["detail"]
    assert rows[1]["passage_id"] == rows[2]["passage_id"] != first


def test_a_pause_skips_its_slots_when_play_passes_them_and_stop_skips_the_next(
    mw: MissionWorld,
) -> None:
    sid = _played(mw, DAILY, _at(2027, 5, 3, 8))
    driver, _ = _driver(mw)
    driver.until(_at(2027, 5, 3, 10))
    _control(mw, sid, "pause")
    mw.clock.set(_at(2027, 5, 6, 12))
    driver.once()  # (paused: nothing is decided)
    assert len(_rows(mw, sid)) == 1
    _control(mw, sid, "play")
    rows = _rows(mw, sid)
    assert _said(rows)[1:] == [
        ("2027-05-04T09:00:00", "skipped", "paused"),
        ("2027-05-05T09:00:00", "skipped", "paused"),
        ("2027-05-06T09:00:00", "skipped", "paused"),
    ]
    assert "resumes at a future slot" in rows[1]["detail"]
    driver.until(_at(2027, 5, 7, 10))
    mw.clock.set(_at(2027, 5, 8, 7))
    _control(mw, sid, "stop")
    rows = _rows(mw, sid)
    assert _said(rows)[4:] == [
        ("2027-05-07T09:00:00", "launched", None),
        ("2027-05-08T09:00:00", "skipped", "stopped"),
    ]


def test_the_quota_and_the_end_bound_skip_the_slot_that_ends_the_schedule(
    mw: MissionWorld,
) -> None:
    quota = _played(mw, DAILY, _at(2027, 5, 3, 8), end={"maxPassages": 2})
    until = create(
        mw,
        DAILY,
        "create-00002",
        end={"until": {"local": "2027-05-04T12:00:00", "zone": "Europe/Berlin"}},
    )
    play(mw, until)
    driver, _ = _driver(mw)
    driver.until(_at(2027, 5, 6, 10))
    assert _said(_rows(mw, quota)) == [
        ("2027-05-03T09:00:00", "launched", None),
        ("2027-05-04T09:00:00", "launched", None),
        ("2027-05-05T09:00:00", "skipped", "quota"),
    ]
    assert _rows(mw, quota)[-1]["detail"] == "the quota of 2 passage(s) is used"
    assert _said(_rows(mw, until)) == [
        ("2027-05-03T09:00:00", "launched", None),
        ("2027-05-04T09:00:00", "launched", None),
        ("2027-05-05T09:00:00", "skipped", "end-bound"),
    ]


def test_dst_gaps_are_skipped_or_shifted_by_the_gap_policy(mw: MissionWorld) -> None:
    start = _at(2027, 3, 13, 0, zone=NEW_YORK)
    skip = _played(
        mw, {"kind": "daily", "time": "02:30", "zone": "America/New_York", "gap": "skip"}, start
    )
    shift = create(
        mw, {"kind": "daily", "time": "02:30", "zone": "America/New_York"}, "create-00002"
    )
    play(mw, shift)
    driver, _ = _driver(mw)
    driver.until(_at(2027, 3, 15, 3, zone=NEW_YORK))
    assert _said(_rows(mw, skip)) == [
        ("2027-03-13T02:30:00", "launched", None),
        ("2027-03-14T02:30:00", "skipped", "dst-gap"),
        ("2027-03-15T02:30:00", "launched", None),
    ]
    gap = _rows(mw, skip)[1]
    assert gap["slot_key"] == "missing:2027-03-14T02:30:00@America/New_York"
    assert gap["slot_at"] == datetime(2027, 3, 14, 7, tzinfo=UTC)
    shifted = _rows(mw, shift)
    assert _said(shifted)[1] == ("2027-03-14T03:00:00", "launched", "dst-shifted")
    assert shifted[1]["note"] == "shifted"


def test_a_month_without_the_day_gets_a_day_missing_row(mw: MissionWorld) -> None:
    policy = {"kind": "monthly", "day": 31, "time": "09:00", "zone": "Europe/Berlin"}
    sid = _played(mw, policy, _at(2027, 1, 30, 12))
    driver, _ = _driver(mw)
    for at in (_at(2027, 1, 31, 9), _at(2027, 3, 31, 9), _at(2027, 5, 31, 9)):
        mw.clock.set(at)
        driver.once()
        mw.clock.set(at + timedelta(seconds=30))
        driver.once()
    assert _said(_rows(mw, sid)) == [
        ("2027-01-31T09:00:00", "launched", None),
        ("2027-02-31T09:00:00", "skipped", "day-missing"),
        ("2027-03-31T09:00:00", "launched", None),
        ("2027-04-31T09:00:00", "skipped", "day-missing"),
        ("2027-05-31T09:00:00", "launched", None),
    ]


def test_a_long_outage_writes_at_most_a_thousand_rows_and_one_summary(
    mw: MissionWorld,
) -> None:
    policy = {"kind": "every", "minutes": 15}
    start = datetime(2027, 5, 3, 8, tzinfo=UTC)
    sid = _played(mw, policy, start)
    driver, _ = _driver(mw)
    # Twenty days without a scheduler: 1,920 slots of fifteen minutes.
    mw.clock.set(start + timedelta(days=20, minutes=1))
    driver.once()
    rows = _rows(mw, sid)
    summary, *kept, launched = rows
    assert len(kept) == MAX_PASSED_ROWS
    assert launched["outcome"] == "launched"
    assert launched["slot_at"] == start + timedelta(days=20)
    missed = 20 * 96 - 1  # every slot after Play but the last, which launched
    assert summary["slots"] == missed - MAX_PASSED_ROWS
    assert summary["slot_key"].startswith("summary:")
    assert summary["slot_at"] == start + timedelta(minutes=15)
    assert summary["through_at"] == kept[0]["slot_at"] - timedelta(minutes=15)
    assert summary["outcome"] == "coalesced" and summary["reason"] == "no-scheduler"
    assert all(r["outcome"] == "coalesced" for r in kept)


def test_every_nominal_slot_of_a_dst_year_has_exactly_one_row(mw: MissionWorld) -> None:
    """A year of a daily 02:30 New York schedule (gap policy skip) with outages: the rows
    are exactly the rule's slots and the nominal slots it does not produce."""
    policy = {"kind": "daily", "time": "02:30", "zone": "America/New_York", "gap": "skip"}
    start = datetime(2027, 1, 1, tzinfo=UTC)
    sid = _played(mw, policy, start)
    driver, _ = _driver(mw)
    at = start
    while at < datetime(2028, 1, 1, tzinfo=UTC):
        at += timedelta(days=3) if at.day % 9 else timedelta(days=5)
        mw.clock.set(at)
        driver.once()
        mw.clock.set(at + timedelta(seconds=30))
        driver.once()
    body = stored_body(mw.store, sid)
    assert body.high_water is not None
    rule = parse_rule(policy)
    slots = slots_between(rule, start, body.high_water + timedelta(seconds=1), origin=start)
    missing = missing_slots(rule, start, body.high_water, origin=start)
    expected = {s.at for s in slots} | {m.at for m in missing}
    rows = _rows(mw, sid)
    assert len(rows) == len(slots) + len(missing) == len(expected)
    assert {r["slot_at"] for r in rows} == expected
    assert sorted(r["local"] for r in rows if r["reason"] == "dst-gap") == ["2027-03-14T02:30:00"]
    launched = [r for r in rows if r["outcome"] == "launched"]
    assert len(launched) == body.admitted


def _insert(mw: MissionWorld, sid: UUID, first: datetime, count: int) -> None:
    rows = [
        {
            "schedule_id": sid,
            "slot_key": f"{first + timedelta(hours=i):%Y-%m-%dT%H:%M:%SZ}",
            "slot_at": first + timedelta(hours=i),
            "local": f"{first + timedelta(hours=i):%Y-%m-%dT%H:%M:%S}",
            "zone": "UTC",
            "outcome": "launched",
            "slots": 1,
            "decided_at": first + timedelta(hours=i),
        }
        for i in range(count)
    ]
    mw.store.run(lambda conn: conn.execute(insert(slot_ledger), rows))


def test_retention_keeps_the_last_thousand_rows_or_ninety_days_whichever_is_more(
    mw: MissionWorld,
) -> None:
    now = mw.clock.now()
    old = create(mw, DAILY, "create-00001")
    recent = create(mw, DAILY, "create-00002")
    _insert(mw, old, now - RETAIN_AGE - timedelta(days=200), 1_500)
    _insert(mw, recent, now - timedelta(days=80), 1_500)
    deleted = mw.store.run(lambda conn: trim(conn, now))
    assert deleted == 1_500 - RETAIN_ROWS
    kept = _rows(mw, old)
    assert len(kept) == RETAIN_ROWS
    assert kept[0]["slot_at"] == now - RETAIN_AGE - timedelta(days=200) + timedelta(hours=500)
    assert len(_rows(mw, recent)) == 1_500
    # Later, the recent schedule's rows age too: the newest thousand stay.
    later = now + timedelta(days=200)
    assert mw.store.run(lambda conn: trim(conn, later)) == 500
    assert len(_rows(mw, recent)) == RETAIN_ROWS
    assert mw.store.run(lambda conn: trim(conn, later)) == 0


def test_a_condition_that_does_not_hold_skips_its_slot(mw: MissionWorld) -> None:
    mw.clock.set(_at(2027, 5, 3, 8))
    once = create(mw, {"kind": "immediate"}, "create-00001")
    sid = create(
        mw, DAILY, "create-00002", condition={"kind": "mission-completed", "missionId": str(once)}
    )
    play(mw, sid)
    driver, runtime = _driver(mw)
    driver.until(_at(2027, 5, 4, 10))
    rows = _rows(mw, sid)
    assert _said(rows) == [
        ("2027-05-03T09:00:00", "skipped", "condition-false"),
        ("2027-05-04T09:00:00", "skipped", "condition-false"),
    ]
    assert all(r["detail"] == "the source is as at its baseline" for r in rows)
    assert runtime.sessions() == []


def test_a_one_time_slot_is_recorded_at_its_own_wall_time(mw: MissionWorld) -> None:
    at = {"kind": "at", "local": "2027-05-04T09:00:00", "zone": "Europe/Berlin"}
    sid = _played(mw, at, _at(2027, 5, 3, 8))
    driver, _ = _driver(mw)
    driver.until(_at(2027, 5, 4, 10))
    assert [(r["local"], r["zone"], r["outcome"]) for r in _rows(mw, sid)] == [
        ("2027-05-04T09:00:00", "Europe/Berlin", "launched")
    ]


def test_a_quota_used_before_a_dst_gap_keeps_the_gap_s_row(mw: MissionWorld) -> None:
    policy = {"kind": "daily", "time": "02:30", "zone": "America/New_York", "gap": "skip"}
    sid = _played(mw, policy, _at(2027, 3, 12, 12, zone=NEW_YORK), end={"maxPassages": 1})
    driver, _ = _driver(mw)
    driver.until(_at(2027, 3, 13, 3, zone=NEW_YORK))
    assert _said(_rows(mw, sid)) == [
        ("2027-03-13T02:30:00", "launched", None),
        ("2027-03-14T02:30:00", "skipped", "dst-gap"),
        ("2027-03-15T02:30:00", "skipped", "quota"),
    ]
