"""A wake taken over from a dead scheduler: due now at the latest, and its pending fallback
started afresh (the heir's first look after 30 s, never the dead one's later step)."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

import pytest
from sqlalchemy import event, insert, select, update

from kalends.missions.leases import WakeLeases
from kalends.missions.runtime.memory import MemoryRuntime
from kalends.missions.scheduler import Scheduler
from kalends.missions.wakes import WAKE_LEASE
from kalends.storage.mission_tables import schedule_wakes as W
from kalends.storage.mission_tables import scheduler_leases as L

from .conftest import MissionWorld, daily_config


def _a_wake_held_by_a_dead_scheduler(mw: MissionWorld, *, due_in: timedelta) -> UUID:
    """A played schedule whose wake a scheduler held, at its third pending fallback, and
    whose lease ran out a second ago."""
    receipt = mw.schedules.create(
        "alice", str(mw.home.id), daily_config(), request_id="create-0001"
    )
    assert receipt.mission_id is not None
    sid = receipt.mission_id
    mw.schedules.control("alice", str(sid), "play", request_id="play-0001", expected_revision=1)
    now = mw.clock.now()
    with mw.store.transaction() as conn:
        conn.execute(
            update(W)
            .where(W.c.schedule_id == sid)
            .values(
                owner="dead-scheduler",
                lease_token="t" * 32,
                due_at=now + due_in,
                polls=3,
            )
        )
        conn.execute(
            insert(L).values(
                token="t" * 32, owner="dead-scheduler", expires_at=now - timedelta(seconds=1)
            )
        )
    return UUID(str(sid))


def _wake(mw: MissionWorld, sid: UUID) -> tuple[object, ...]:
    with mw.store.transaction(write=False) as conn:
        row = conn.execute(
            select(W.c.owner, W.c.due_at, W.c.polls).where(W.c.schedule_id == sid)
        ).one()
    return tuple(row)


@pytest.mark.parametrize(
    ("due_in", "due_after"),
    [
        # Overdue when taken over (a dead node's 30 s look fell inside its lease): it
        # stays due, and its fallback starts again.
        (timedelta(seconds=-30), timedelta(seconds=-30)),
        # Due later (the dead one's 5 min step): due now.
        (timedelta(minutes=4), timedelta(0)),
    ],
)
def test_a_taken_over_wake_is_due_now_at_the_latest_with_its_fallback_afresh(
    mw: MissionWorld, due_in: timedelta, due_after: timedelta
) -> None:
    sid = _a_wake_held_by_a_dead_scheduler(mw, due_in=due_in)
    now = mw.clock.now()
    heir = WakeLeases(mw.store, "heir", "h" * 32, WAKE_LEASE)
    taken = heir.claim(now, 10)
    assert [(c.schedule_id, c.takeover) for c in taken] == [(sid, True)]
    assert _wake(mw, sid) == ("heir", now + due_after, 0)


def test_a_wake_still_leased_is_not_taken_and_keeps_its_fallback(mw: MissionWorld) -> None:
    sid = _a_wake_held_by_a_dead_scheduler(mw, due_in=timedelta(seconds=-30))
    now = mw.clock.now()
    with mw.store.transaction() as conn:
        conn.execute(
            update(L).where(L.c.token == "t" * 32).values(expires_at=now + timedelta(seconds=20))
        )
    assert WakeLeases(mw.store, "heir", "h" * 32, WAKE_LEASE).claim(now, 10) == []
    assert _wake(mw, sid) == ("dead-scheduler", now - timedelta(seconds=30), 3)


def _statements_of_a_takeover_round(mw: MissionWorld, count: int, first: int) -> int:
    """The statements a fresh scheduler's first round runs taking over ``count`` wakes
    of played daily schedules (each due later in its dead holder's fallback)."""
    sids = []
    for i in range(first, first + count):
        receipt = mw.schedules.create(
            "alice", str(mw.home.id), daily_config(title=f"Report {i}"), request_id=f"create-{i:04}"
        )
        assert receipt.mission_id is not None
        mw.schedules.control(
            "alice", str(receipt.mission_id), "play", request_id=f"play-{i:04}", expected_revision=1
        )
        sids.append(receipt.mission_id)
    now = mw.clock.now()
    token = f"{first:032}"
    with mw.store.transaction() as conn:
        conn.execute(
            update(W)
            .where(W.c.schedule_id.in_(sids))
            .values(owner="dead", lease_token=token, due_at=now + timedelta(minutes=4))
        )
        conn.execute(insert(L).values(token=token, owner="dead", expires_at=now))
    statements: list[str] = []

    def seen(*args: object) -> None:
        statements.append(str(args[2]))

    heir = Scheduler(mw.store, MemoryRuntime(clock=mw.clock), owner=f"heir-{first}")
    event.listen(mw.store.engine, "before_cursor_execute", seen)
    try:
        result = heir.run_once()
    finally:
        event.remove(mw.store.engine, "before_cursor_execute", seen)
    assert (result.claimed, result.errors) == (count, 0)
    with mw.store.transaction(write=False) as conn:
        owners = conn.execute(select(W.c.owner).where(W.c.schedule_id.in_(sids))).scalars()
        assert set(owners) == {f"heir-{first}"}
    return len(statements)


def test_a_round_reads_the_schedules_it_takes_over_together(mw: MissionWorld) -> None:
    """Taking over 12 wakes runs as many statements as taking over 2 (each taken wake
    read its own schedule before: after a SIGKILL mid-burst the survivor took the dead
    one's wakes at a third of its rate)."""
    few = _statements_of_a_takeover_round(mw, 2, 0)
    mw.clock.advance(timedelta(seconds=1))
    many = _statements_of_a_takeover_round(mw, 12, 100)
    assert many == few
