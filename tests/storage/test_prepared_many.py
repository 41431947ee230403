"""A prepared statement run for many rows in one call of the driver's ``executemany``:
the same rows as SQLAlchemy's own executemany writes, recurring values included, inside
the caller's transaction, its rows counted and its errors translated; on both databases."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest
from sqlalchemy import bindparam, event, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from kalends.identity import Role
from kalends.storage.identity_tables import actors
from kalends.storage.prepared import COPY_ROWS, Prepared, inserting
from kalends.storage.schema import leases
from kalends.storage.task_tables import task_history
from kalends.storage.testing import nothing_written
from kalends.storage.unit_of_work import Store
from kalends.tasks import insert_list, insert_tree

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


ACTOR_ROWS = inserting(actors)
HISTORY_ROWS = inserting(
    task_history, ("task_id", "kind", "actor_id", "at", "payload", "series_id", "occurrence")
)


def test_inserting_writes_the_rows_sqlalchemys_executemany_writes(store: Store) -> None:
    mine, theirs = _actors(store, "f", 7), _actors(store, "g", 7)
    assert store.run(lambda conn: ACTOR_ROWS.many(conn, mine)) == 7
    store.run(lambda conn: conn.execute(insert(actors), theirs))
    raw = store.run(
        lambda conn: conn.exec_driver_sql(
            "SELECT handle, id, display_name, email, created_at FROM actors ORDER BY handle"
        ).all(),
        write=False,
    )
    stored = {str(row[0]): tuple(row[1:]) for row in raw}
    typed = store.run(lambda conn: conn.execute(EVERY_ACTOR).all(), write=False)
    by_handle = {row.handle: row for row in typed}
    for a, b in zip(mine, theirs, strict=True):
        got = by_handle[a["handle"]]
        assert (got.id, got.email, got.created_at) == (a["id"], a["email"], a["created_at"])
        # As stored: the instant's text or value, and an absent email, alike.
        assert stored[a["handle"]][3] == stored[b["handle"]][3]
        assert (stored[a["handle"]][2] is None) == (a["email"] is None)


@pytest.mark.parametrize("copies", [1, COPY_ROWS])
def test_inserting_keeps_text_and_json_as_they_are(store: Store, copies: int) -> None:
    awkward = "tab\there, new\nline, back\\slash, quote ' and \" and ünïcödé, \\N"
    people = [
        {**a, "display_name": f"{awkward} {i}"} for i, a in enumerate(_actors(store, "h", copies))
    ]
    store.run(lambda conn: ACTOR_ROWS.many(conn, people))
    names = select(actors.c.id, actors.c.display_name)
    assert dict(store.run(lambda conn: conn.execute(names).all(), write=False)) == {
        a["id"]: a["display_name"] for a in people
    }
    actor_id = people[0]["id"]
    payloads = [
        {"title": awkward, "tags": [], "n": 1},
        {"nested": {"list": [1, 2.5, None, True]}, "empty": ""},
        {},
    ] * copies
    task_ids = _tasks(store, actor_id, len(payloads))
    now = store.clock.now()
    rows = [
        {"task_id": t, "kind": "noted", "actor_id": actor_id, "at": now, "payload": p,
         "series_id": None, "occurrence": i}
        for i, (t, p) in enumerate(zip(task_ids, payloads, strict=True))
    ]  # fmt: skip
    assert store.run(lambda conn: HISTORY_ROWS.many(conn, rows)) == len(rows)
    read = select(task_history.c.task_id, task_history.c.payload, task_history.c.occurrence).where(
        task_history.c.kind == "noted"
    )
    found = store.run(lambda conn: conn.execute(read).all(), write=False)
    assert {(r.task_id, r.occurrence): r.payload for r in found} == {
        (t, i): p for i, (t, p) in enumerate(zip(task_ids, payloads, strict=True))
    }


@pytest.mark.parametrize("count", [2, COPY_ROWS])
def test_inserting_a_refused_row_is_an_integrity_error_and_nothing_stays(
    store: Store, count: int
) -> None:
    rows = _actors(store, "i", count)
    twin = {**rows[1], "id": uuid4()}
    with nothing_written(store), pytest.raises(IntegrityError):
        store.run(lambda conn: ACTOR_ROWS.many(conn, [*rows, twin]))
    with pytest.raises(KeyError, match="email"):
        store.run(lambda conn: ACTOR_ROWS.many(conn, [{k: v for k, v in rows[0].items()
                                                       if k != "email"}]))  # fmt: skip


@pytest.mark.parametrize("count", [COPY_ROWS - 1, COPY_ROWS])
def test_inserting_is_seen_by_listeners_as_one_statement_with_every_row(
    store: Store, count: int
) -> None:
    seen: list[tuple[str, Any]] = []

    def watch(*args: Any) -> None:
        seen.append((str(args[2]), args[3]))

    event.listen(store.engine, "before_cursor_execute", watch)
    try:
        store.run(lambda conn: ACTOR_ROWS.many(conn, _actors(store, "j", count)))
    finally:
        event.remove(store.engine, "before_cursor_execute", watch)
    [(sql, params)] = [(s, p) for s, p in seen if "actors" in s]
    # PostgreSQL copies many rows in; SQLite inserts them, and a few always.
    copied = _postgres(store) and count >= COPY_ROWS
    assert sql.lstrip().startswith("COPY actors" if copied else "INSERT INTO actors")
    assert ("(FORMAT BINARY)" in sql) == copied  # every column of actors has a binary form
    assert len(params) == count


def _postgres(store: Store) -> bool:
    return store.engine.dialect.name == "postgresql"


def _tasks(store: Store, actor_id: UUID, count: int) -> list[UUID]:
    """``count`` tasks of a new list, for history rows to name."""
    roots = [uuid4() for _ in range(count)]

    def make(conn: Connection) -> None:
        list_id = uuid4()
        insert_list(conn, list_id, "List", {actor_id: Role.OWNER}, now=store.clock.now())
        for i, root in enumerate(roots):
            insert_tree(
                conn, list_id=list_id, root_id=root, title=f"Task {i}", items=[],
                actor_id=actor_id, now=store.clock.now(),
            )  # fmt: skip

    store.run(make)
    return roots
