"""A database that refuses writes, then takes them again: readiness, renewal, recovery.

How a database refuses writes here, on each backend:

* SQLite: connections opened from then on open the file read-only (``mode=ro``), which
  is what SQLite does for a process that may not write the file; connections opened
  before keep the access they had, as they do when a file's mode changes under them.
  (A real ``chmod`` against a real server: ``tests/e2e/test_serve_read_only.py``.)
* PostgreSQL: the role the store connects as loses, then gets back, the privilege to
  insert, update and delete in the test's schema.
"""

from __future__ import annotations

import gc
import secrets
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest
from psycopg import sql
from sqlalchemy import Engine, event, func, insert, select
from sqlalchemy.engine import Connection, make_url

from kalends.errors import StorageError
from kalends.storage.engine import create_engine_for, renew_connections
from kalends.storage.migrate import open_store
from kalends.storage.schema import kalends_meta
from kalends.storage.testing import StorageTarget, discover_postgresql
from kalends.storage.unit_of_work import Store, refused_write

from .conftest import WriteLockHolder


def put(conn: Connection, key: str) -> None:
    conn.execute(insert(kalends_meta).values(key=key, value="v"))


def keys(store: Store) -> set[str]:
    with store.transaction(write=False) as conn:
        return set(conn.execute(select(kalends_meta.c.key)).scalars())


def driver_connection(conn: Connection) -> Any:
    return conn.connection.driver_connection


def is_closed(driver: Any) -> bool:
    """Whether a psycopg or sqlite3 connection is closed."""
    if hasattr(driver, "closed"):
        return bool(driver.closed)
    try:
        driver.execute("SELECT 1")
    except sqlite3.ProgrammingError:
        return True
    return False


@dataclass
class Refusal:
    """A store on the database under test, and the switch that makes it refuse writes."""

    store: Store
    refuse: Callable[[], None]
    allow: Callable[[], None]
    cleanups: list[Callable[[], None]] = field(default_factory=list)


def _sqlite_refusal(target: StorageTarget, store: Store) -> Iterator[Refusal]:
    path = make_url(target.url).database
    assert path

    def read_only(_dialect: Any, _record: Any, cargs: list[Any], cparams: dict[str, Any]) -> None:
        if cargs and cargs[0] == path:
            cargs[0] = f"file:{path}?mode=ro"
            cparams["uri"] = True

    def refuse() -> None:
        if not event.contains(Engine, "do_connect", read_only):
            event.listen(Engine, "do_connect", read_only)

    def allow() -> None:
        if event.contains(Engine, "do_connect", read_only):
            event.remove(Engine, "do_connect", read_only)

    try:
        yield Refusal(store, refuse, allow)
    finally:
        allow()


def _postgresql_refusal(target: StorageTarget, fake_clock: Any) -> Iterator[Refusal]:
    server = discover_postgresql().url
    assert server is not None and target.schema is not None
    admin_url = make_url(server).set(drivername="postgresql")
    role = f"k_role_{secrets.token_hex(4)}"
    schema = sql.Identifier(target.schema)
    writes = sql.SQL("REVOKE INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {} FROM {}")

    def admin(statement: sql.Composed) -> None:
        with psycopg.connect(
            admin_url.render_as_string(hide_password=False), autocommit=True
        ) as conn:
            conn.execute(statement)

    admin(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
    admin(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(schema, sql.Identifier(role)))
    admin(
        sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {} TO {}").format(
            schema, sql.Identifier(role)
        )
    )
    engine = create_engine_for(
        make_url(target.url).set(username=role).render_as_string(hide_password=False)
    )
    try:
        yield Refusal(
            Store(engine, fake_clock),
            refuse=lambda: admin(writes.format(schema, sql.Identifier(role))),
            allow=lambda: admin(
                sql.SQL("GRANT INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {} TO {}").format(
                    schema, sql.Identifier(role)
                )
            ),
        )
    finally:
        engine.dispose()
        admin(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        admin(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


@pytest.fixture
def refusal(
    storage_backend: str, storage_target: StorageTarget, store: Store, fake_clock: Any
) -> Iterator[Refusal]:
    """A store whose database can be made to refuse writes, and to take them again."""
    if storage_backend == "sqlite":
        yield from _sqlite_refusal(storage_target, store)
    else:
        yield from _postgresql_refusal(storage_target, fake_clock)


class TestReadiness:
    def test_a_database_that_takes_writes_accepts_them_and_keeps_no_probe_row(
        self, store: Store
    ) -> None:
        before = keys(store)
        assert store.accepts_writes() is True
        assert store.accepts_writes() is True
        assert keys(store) == before

    def test_a_database_busy_with_another_writer_still_accepts_writes_at_once(
        self, store: Store, write_lock_holder: WriteLockHolder
    ) -> None:
        assert write_lock_holder.held
        assert store.accepts_writes() is True

    def test_a_database_that_refuses_writes_is_not_ready_and_its_writes_fail(
        self, refusal: Refusal
    ) -> None:
        store = refusal.store
        store.run(lambda conn: put(conn, "before"))

        refusal.refuse()

        assert store.accepts_writes() is False
        with pytest.raises(StorageError, match=r"read-only|privilege"):
            store.run(lambda conn: put(conn, "while refused"))
        assert "while refused" not in keys(store)

    def test_once_writes_are_taken_again_readiness_and_the_next_write_recover_at_once(
        self, refusal: Refusal
    ) -> None:
        store = refusal.store
        refusal.refuse()
        assert store.accepts_writes() is False
        with pytest.raises(StorageError):
            store.run(lambda conn: put(conn, "while refused"))

        refusal.allow()

        store.run(lambda conn: put(conn, "after"))
        assert store.accepts_writes() is True
        assert "after" in keys(store)


class TestRenewal:
    def test_renewing_reconnects_every_pooled_connection_before_its_next_use(
        self, store: Store
    ) -> None:
        with store.transaction(write=False) as conn:
            before = driver_connection(conn)

        renew_connections(store.engine)

        with store.transaction(write=False) as conn:
            assert driver_connection(conn) is not before
            assert conn.execute(select(func.count()).select_from(kalends_meta)).scalar()

    def test_a_connection_in_use_while_renewed_is_closed_when_its_transaction_ends(
        self, store: Store
    ) -> None:
        with store.transaction(write=False) as conn:
            in_use = driver_connection(conn)
            renew_connections(store.engine)
        assert is_closed(in_use)
        gc.collect()  # a connection left open in the old pool would warn here

    def test_a_kept_connection_is_renewed_too(self, store: Store) -> None:
        with store.keep_connection():
            with store.transaction(write=False) as conn:
                before = driver_connection(conn)
            with store.transaction(write=False) as conn:
                assert driver_connection(conn) is before

            renew_connections(store.engine)

            with store.transaction(write=False) as conn:
                assert driver_connection(conn) is not before
        assert is_closed(before)
        gc.collect()  # a connection left open in the old pool would warn here

    def test_a_write_refused_by_a_read_transaction_renews_nothing(self, store: Store) -> None:
        with store.keep_connection():
            with store.transaction(write=False) as conn:
                before = driver_connection(conn)
            with (
                pytest.raises(StorageError, match="read-only") as refused,
                store.transaction(write=False) as conn,
            ):
                put(conn, "in a read")
            with store.transaction(write=False) as conn:
                assert driver_connection(conn) is before
        assert refused_write(refused.value)  # the same error, in a write, would renew


class TestSqliteRecovery:
    """SQLite only: a connection opened while the file was read-only stays read-only."""

    @pytest.fixture
    def sqlite_refusal(self, sqlite_target: StorageTarget, fake_clock: Any) -> Iterator[Refusal]:
        yield from _sqlite_refusal(sqlite_target, open_store(sqlite_target.engine(), fake_clock))

    def test_a_pooled_connection_opened_while_read_only_gives_way_to_the_first_write_after(
        self, sqlite_refusal: Refusal
    ) -> None:
        store = sqlite_refusal.store
        sqlite_refusal.refuse()
        store.close()  # the pool's connections from before are gone: the next one is read-only
        assert keys(store)  # reads work, on a connection opened read-only

        sqlite_refusal.allow()

        store.run(lambda conn: put(conn, "after"))
        assert "after" in keys(store)

    def test_a_kept_connection_opened_while_read_only_gives_way_to_the_first_write_after(
        self, sqlite_refusal: Refusal
    ) -> None:
        store = sqlite_refusal.store
        sqlite_refusal.refuse()
        store.close()
        with store.keep_connection():
            assert keys(store)  # the kept connection is opened now, read-only

            sqlite_refusal.allow()

            store.run(lambda conn: put(conn, "after"))
            assert "after" in keys(store)

    def test_the_readiness_probe_sees_the_file_not_the_open_connections(
        self, sqlite_refusal: Refusal
    ) -> None:
        store = sqlite_refusal.store
        store.run(lambda conn: put(conn, "opened before"))  # a read-write connection in the pool

        sqlite_refusal.refuse()

        assert store.accepts_writes() is False
        # The refusal renewed the pool: writes answer as readiness did.
        with pytest.raises(StorageError, match="read-only"):
            store.run(lambda conn: put(conn, "while refused"))
