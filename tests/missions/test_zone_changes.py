"""New zone data moves slots (issue 24 §3), in-process on the fake clock, on every backend.

This process has one set of zone data, so "the zone data a wake was recorded with" is
made by writing the wake as a scheduler on other data would have left it: another
version, and the next slot's instant as those rules put it (an hour later: New York's
daylight saving time starting two weeks later, as the integration test compiles).
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import select, update

from kalends.civil.zone_data import zone_data_version
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import Scheduler
from kalends.missions.zone_changes import recompute_changed
from kalends.storage.ledger_tables import slot_ledger
from kalends.storage.mission_tables import schedule_wakes
from missions.conftest import MissionWorld
from missions.scheduler_support import Driver, create, play
from missions.surgery import control, write_columns

NEW_YORK = {"kind": "daily", "time": "12:00", "zone": "America/New_York"}
BERLIN = {"kind": "daily", "time": "09:00", "zone": "Europe/Berlin"}
# Monday 2027-03-15 18:00 UTC: New York keeps daylight saving time since the day before.
START = datetime(2027, 3, 15, 18, 0, tzinfo=UTC)
SLOT = datetime(2027, 3, 16, 16, 0, tzinfo=UTC)  # Tuesday 12:00 EDT
OLD_SLOT = SLOT + timedelta(hours=1)  # 12:00 EST, as rules without DST until Mar 28 say
OLD, NEW = "2024a-aaaaaaaa", "2099z-bbbbbbbb"
HOUR = timedelta(hours=1)


def wake(mw: MissionWorld, sid: UUID) -> Any:
    w = schedule_wakes.c
    return mw.store.run(
        lambda conn: conn.execute(
            select(w.due_at, w.next_slot_at, w.zone_data, w.owner).where(w.schedule_id == sid)
        ).first(),
        write=False,
    )


def ledger(mw: MissionWorld, sid: UUID | None = None, outcome: str = "moved") -> list[Any]:
    """The slot ledger's rows of ``outcome`` (of ``sid``, else of every schedule)."""
    stmt = (
        select(slot_ledger)
        .where(slot_ledger.c.outcome == outcome)
        .order_by(slot_ledger.c.slot_at, slot_ledger.c.slot_key)
    )
    if sid is not None:
        stmt = stmt.where(slot_ledger.c.schedule_id == sid)
    return list(mw.store.run(lambda conn: conn.execute(stmt).all(), write=False))


def recorded_under(mw: MissionWorld, sid: UUID, version: str, slot: datetime | None) -> None:
    """The wake as a scheduler on zone data ``version`` would have left it."""
    w = schedule_wakes.c
    values: dict[str, Any] = {"zone_data": version}
    if slot is not None:
        values["next_slot_at"] = slot
    mw.store.run(
        lambda conn: conn.execute(
            update(schedule_wakes).where(w.schedule_id == sid).values(**values)
        )
    )


def scheduler(mw: MissionWorld, owner: str) -> Scheduler:
    return Scheduler(mw.store, MemoryRuntime(clock=mw.clock, instant=True), owner=owner)


class Schedules:
    """Four schedules looked at once (each wake recorded with its next slot), then a
    restart: ``moving`` (New York, its slot an hour off under the old data), ``steady``
    (Berlin, the same slot), ``paused`` and ``stopped`` (New York, their slots off too,
    their wakes armed by the control and not looked at since)."""

    def __init__(self, mw: MissionWorld) -> None:
        mw.clock.set(START)
        self.mw = mw
        self.moving = create(mw, NEW_YORK, "create-0001", title="moving")
        self.steady = create(mw, BERLIN, "create-0002", title="steady")
        self.paused = create(mw, NEW_YORK, "create-0003", title="paused")
        self.stopped = create(mw, NEW_YORK, "create-0004", title="stopped")
        for sid in self.all:
            play(mw, sid)
        first = scheduler(mw, "first")
        assert first.run_once().looked == 4
        for sid in self.all:
            assert wake(mw, sid).zone_data == zone_data_version()
        assert wake(mw, self.moving).next_slot_at == SLOT
        self.steady_slot = wake(mw, self.steady).next_slot_at
        assert self.steady_slot == datetime(2027, 3, 16, 8, 0, tzinfo=UTC)
        control(mw, self.paused, "pause", "pause-0001")
        control(mw, self.stopped, "stop", "stop-0001")
        first.release()  # (stopped gracefully)
        for sid in (self.moving, self.paused, self.stopped):
            recorded_under(mw, sid, OLD, OLD_SLOT)
        recorded_under(mw, self.steady, OLD, None)
        self.steady_due = wake(mw, self.steady).due_at

    def recorded_here(self) -> None:
        """Every wake as recorded on this process's zone data (no restart to come)."""
        recorded_under(self.mw, self.moving, zone_data_version(), SLOT)
        for sid in (self.steady, self.paused, self.stopped):
            recorded_under(self.mw, sid, zone_data_version(), None)

    @property
    def all(self) -> tuple[UUID, ...]:
        return (self.moving, self.steady, self.paused, self.stopped)


@pytest.fixture
def four(mw: MissionWorld) -> Schedules:
    return Schedules(mw)


class TestRecompute:
    def test_a_moved_slot_is_recorded_and_its_wake_made_due(
        self, mw: MissionWorld, four: Schedules
    ) -> None:
        mw.clock.advance(timedelta(minutes=5))
        now = mw.clock.now()
        assert recompute_changed(mw.store, now, NEW) == 1

        (row,) = ledger(mw)
        assert row.schedule_id == four.moving
        assert (row.slot_key, row.slot_at, row.other_at) == (
            "moved:2027-03-16T16:00:00Z", SLOT, OLD_SLOT,
        )  # fmt: skip
        assert (row.outcome, row.reason, row.local, row.zone, row.slots) == (
            "moved", "zone-rules-changed", "2027-03-16T12:00:00", "America/New_York", 1,
        )  # fmt: skip
        assert row.detail == (
            "new zone rules (2024a → 2099z) moved this slot from 2027-03-16 13:00 to "
            "2027-03-16 12:00 America/New_York time "
            "(from 2027-03-16T17:00:00Z to 2027-03-16T16:00:00Z)"
        )
        assert row.decided_at == now
        moved = wake(mw, four.moving)
        assert (moved.due_at, moved.next_slot_at, moved.zone_data) == (now, SLOT, NEW)

    def test_an_unchanged_slot_only_takes_the_new_version(
        self, mw: MissionWorld, four: Schedules
    ) -> None:
        recompute_changed(mw.store, mw.clock.now(), NEW)
        steady = wake(mw, four.steady)
        assert (steady.due_at, steady.next_slot_at, steady.zone_data) == (
            four.steady_due, four.steady_slot, NEW,
        )  # fmt: skip
        assert ledger(mw, four.steady) == []

    def test_paused_and_stopped_schedules_are_left_alone(
        self, mw: MissionWorld, four: Schedules
    ) -> None:
        before = {sid: wake(mw, sid) for sid in (four.paused, four.stopped)}
        recompute_changed(mw.store, mw.clock.now(), NEW)
        for sid, was in before.items():
            assert wake(mw, sid) == was
            assert was.zone_data == OLD
            assert ledger(mw, sid) == []

    def test_twice_writes_nothing_more(self, mw: MissionWorld, four: Schedules) -> None:
        now = mw.clock.now()
        assert recompute_changed(mw.store, now, NEW) == 1
        rows = ledger(mw)
        wakes = {sid: wake(mw, sid) for sid in four.all}
        mw.clock.advance(HOUR)
        assert recompute_changed(mw.store, mw.clock.now(), NEW) == 0
        assert ledger(mw) == rows
        assert {sid: wake(mw, sid) for sid in four.all} == wakes

    def test_two_schedulers_starting_at_once_record_the_move_once(
        self, mw: MissionWorld, four: Schedules
    ) -> None:
        both = threading.Barrier(2)
        counts: list[int] = []

        def start() -> None:
            both.wait()
            counts.append(recompute_changed(mw.store, mw.clock.now(), NEW))

        threads = [threading.Thread(target=start) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert sorted(counts) == [0, 1]
        assert len(ledger(mw)) == 1
        assert wake(mw, four.moving).zone_data == NEW

    def test_the_next_look_launches_at_the_new_instant(
        self, mw: MissionWorld, four: Schedules
    ) -> None:
        assert recompute_changed(mw.store, mw.clock.now(), NEW) == 1
        driver = Driver(mw, scheduler(mw, "second"))
        driver.until(SLOT + timedelta(minutes=30))
        assert driver.slots(four.moving) == [SLOT]
        launched = ledger(mw, four.moving, "launched")
        assert [(r.slot_key, r.slot_at) for r in launched] == [("2027-03-16T16:00:00Z", SLOT)]
        after = wake(mw, four.moving)
        assert after.next_slot_at == SLOT + timedelta(days=1)
        assert after.zone_data == zone_data_version()

    def test_a_wake_a_live_scheduler_holds_is_its_own(
        self, mw: MissionWorld, four: Schedules
    ) -> None:
        four.recorded_here()
        holder = scheduler(mw, "holder")
        holder.run_once()  # (it claims every wake, and starts on this process's data)
        recorded_under(mw, four.moving, OLD, OLD_SLOT)
        assert wake(mw, four.moving).owner == "holder"
        assert recompute_changed(mw.store, mw.clock.now(), NEW) == 0
        assert wake(mw, four.moving).zone_data == OLD
        assert ledger(mw, four.moving) == []


class TestScheduler:
    def test_a_scheduler_starting_on_other_zone_data_moves_the_slot(
        self, mw: MissionWorld, four: Schedules
    ) -> None:
        now = mw.clock.now()
        Driver(mw, scheduler(mw, "restarted")).once()
        (row,) = ledger(mw)
        assert (row.schedule_id, row.slot_at, row.other_at) == (four.moving, SLOT, OLD_SLOT)
        assert row.detail.startswith(f"new zone rules ({OLD.split('-', maxsplit=1)[0]} → ")
        assert wake(mw, four.moving).next_slot_at == SLOT
        assert wake(mw, four.steady).zone_data == zone_data_version()

        detail = mw.schedules.detail(mw.carol.id, four.moving)
        assert detail["zoneChanges"] == [
            {
                "slot": "2027-03-16T16:00:00Z",
                "local": "2027-03-16T12:00:00",
                "zone": "America/New_York",
                "otherAt": "2027-03-16T17:00:00Z",
                "detail": row.detail,
            }
        ]
        assert "zoneChanges" not in mw.schedules.detail(mw.carol.id, four.steady)
        assert row.decided_at == now

        again = scheduler(mw, "third")
        again.run_once()
        assert ledger(mw) == [row]

    def test_an_heir_recomputes_the_wakes_it_takes_over(
        self, mw: MissionWorld, four: Schedules
    ) -> None:
        four.recorded_here()
        dead = scheduler(mw, "dead")
        dead.run_once()  # holds every wake, then dies without releasing them
        recorded_under(mw, four.moving, OLD, OLD_SLOT)
        heir = scheduler(mw, "heir")
        heir.run_once()  # its start: the dead one's lease still runs
        assert ledger(mw, four.moving) == []
        mw.clock.advance(timedelta(minutes=2))  # the lease ran out
        heir.run_once()
        (row,) = ledger(mw, four.moving)
        assert (row.outcome, row.slot_at, row.other_at) == ("moved", SLOT, OLD_SLOT)
        assert wake(mw, four.moving).owner == "heir"


class TestBadInput:
    def test_a_document_that_does_not_parse_is_passed_over(
        self, mw: MissionWorld, four: Schedules
    ) -> None:
        write_columns(mw, four.steady, body="{not json")
        assert recompute_changed(mw.store, mw.clock.now(), NEW) == 1
        assert wake(mw, four.steady).zone_data == OLD
        assert wake(mw, four.moving).zone_data == NEW

    def test_a_version_without_a_recorded_slot_rechecks_without_a_row(
        self, mw: MissionWorld, four: Schedules
    ) -> None:
        w = schedule_wakes.c
        mw.store.run(
            lambda conn: conn.execute(
                update(schedule_wakes).where(w.schedule_id == four.moving).values(next_slot_at=None)
            )
        )
        now = mw.clock.now()
        assert recompute_changed(mw.store, now, NEW) == 0
        assert ledger(mw) == []
        found = wake(mw, four.moving)
        assert (found.due_at, found.next_slot_at, found.zone_data) == (now, SLOT, NEW)

    def test_no_wakes_named_is_nothing_to_do(self, mw: MissionWorld, four: Schedules) -> None:
        assert recompute_changed(mw.store, mw.clock.now(), NEW, only=[]) == 0
        assert wake(mw, four.moving).zone_data == OLD
