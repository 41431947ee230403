"""What only SQLite needs: pragmas, and a write lock taken when the transaction begins."""

from __future__ import annotations

import sqlite3
import threading
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import Engine, insert, select, text
from sqlalchemy.engine import Connection, make_url

from kalends.clock import FakeClock
from kalends.storage.engine import create_engine_for
from kalends.storage.migrate import open_store
from kalends.storage.schema import kalends_meta, leases
from kalends.storage.testing import StorageTarget
from kalends.storage.unit_of_work import Store


@pytest.fixture
def sqlite_store(sqlite_target: StorageTarget, fake_clock: FakeClock) -> Store:
    return open_store(sqlite_target.engine(), fake_clock)


def race_fresh_database(url: str, writers: int) -> list[object]:
    """Let ``writers`` engines open ``url`` and write at once; return each one's journal mode."""
    engines = [create_engine_for(url) for _ in range(writers)]
    barrier = threading.Barrier(writers)
    modes: list[object] = []

    def write(engine: Engine) -> None:
        barrier.wait(5)
        try:
            with Store(engine).transaction() as conn:
                conn.exec_driver_sql("CREATE TABLE IF NOT EXISTS t (x INTEGER)")
                modes.append(conn.exec_driver_sql("PRAGMA journal_mode").scalar())
        except Exception as exc:
            modes.append(exc)

    threads = [threading.Thread(target=write, args=(engine,)) for engine in engines]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    for engine in engines:
        engine.dispose()
    return modes


def raw_connection(target: StorageTarget) -> sqlite3.Connection:
    """A plain sqlite3 connection that gives up at once when the database is locked."""
    path = make_url(target.url).database
    assert path is not None
    return sqlite3.connect(path, timeout=0, isolation_level=None, check_same_thread=False)


class TestPragmas:
    def test_connections_use_wal_foreign_keys_and_the_busy_timeout(
        self, sqlite_target: StorageTarget
    ) -> None:
        engine = sqlite_target.engine(busy_timeout_ms=1234)
        with engine.connect() as conn:
            pragmas = {
                name: conn.exec_driver_sql(f"PRAGMA {name}").scalar()
                for name in ("journal_mode", "foreign_keys", "busy_timeout")
            }
        assert pragmas == {"journal_mode": "wal", "foreign_keys": 1, "busy_timeout": 1234}

    def test_pysqlite_is_kept_from_emitting_its_own_begin(
        self, sqlite_target: StorageTarget
    ) -> None:
        with sqlite_target.engine().connect() as conn:
            dbapi_connection = conn.connection.dbapi_connection
            assert isinstance(dbapi_connection, sqlite3.Connection)
            assert dbapi_connection.isolation_level is None

    def test_writers_opening_a_fresh_database_at_once_all_switch_it_to_wal(
        self, tmp_path: Path
    ) -> None:
        # SQLite answers a contended WAL switch "locked" without waiting; repeat to catch it.
        for trial in range(20):
            modes = race_fresh_database(f"sqlite:///{tmp_path / f'fresh-{trial}.sqlite3'}", 4)
            assert modes == ["wal"] * 4

    def test_schema_changes_are_transactional(self, sqlite_target: StorageTarget) -> None:
        engine = sqlite_target.engine()
        with pytest.raises(RuntimeError), engine.begin() as conn:
            conn.execute(text("CREATE TABLE scratch (x INTEGER)"))
            raise RuntimeError
        with engine.connect() as conn:
            tables = conn.execute(text("SELECT name FROM sqlite_master")).scalars().all()
        assert "scratch" not in tables

    def test_instants_are_stored_as_fixed_width_utc_text(self, sqlite_store: Store) -> None:
        paris = timezone(timedelta(hours=1))
        with sqlite_store.transaction() as conn:
            conn.execute(
                insert(leases).values(
                    name="n",
                    owner="o",
                    token="t",
                    acquired_at=datetime(2025, 1, 2, 3, 4, 5, tzinfo=paris),
                    expires_at=datetime(2025, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
                )
            )
            raw = conn.execute(text("SELECT acquired_at, expires_at FROM leases")).one()
        assert tuple(raw) == ("2025-01-02T02:04:05.000000Z", "2025-01-02T03:04:05.000006Z")

    def test_a_negative_busy_timeout_is_refused(self, sqlite_target: StorageTarget) -> None:
        with pytest.raises(ValueError, match="busy_timeout_ms"):
            create_engine_for(sqlite_target.url, busy_timeout_ms=-1)


class TestWriteLock:
    def test_a_write_transaction_holds_the_write_lock_before_its_first_statement(
        self, sqlite_target: StorageTarget, sqlite_store: Store
    ) -> None:
        other = raw_connection(sqlite_target)
        try:
            with (
                sqlite_store.transaction(write=True),
                pytest.raises(sqlite3.OperationalError, match="locked"),
            ):
                other.execute("BEGIN IMMEDIATE")
            other.execute("BEGIN IMMEDIATE")
            other.execute("ROLLBACK")
        finally:
            other.close()

    def test_a_read_transaction_leaves_the_write_lock_free(
        self, sqlite_target: StorageTarget, sqlite_store: Store
    ) -> None:
        other = raw_connection(sqlite_target)
        try:
            with sqlite_store.transaction(write=False) as conn:
                conn.execute(select(kalends_meta)).all()
                other.execute("BEGIN IMMEDIATE")
                other.execute("INSERT INTO kalends_meta (key, value) VALUES ('x', 'y')")
                other.execute("COMMIT")
        finally:
            other.close()

    def test_a_second_writer_waits_for_the_first_to_commit_then_sees_its_write(
        self, sqlite_store: Store
    ) -> None:
        first_open = threading.Event()
        order: list[str] = []
        seen: list[int] = []

        def count_rows(conn: Connection) -> int:
            order.append("second began")
            return len(conn.execute(select(kalends_meta)).all())

        def second_writer() -> None:
            first_open.wait(5)
            seen.append(sqlite_store.run(count_rows))

        thread = threading.Thread(target=second_writer)
        thread.start()
        with sqlite_store.transaction() as conn:
            conn.execute(insert(kalends_meta).values(key="first", value="v"))
            first_open.set()
            # Long enough for the second writer to reach BEGIN IMMEDIATE and wait there.
            time.sleep(0.2)
            order.append("first commits")
        thread.join(5)
        assert order == ["first commits", "second began"]
        assert seen == [2]
