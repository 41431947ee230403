"""How instants are stored: aware UTC in and out, in time order on both backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import insert, select

from kalends.errors import InvalidInput
from kalends.storage.schema import leases
from kalends.storage.unit_of_work import Store

PARIS_WINTER = timezone(timedelta(hours=1))


def put_lease(store: Store, name: str, expires_at: datetime) -> None:
    with store.transaction() as conn:
        conn.execute(
            insert(leases).values(
                name=name,
                owner="o",
                token=f"token-{name}",
                acquired_at=expires_at - timedelta(seconds=1),
                expires_at=expires_at,
            )
        )


class TestInstants:
    def test_an_aware_instant_comes_back_as_the_same_instant_in_utc(self, store: Store) -> None:
        local = datetime(2025, 3, 30, 2, 30, 15, 123456, tzinfo=PARIS_WINTER)
        put_lease(store, "a", local)
        with store.transaction(write=False) as conn:
            stored = conn.execute(select(leases.c.expires_at)).scalar_one()
        assert stored == local
        assert stored.tzinfo == UTC
        assert stored.isoformat() == "2025-03-30T01:30:15.123456+00:00"

    def test_comparisons_in_sql_follow_time_order(self, store: Store) -> None:
        base = datetime(2025, 1, 1, tzinfo=UTC)
        offsets = [
            timedelta(microseconds=1),
            timedelta(seconds=9),
            timedelta(seconds=10),
            timedelta(days=400),
            timedelta(microseconds=999999),
        ]
        for n, offset in enumerate(offsets):
            put_lease(store, f"l{n}", base + offset)
        cutoff = (base + timedelta(seconds=10)).astimezone(PARIS_WINTER)
        with store.transaction(write=False) as conn:
            ordered = conn.execute(select(leases.c.name).order_by(leases.c.expires_at)).scalars()
            due = conn.execute(select(leases.c.name).where(leases.c.expires_at <= cutoff)).scalars()
            assert list(ordered) == ["l0", "l4", "l1", "l2", "l3"]
            assert sorted(due) == ["l0", "l1", "l2", "l4"]

    def test_a_naive_instant_is_refused_with_nothing_written(self, store: Store) -> None:
        with pytest.raises(InvalidInput, match="naive"):
            put_lease(store, "a", datetime(2025, 1, 1))
        with store.transaction(write=False) as conn:
            assert conn.execute(select(leases)).all() == []
