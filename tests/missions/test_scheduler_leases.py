"""A scheduler holds its wakes under one lease row (migration 0019): a renewal writes that
row and no wake, a claim that takes over a dead scheduler's wakes deletes its lease with
the last of them, a late renewal then holds nothing, a scheduler holding no wake writes
nothing, and a graceful release gives the wakes and the lease back. Migration 0019 turns
the wakes' expiries into lease rows and back."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest
from alembic import command
from sqlalchemy import String, Uuid, column, delete, select, table, update

from kalends.civil.zone_data import zone_data_version
from kalends.missions.leases import SetWake, WakeLeases, set_wakes
from kalends.missions.scheduler_rows import due_wakes
from kalends.missions.wakes import WAKE_LEASE
from kalends.storage.engine import WRITE_OPTION
from kalends.storage.migrate import alembic_config, current_revision, head_revision, upgrade
from kalends.storage.mission_tables import schedule_wakes as W
from kalends.storage.mission_tables import scheduler_leases as L
from kalends.storage.schema import UTCDateTime
from kalends.storage.testing import statements_sent
from kalends.storage.upsert import UNNEST_ROWS

from .conftest import MissionWorld, daily_config

# The wakes' columns before migration 0019, as far as the test reads them.
_W_0018 = table(
    "schedule_wakes",
    column("schedule_id", Uuid()),
    column("owner", String()),
    column("lease_token", String()),
    column("lease_expires_at", UTCDateTime()),
)


def _played(mw: MissionWorld, count: int) -> list[UUID]:
    """``count`` played schedules, each with a free wake due now."""
    ids = []
    for i in range(count):
        receipt = mw.schedules.create(
            "alice", str(mw.home.id), daily_config(title=f"s{i}"), request_id=f"create-{i:04}"
        )
        assert receipt.mission_id is not None
        mw.schedules.control(
            "alice", str(receipt.mission_id), "play", request_id=f"play-{i:04}", expected_revision=1
        )
        ids.append(UUID(str(receipt.mission_id)))
    return ids


def _wakes(mw: MissionWorld) -> list[tuple[Any, ...]]:
    rows = mw.store.run(
        lambda conn: conn.execute(select(W).order_by(W.c.schedule_id)).all(), write=False
    )
    return [tuple(r) for r in rows]


def _leases(mw: MissionWorld) -> dict[str, tuple[str, Any]]:
    rows = mw.store.run(lambda conn: conn.execute(select(L)).all(), write=False)
    return {r.token: (r.owner, r.expires_at) for r in rows}


def _mine(mw: MissionWorld, token: str) -> set[UUID]:
    now = mw.clock.now() + timedelta(days=1)  # (every held wake, due or not)
    due = mw.store.run(lambda conn: due_wakes(conn, token, now, 1000), write=False)
    return {d.schedule_id for d in due}


def test_a_renewal_writes_the_lease_row_and_no_wake(mw: MissionWorld) -> None:
    ids = _played(mw, 3)
    first = WakeLeases(mw.store, "first", "a" * 32, WAKE_LEASE)
    now = mw.clock.now()
    assert {c.schedule_id for c in first.claim(now, 10)} == set(ids)
    assert _leases(mw) == {"a" * 32: ("first", now + WAKE_LEASE)}
    wakes = _wakes(mw)

    later = mw.clock.advance(timedelta(seconds=25))
    first.renew(later)
    assert _leases(mw) == {"a" * 32: ("first", later + WAKE_LEASE)}
    assert _wakes(mw) == wakes
    # Within a third of the lease a renewal writes nothing at all.
    first.renew(later + timedelta(seconds=5))
    assert _leases(mw) == {"a" * 32: ("first", later + WAKE_LEASE)}


def test_a_takeover_takes_the_wakes_and_the_lease_goes_with_the_last_of_them(
    mw: MissionWorld,
) -> None:
    ids = _played(mw, 3)
    dead = WakeLeases(mw.store, "dead", "d" * 32, WAKE_LEASE)
    heir = WakeLeases(mw.store, "heir", "h" * 32, WAKE_LEASE)
    start = mw.clock.now()
    dead.claim(start, 10)

    # Within the lease nothing is free.
    assert heir.claim(start + WAKE_LEASE - timedelta(seconds=1), 10) == []
    assert _mine(mw, "d" * 32) == set(ids)

    # The lease ran out: two of three taken over, the lease stays for the third.
    after = start + WAKE_LEASE
    taken = heir.claim(after, 2)
    assert [c.takeover for c in taken] == [True, True]
    assert set(_leases(mw)) == {"d" * 32, "h" * 32}
    rest = heir.claim(after, 10)
    assert {c.schedule_id for c in (*taken, *rest)} == set(ids)
    assert _leases(mw) == {"h" * 32: ("heir", after + WAKE_LEASE)}

    # The dead one comes back late: holding no wake, its renewal writes nothing.
    dead.renewed_at = None
    dead.renew(after)
    assert "d" * 32 not in _leases(mw)
    assert _mine(mw, "d" * 32) == set()
    assert _mine(mw, "h" * 32) == set(ids)


def test_a_scheduler_holding_no_wake_writes_nothing_when_it_renews(mw: MissionWorld) -> None:
    idle = WakeLeases(mw.store, "idle", "i" * 32, WAKE_LEASE)
    idle.renew(mw.clock.now())
    assert _leases(mw) == {}
    # Once its last wake is gone (dropped), its renewals leave the lease as it was.
    [sid] = _played(mw, 1)
    now = mw.clock.now()
    idle.claim(now, 10)
    mw.store.run(lambda conn: conn.execute(delete(W).where(W.c.schedule_id == sid)))
    idle.renewed_at = None
    idle.renew(now + timedelta(seconds=30))
    assert _leases(mw) == {"i" * 32: ("idle", now + WAKE_LEASE)}


def test_a_renewed_lease_is_not_taken_over(mw: MissionWorld) -> None:
    _played(mw, 2)
    live = WakeLeases(mw.store, "live", "l" * 32, WAKE_LEASE)
    start = mw.clock.now()
    live.claim(start, 10)
    live.renew(start + timedelta(seconds=40))
    other = WakeLeases(mw.store, "other", "o" * 32, WAKE_LEASE)
    assert other.claim(start + WAKE_LEASE + timedelta(seconds=1), 10) == []


def test_a_release_frees_the_wakes_as_orphaned_and_deletes_the_lease(mw: MissionWorld) -> None:
    ids = _played(mw, 2)
    leaving = WakeLeases(mw.store, "leaving", "r" * 32, WAKE_LEASE)
    now = mw.clock.now()
    leaving.claim(now, 10)
    leaving.release()
    assert _leases(mw) == {}
    rows = mw.store.run(
        lambda conn: conn.execute(select(W.c.owner, W.c.lease_token, W.c.orphaned)).all(),
        write=False,
    )
    assert sorted(tuple(r) for r in rows) == [(None, None, True)] * len(ids)
    taken = WakeLeases(mw.store, "next", "n" * 32, WAKE_LEASE).claim(now, 10)
    assert all(c.takeover for c in taken) and len(taken) == len(ids)


def test_migration_0019_makes_the_wakes_expiries_lease_rows_and_back(mw: MissionWorld) -> None:
    ids = _played(mw, 3)
    holder = WakeLeases(mw.store, "holder", "k" * 32, WAKE_LEASE)
    now = mw.clock.now()
    held = {c.schedule_id for c in holder.claim(now, 2)}
    engine = mw.store.engine

    with engine.connect() as conn:
        conn.execution_options(**{WRITE_OPTION: True})
        with conn.begin():
            command.downgrade(alembic_config(conn), "0018")
    assert current_revision(engine) == "0018"
    with engine.connect() as conn:
        rows = {
            r.schedule_id: (r.owner, r.lease_token, r.lease_expires_at)
            for r in conn.execute(select(_W_0018))
        }
    assert {s for s, r in rows.items() if r[0] is not None} == held
    assert all(rows[s] == ("holder", "k" * 32, now + WAKE_LEASE) for s in held)
    assert all(rows[s] == (None, None, None) for s in set(ids) - held)

    # One of the token's wakes with a later expiry (as a lone claim wrote it): the lease
    # runs out when the last of them does.
    later = now + timedelta(seconds=90)
    with engine.begin() as conn:
        some = sorted(held)[0]
        w = _W_0018
        conn.execute(update(w).where(w.c.schedule_id == some).values(lease_expires_at=later))
    assert upgrade(engine) == head_revision()
    assert _leases(mw) == {"k" * 32: ("holder", later)}
    assert _mine(mw, "k" * 32) == held


@pytest.mark.parametrize("count", [UNNEST_ROWS - 1, UNNEST_ROWS + 3])
def test_setting_many_wakes_writes_each_within_its_fence(mw: MissionWorld, count: int) -> None:
    """Set in one statement (on PostgreSQL from UNNEST_ROWS wakes, one array a column) as
    one by one: each held wake gets its due instant, polls and next slot with the zone
    data, its lastError cleared; a wake re-armed since, or held by another scheduler, is
    left alone; a schedule set twice keeps its last setting."""
    ids = _played(mw, count + 1)
    now = mw.clock.now()
    token = "s" * 32
    held = sorted(
        c.schedule_id for c in WakeLeases(mw.store, "me", token, WAKE_LEASE).claim(now, count)
    )
    other = sorted(set(ids) - set(held))
    WakeLeases(mw.store, "other", "o" * 32, WAKE_LEASE).claim(now, 10)
    with mw.store.transaction() as conn:
        conn.execute(
            update(W).values(
                failures=2, last_error_code="E", last_error_message="m", last_error_at=now
            )
        )
        conn.execute(update(W).where(W.c.schedule_id == held[1]).values(armed=W.c.armed + 1))
    armed = dict(
        mw.store.run(
            lambda conn: conn.execute(select(W.c.schedule_id, W.c.armed)).all(), write=False
        )
    )
    before = {r[0]: r for r in _wakes(mw)}
    slot = now + timedelta(days=1)
    wakes = [
        SetWake(
            schedule_id=s, armed=armed[s] - (s == held[1]), polls=i % 3,
            due=now + timedelta(minutes=i), next_slot=None if i % 2 else slot,
        )
        for i, s in enumerate([*held, *other])
    ]  # fmt: skip
    wakes.append(SetWake(schedule_id=held[0], armed=armed[held[0]], due=now + timedelta(hours=5)))
    with statements_sent(mw.store.engine, "UPDATE schedule_wakes") as seen:
        mw.store.run(lambda conn: set_wakes(conn, token, wakes))
    assert len(seen) == 1
    many = mw.store.engine.dialect.name == "postgresql" and len(wakes) >= UNNEST_ROWS
    assert ("unnest" in seen[0]) == many
    rows = mw.store.run(
        lambda conn: {r.schedule_id: r for r in conn.execute(select(W))}, write=False
    )
    version = zone_data_version()
    for i, s in enumerate(held):
        row = rows[s]
        if s == held[1]:  # re-armed since: left alone
            assert tuple(row) == before[s]
            continue
        if s == held[0]:  # set twice: the last setting
            assert (row.due_at, row.polls, row.next_slot_at, row.zone_data) == (
                now + timedelta(hours=5), 0, None, None
            )  # fmt: skip
        else:
            assert (row.due_at, row.polls) == (now + timedelta(minutes=i), i % 3)
            assert (row.next_slot_at, row.zone_data) == ((None, None) if i % 2 else (slot, version))
        assert (row.failures, row.last_error_code, row.last_error_message, row.last_error_at) == (
            0, None, None, None
        )  # fmt: skip
    for s in other:  # held by another scheduler: left alone
        assert tuple(rows[s]) == before[s]
