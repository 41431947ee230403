"""``insert_missing``: the rows whose key is free go in as SQLAlchemy would write them, a
taken key leaves its row alone; a few rows or many (on PostgreSQL many are bound as one
array a column), on both databases."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest
from sqlalchemy import event, insert, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DataError, IntegrityError

from kalends.storage.ledger_tables import slot_ledger
from kalends.storage.testing import nothing_written
from kalends.storage.unit_of_work import Store
from kalends.storage.upsert import UNNEST_ROWS, insert_missing

KEY = ("schedule_id", "slot_key")
# Text an array literal must quote or escape, and text that reads like its NULL.
AWKWARD = ['a "quoted", {braced} \\ text', "NULL", "", "ünïcode 😀", "line\nbreak"]


def _rows(store: Store, schedule: UUID, count: int, note: str = "new") -> list[dict[str, Any]]:
    now = store.clock.now()
    return [
        {
            "schedule_id": schedule,
            "slot_key": f"2026-12-07T09:{i:02d}:00Z",
            "slot_at": now + timedelta(minutes=i),
            "local": f"2026-12-07T10:{i:02d}",
            "zone": "Europe/Berlin",
            "outcome": "skipped" if i % 2 else "launched",
            "reason": "paused" if i % 2 else None,
            "note": note,
            "passage_id": None if i % 2 else f"psg_{i}",
            "detail": AWKWARD[i % len(AWKWARD)],
            "slots": i + 1,
            "through_at": None if i % 3 else now,
            "other_at": now - timedelta(days=i) if i % 4 == 0 else None,
            "decided_at": now,
        }
        for i in range(count)
    ]


def _stored(store: Store, schedule: UUID) -> list[dict[str, Any]]:
    def read(conn: Connection) -> list[dict[str, Any]]:
        found = conn.execute(
            select(slot_ledger)
            .where(slot_ledger.c.schedule_id == schedule)
            .order_by(slot_ledger.c.slot_key)
        )
        return [dict(row._mapping) for row in found]

    return store.run(read, write=False)


@pytest.mark.parametrize("count", [1, UNNEST_ROWS - 1, UNNEST_ROWS, 300])
def test_the_rows_are_those_sqlalchemy_writes(store: Store, count: int) -> None:
    ours, theirs = uuid4(), uuid4()
    store.run(lambda conn: insert_missing(conn, slot_ledger, _rows(store, ours, count), KEY))
    store.run(lambda conn: conn.execute(insert(slot_ledger), _rows(store, theirs, count)))
    mine = _stored(store, ours)
    assert len(mine) == count
    assert [{**r, "schedule_id": theirs} for r in mine] == _stored(store, theirs)


@pytest.mark.parametrize("count", [UNNEST_ROWS - 1, 40])
def test_a_taken_key_keeps_its_row_and_the_others_go_in(store: Store, count: int) -> None:
    schedule = uuid4()
    first = _rows(store, schedule, count, note="first")[::2]
    store.run(lambda conn: insert_missing(conn, slot_ledger, first, KEY))
    again = _rows(store, schedule, count, note="again")
    store.run(lambda conn: insert_missing(conn, slot_ledger, [*again, *again[:3]], KEY))
    notes = {r["slot_key"]: r["note"] for r in _stored(store, schedule)}
    assert len(notes) == count
    assert {k for k, n in notes.items() if n == "first"} == {r["slot_key"] for r in first}
    assert all(n == "again" for k, n in notes.items() if k not in {r["slot_key"] for r in first})


def test_a_refused_row_refuses_the_whole_call_and_nothing_stays(store: Store) -> None:
    rows = _rows(store, uuid4(), 20)
    rows[13] = {**rows[13], "slots": 0}  # the ledger's check: at least one slot
    with nothing_written(store), pytest.raises(IntegrityError):
        store.run(lambda conn: insert_missing(conn, slot_ledger, rows, KEY))


def test_many_rows_are_one_statement(store: Store) -> None:
    seen: list[str] = []

    def watch(*args: Any) -> None:
        if "slot_ledger" in str(args[2]):
            seen.append(str(args[2]))

    event.listen(store.engine, "before_cursor_execute", watch)
    try:
        store.run(lambda conn: insert_missing(conn, slot_ledger, _rows(store, uuid4(), 50), KEY))
    finally:
        event.remove(store.engine, "before_cursor_execute", watch)
    assert len(seen) == 1
    assert ("unnest" in seen[0]) == (store.engine.dialect.name == "postgresql")


@pytest.mark.parametrize("count", [UNNEST_ROWS - 1, 20])
def test_an_overlong_text_is_refused_as_the_column_refuses_it(store: Store, count: int) -> None:
    """Bound one by one or as arrays, a value longer than its column holds is refused on
    PostgreSQL (an array cast to the column's ``VARCHAR(n)`` would cut it short); SQLite
    keeps any length either way."""
    rows = _rows(store, uuid4(), count)
    rows[-1] = {**rows[-1], "note": "n" * 17}  # note: at most 16 characters
    if store.engine.dialect.name != "postgresql":
        store.run(lambda conn: insert_missing(conn, slot_ledger, rows, KEY))
        assert _stored(store, rows[0]["schedule_id"])[-1]["note"] == "n" * 17
        return
    with nothing_written(store), pytest.raises(DataError):
        store.run(lambda conn: insert_missing(conn, slot_ledger, rows, KEY))
