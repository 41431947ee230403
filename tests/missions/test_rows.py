"""The repository's reads: each becomes its typed row with every field the column of its
name (the rows are built by position); on both backends."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import select

from kalends.missions import repository
from kalends.missions.leases import held_wakes
from kalends.missions.rows import ControlRecord, ScheduleRead, ScheduleRow
from kalends.storage.mission_tables import schedule_controls, schedule_wakes, schedules
from missions.conftest import MissionWorld
from missions.surgery import control, create


def _stored(mw: MissionWorld, sid: UUID) -> tuple[dict[str, Any], dict[str, Any]]:
    """The schedule's columns and its wake's, read by name."""

    def run(conn: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        row = conn.execute(select(schedules).where(schedules.c.id == sid)).one()
        wake = conn.execute(held_wakes().where(schedule_wakes.c.schedule_id == sid)).first()
        wake_columns = {
            "wake_owner": None if wake is None else wake.owner,
            "wake_lease": None if wake is None else wake.lease_expires_at,
            "last_error_code": None if wake is None else wake.last_error_code,
            "last_error_at": None if wake is None else wake.last_error_at,
            "last_error_message": None if wake is None else wake.last_error_message,
        }
        return dict(row._mapping), wake_columns

    return mw.store.run(run, write=False)


def _as_read(columns: dict[str, Any], wake: dict[str, Any], role: str | None) -> ScheduleRead:
    return ScheduleRead(**columns, **wake, role=role)


def test_every_read_of_a_schedule_gives_each_field_its_own_column(mw: MissionWorld) -> None:
    sid = create(mw)
    control(mw, sid, "play", "play-0001")
    columns, wake = _stored(mw, sid)

    def run(conn: Any) -> None:
        read = repository.read_schedule(conn, mw.carol.id, sid)
        assert read == _as_read(columns, wake, "viewer")
        assert repository.read_schedule(conn, mw.dave.id, sid) == _as_read(columns, wake, None)
        assert repository.read_page(conn, mw.home.id, None, 8) == [_as_read(columns, wake, None)]
        assert repository.read_receipt(conn, mw.home.id, "create-0001") == ScheduleRow(**columns)

    mw.store.run(run, write=False)


def test_a_controls_first_read_gives_the_schedule_its_record_and_the_count(
    mw: MissionWorld,
) -> None:
    sid = create(mw)
    control(mw, sid, "play", "play-0001")
    control(mw, sid, "pause", "pause-0001")
    columns, wake = _stored(mw, sid)

    def run(conn: Any) -> None:
        stored = conn.execute(
            select(schedule_controls).where(schedule_controls.c.request_id == "play-0001")
        ).one()
        record = ControlRecord(**stored._mapping)
        assert repository.control_record(conn, sid, "play-0001") == record
        read = repository.read_for_control(conn, mw.bob.id, sid, "play-0001")
        assert read is not None
        assert read.schedule == _as_read(columns, wake, "editor")
        assert (read.repeat, read.control_count) == (record, 2)
        fresh = repository.read_for_control(conn, mw.bob.id, sid, "resume-0001")
        assert fresh is not None
        assert (fresh.repeat, fresh.control_count) == (None, 2)

    mw.store.run(run, write=False)
