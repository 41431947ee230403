"""A prepared statement run for many rows in one call of the driver's ``executemany``:
the same rows as SQLAlchemy's own executemany writes, recurring values included, inside
the caller's transaction, its rows counted and its errors translated; on both databases."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import uuid4

import pytest
from sqlalchemy import bindparam, event, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from kalends.storage.identity_tables import actors
from kalends.storage.prepared import Prepared
from kalends.storage.schema import leases
from kalends.storage.testing import nothing_written
from kalends.storage.unit_of_work import Store

ADD_ACTOR = Prepared(
    insert(actors).values(
        {name: bindparam(name, type_=actors.c[name].type)
         for name in ("id", "handle", "display_name", "email", "created_at")}
    )
)  # fmt: skip
EXTEND = Prepared(
    update(leases)
    .where(leases.c.name == bindparam("lease"))
    .values(expires_at=bindparam("until"), owner=bindparam("owner"))
)
EVERY_ACTOR = select(actors.c.handle, actors.c.id, actors.c.email, actors.c.created_at).order_by(
    actors.c.handle
)


def _actors(store: Store, prefix: str, count: int) -> list[dict[str, Any]]:
    now = store.clock.now()
    # One instant for most rows (converted once) and a few of their own.
    return [
        {
            "id": uuid4(),
            "handle": f"{prefix}{i:02d}",
            "display_name": f"{prefix.title()} {i}",
            "email": None if i % 2 else f"{prefix}{i}@example.com",
            "created_at": now if i % 3 else now + timedelta(seconds=i),
        }
        for i in range(count)
    ]


def test_the_rows_are_those_sqlalchemys_executemany_writes(store: Store) -> None:
    mine, theirs = _actors(store, "a", 12), _actors(store, "b", 12)
    assert store.run(lambda conn: ADD_ACTOR.many(conn, mine)) == 12
    store.run(lambda conn: conn.execute(insert(actors), theirs))
    read = store.run(lambda conn: conn.execute(EVERY_ACTOR).all(), write=False)
    by_handle = {row.handle: row for row in read}
    for a, b in zip(mine, theirs, strict=True):
        got, expected = by_handle[a["handle"]], by_handle[b["handle"]]
        assert (got.id, got.email, got.created_at) == (a["id"], a["email"], a["created_at"])
        assert (expected.id, expected.email, expected.created_at) == (
            b["id"], b["email"], b["created_at"],
        )  # fmt: skip
    # And as stored: the same text or value in each column, whichever wrote it.
    raw = store.run(
        lambda conn: conn.exec_driver_sql(
            "SELECT handle, created_at FROM actors ORDER BY handle"
        ).all(),
        write=False,
    )
    stored = {str(handle): at for handle, at in raw}
    for a, b in zip(mine, theirs, strict=True):
        assert stored[a["handle"]] == stored[b["handle"]]


def test_an_update_counts_the_rows_of_every_run_and_is_part_of_the_callers_transaction(
    store: Store,
) -> None:
    now = store.clock.now()
    store.run(
        lambda conn: conn.execute(
            insert(leases),
            [
                {"name": n, "owner": "a", "token": n, "acquired_at": now, "expires_at": now}
                for n in ("one", "two", "three")
            ],
        )
    )
    later = now + timedelta(minutes=1)
    params = [
        {"lease": name, "until": later, "owner": "b"} for name in ("one", "two", "gone", "three")
    ]

    class Undo(Exception):
        pass

    def then_fail(conn: Connection) -> None:
        assert EXTEND.many(conn, params) == 3
        raise Undo

    with nothing_written(store), pytest.raises(Undo):
        store.run(then_fail)
    assert store.run(lambda conn: EXTEND.many(conn, params)) == 3
    assert store.run(lambda conn: EXTEND.many(conn, [])) == 0
    read = select(leases.c.name, leases.c.owner, leases.c.expires_at).order_by(leases.c.name)
    rows = store.run(lambda conn: conn.execute(read).all(), write=False)
    assert [tuple(r) for r in rows] == [(n, "b", later) for n in ("one", "three", "two")]


def test_a_refused_row_is_an_integrity_error_and_nothing_of_the_call_stays(store: Store) -> None:
    rows = _actors(store, "c", 3)
    twin = {**rows[0], "id": uuid4()}  # the same handle: unique
    with nothing_written(store), pytest.raises(IntegrityError):
        store.run(lambda conn: ADD_ACTOR.many(conn, [*rows, twin]))


def test_a_missing_value_names_its_bind(store: Store) -> None:
    [row] = _actors(store, "d", 1)
    del row["email"]
    with pytest.raises(KeyError, match="email"):
        store.run(lambda conn: ADD_ACTOR.many(conn, [row]))


def test_listeners_see_the_statement_once_with_every_row(store: Store) -> None:
    seen: list[tuple[str, Any, bool]] = []

    def watch(*args: Any) -> None:
        seen.append((str(args[2]), args[3], bool(args[5])))

    event.listen(store.engine, "before_cursor_execute", watch)
    try:
        store.run(lambda conn: ADD_ACTOR.many(conn, _actors(store, "e", 4)))
    finally:
        event.remove(store.engine, "before_cursor_execute", watch)
    [(sql, params, many)] = [(s, p, m) for s, p, m in seen if "actors" in s]
    assert sql.lstrip().startswith("INSERT INTO actors")
    assert len(params) == 4 and many
