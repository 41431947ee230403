"""``among``: a column equal to any of many values, the same rows on both databases; on
PostgreSQL one statement text whatever the number of values (one array bound)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID, uuid4

import pytest
from sqlalchemy import event, insert, select
from sqlalchemy.engine import Connection

from kalends.storage.among import among
from kalends.storage.identity_tables import actors
from kalends.storage.unit_of_work import Store


def _add(store: Store, count: int) -> list[tuple[UUID, str]]:
    now = store.clock.now()
    made = [(uuid4(), f"among{i:04d}") for i in range(count)]
    rows = [
        {"id": i, "handle": h, "display_name": h, "email": None, "created_at": now} for i, h in made
    ]
    store.run(lambda conn: conn.execute(insert(actors), rows))
    return made


@pytest.mark.parametrize("count", [0, 1, 3, 1_500])
def test_it_finds_exactly_the_rows_whose_ids_are_listed(store: Store, count: int) -> None:
    made = _add(store, 40)
    wanted = [i for i, _ in made[::3]][:count] + [uuid4() for _ in range(count)]

    def read(conn: Connection) -> set[str]:
        found = conn.execute(select(actors.c.handle).where(among(conn, actors.c.id, wanted)))
        return set(found.scalars())

    assert store.run(read, write=False) == {h for i, h in made if i in set(wanted)}


def test_it_matches_text_columns(store: Store) -> None:
    made = _add(store, 10)

    def read(conn: Connection) -> list[UUID]:
        handles = {"among0002", "among0007", "nobody"}
        found = conn.execute(
            select(actors.c.id)
            .where(among(conn, actors.c.handle, handles))
            .order_by(actors.c.handle)
        )
        return list(found.scalars())

    assert store.run(read, write=False) == [made[2][0], made[7][0]]


def test_on_postgresql_the_statement_is_the_same_for_any_number_of_values(store: Store) -> None:
    seen: list[str] = []

    def watch(*args: Any) -> None:
        if "FROM actors" in str(args[2]):
            seen.append(str(args[2]))

    def reader(count: int) -> Callable[[Connection], None]:
        ids = [uuid4() for _ in range(count)]

        def read(conn: Connection) -> None:
            conn.execute(select(actors.c.handle).where(among(conn, actors.c.id, ids))).all()

        return read

    event.listen(store.engine, "before_cursor_execute", watch)
    try:
        for count in (2, 50):
            store.run(reader(count), write=False)
    finally:
        event.remove(store.engine, "before_cursor_execute", watch)
    assert len(seen) == 2
    if store.engine.dialect.name == "postgresql":
        assert seen[0] == seen[1]
        assert "ANY" in seen[0]
    else:
        assert seen[0] != seen[1]  # an IN list of each length
