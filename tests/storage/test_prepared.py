"""Prepared statements run on the driver: the same values in and out as SQLAlchemy's own
execution, inside the caller's transaction, with its errors translated; on both databases."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest
from sqlalchemy import Boolean, bindparam, cast, event, insert, literal_column, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from kalends.clock import FakeClock
from kalends.errors import StorageError
from kalends.storage.identity_tables import actors
from kalends.storage.prepared import Prepared
from kalends.storage.schema import kalends_meta, leases
from kalends.storage.testing import StorageTarget, nothing_written
from kalends.storage.unit_of_work import Store

from .conftest import SHORT_BUSY_TIMEOUT_MS, WriteLockHolder

ACTOR = select(actors.c.id, actors.c.handle, actors.c.created_at).where(
    actors.c.id == bindparam("actor_id")
)
PAGE = (
    select(actors.c.handle)
    .where(actors.c.handle > bindparam("after"))
    .order_by(actors.c.handle)
    .limit(bindparam("size"))
)


def add_actors(store: Store, *handles: str) -> list[UUID]:
    ids = [uuid4() for _ in handles]
    now = store.clock.now()
    store.run(
        lambda conn: conn.execute(
            insert(actors),
            [
                {"id": i, "handle": h, "display_name": h.title(), "created_at": now}
                for i, h in zip(ids, handles, strict=True)
            ],
        )
    )
    return ids


class TestValues:
    def test_typed_rows_are_what_sqlalchemy_reads(self, store: Store) -> None:
        [ada] = add_actors(store, "ada")
        prepared = Prepared(ACTOR)

        def both(conn: Connection) -> tuple[Any, Any]:
            return (
                prepared.first(conn, {"actor_id": ada}),
                conn.execute(ACTOR, {"actor_id": ada}).one(),
            )

        mine, theirs = store.run(both, write=False)
        assert tuple(mine) == tuple(theirs)
        assert isinstance(mine.id, UUID) and mine.handle == "ada"
        assert mine.created_at == store.clock.now() and mine.created_at.tzinfo is not None

    def test_untyped_rows_are_what_the_driver_gives(self, store: Store) -> None:
        [ada] = add_actors(store, "ada")
        row = store.run(
            lambda conn: Prepared(ACTOR, typed=False).first(conn, {"actor_id": ada}), write=False
        )
        assert row is not None
        # SQLite keeps an ID as 32 hex digits; PostgreSQL's driver makes a UUID.
        assert row[0] in (ada.hex, ada)
        assert row[1] == "ada"

    def test_a_bound_value_of_the_statement_and_one_given_at_run_time_both_apply(
        self, store: Store
    ) -> None:
        add_actors(store, "bo", "cy", "di", "ed")
        # (the OFFSET that LIMIT brings is a value the statement binds itself)
        found = store.run(
            lambda conn: Prepared(PAGE).rows(conn, {"after": "bo", "size": 2}), write=False
        )
        assert [r.handle for r in found] == ["cy", "di"]

    def test_no_row_is_none_and_a_boolean_column_is_a_bool(self, store: Store) -> None:
        flag = select(cast(literal_column("1"), Boolean).label("on")).where(
            actors.c.handle == bindparam("handle")
        )
        [row] = store.run(
            lambda conn: Prepared(select(cast(literal_column("1"), Boolean).label("on"))).rows(
                conn
            ),
            write=False,
        )
        assert row.on is True
        assert store.run(lambda c: Prepared(flag).first(c, {"handle": "none"}), write=False) is None


class TestWrites:
    def test_a_write_counts_its_rows_and_is_part_of_the_callers_transaction(
        self, store: Store
    ) -> None:
        now = store.clock.now()
        store.run(
            lambda conn: conn.execute(
                insert(leases).values(
                    name="job", owner="a", token="t1", acquired_at=now, expires_at=now
                )
            )
        )
        extend = Prepared(
            update(leases)
            .where(leases.c.name == bindparam("lease"), leases.c.expires_at <= bindparam("now"))
            .values(expires_at=bindparam("until"))
        )
        later = now + timedelta(minutes=1)
        params = {"lease": "job", "now": now, "until": later}

        class Undo(Exception):
            pass

        def then_fail(conn: Connection) -> None:
            assert extend.rowcount(conn, params) == 1
            raise Undo

        with nothing_written(store), pytest.raises(Undo):
            store.run(then_fail)
        assert store.run(lambda conn: extend.rowcount(conn, params)) == 1
        assert store.run(lambda conn: extend.rowcount(conn, params)) == 0  # not expired now
        read = select(leases.c.expires_at).where(leases.c.name == "job")
        assert store.run(lambda conn: conn.execute(read).scalar_one(), write=False) == later


class TestRefusals:
    def test_an_in_list_expanded_at_run_time_is_refused_when_first_run(self, store: Store) -> None:
        listed = Prepared(
            select(actors.c.id).where(actors.c.handle.in_(bindparam("h", expanding=True)))
        )
        with pytest.raises(ValueError, match="expanding"):
            store.run(lambda conn: listed.rows(conn, {"h": ["a"]}), write=False)

    def test_a_missing_value_names_its_bind(self, store: Store) -> None:
        with pytest.raises(KeyError, match="actor_id"):
            store.run(lambda conn: Prepared(ACTOR).rows(conn, {}), write=False)

    def test_a_constraint_the_database_refuses_is_sqlalchemys_integrity_error(
        self, store: Store
    ) -> None:
        [ada] = add_actors(store, "ada")
        twin = Prepared(
            insert(actors).values(
                id=bindparam("id"),
                handle="ada",
                display_name="Ada",
                created_at=bindparam("at"),
            )
        )
        with nothing_written(store), pytest.raises(IntegrityError):
            store.run(lambda conn: twin.rowcount(conn, {"id": uuid4(), "at": store.clock.now()}))
        assert ada

    def test_a_read_only_transaction_refuses_a_write_as_a_storage_error(self, store: Store) -> None:
        rename = Prepared(update(actors).values(display_name="x"))
        with nothing_written(store), pytest.raises(StorageError):
            store.run(rename.rowcount, write=False)

    def test_a_lock_held_elsewhere_is_database_busy_and_retried_whole_by_the_store(
        self,
        storage_target: StorageTarget,
        fake_clock: FakeClock,
        write_lock_holder: WriteLockHolder,
    ) -> None:
        contended = Store(
            storage_target.engine(busy_timeout_ms=SHORT_BUSY_TIMEOUT_MS),
            fake_clock,
            sleep=lambda _s: write_lock_holder.release(),
        )
        touch = Prepared(
            update(kalends_meta)
            .where(kalends_meta.c.key == "created_by")
            .values(value=kalends_meta.c.value)
        )
        # SQLite takes its write lock when the transaction begins; PostgreSQL when the
        # statement reaches the row: then the prepared statement reports it.
        assert contended.run(touch.rowcount) == 1
        assert not write_lock_holder.held


def test_listeners_of_cursor_executions_see_each_prepared_statement(store: Store) -> None:
    seen: list[tuple[str, object]] = []

    def watch(*args: object) -> None:
        seen.append((str(args[2]), args[3]))

    event.listen(store.engine, "before_cursor_execute", watch)
    try:
        store.run(lambda conn: Prepared(PAGE).rows(conn, {"after": "", "size": 3}), write=False)
    finally:
        event.remove(store.engine, "before_cursor_execute", watch)
    [(sql, params)] = [(s, p) for s, p in seen if "actors" in s]
    assert sql.lstrip().startswith("SELECT actors.handle")
    assert params is not None
