"""Store.run(wait=False): a write that must not wait for SQLite's write lock."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable

import pytest
from sqlalchemy import insert, select
from sqlalchemy.engine import Connection, make_url

from kalends.clock import FakeClock
from kalends.errors import DatabaseBusy
from kalends.storage.migrate import open_store
from kalends.storage.schema import kalends_meta
from kalends.storage.testing import StorageTarget, nothing_written
from kalends.storage.unit_of_work import Store

# Long enough that a write waiting for the lock outlives the holder releasing it.
PATIENT_MS = 30_000


def holder(target: StorageTarget) -> sqlite3.Connection:
    path = make_url(target.url).database
    assert path is not None
    conn = sqlite3.connect(path, timeout=0, isolation_level=None, check_same_thread=False)
    conn.execute("BEGIN IMMEDIATE")
    return conn


def add(key: str) -> Callable[[Connection], str]:
    def write(conn: Connection) -> str:
        conn.execute(insert(kalends_meta).values(key=key, value="v"))
        return key

    return write


def keys(store: Store) -> set[str]:
    return set(store.run(lambda c: c.execute(select(kalends_meta.c.key)).scalars().all()))


@pytest.fixture
def patient_store(sqlite_target: StorageTarget, fake_clock: FakeClock) -> Store:
    return open_store(sqlite_target.engine(busy_timeout_ms=PATIENT_MS), fake_clock)


def test_a_no_wait_write_fails_busy_at_once_while_the_lock_is_held(
    sqlite_target: StorageTarget, patient_store: Store
) -> None:
    calls: list[str] = []

    def write(conn: Connection) -> None:
        calls.append("ran")
        conn.execute(insert(kalends_meta).values(key="no-wait", value="v"))

    held = holder(sqlite_target)
    # Were the write to wait, it would outlast this release and succeed.
    release = threading.Timer(1.0, lambda: held.execute("ROLLBACK"))
    release.start()
    try:
        with nothing_written(patient_store), pytest.raises(DatabaseBusy):
            patient_store.run(write, wait=False)
        assert calls == []
    finally:
        release.join()
        held.close()
    assert "no-wait" not in keys(patient_store)


def test_after_a_no_wait_attempt_the_connection_waits_for_the_lock_again(
    sqlite_target: StorageTarget, patient_store: Store
) -> None:
    patient_store.engine.dispose()  # the pool's only connection will serve both
    held = holder(sqlite_target)
    with pytest.raises(DatabaseBusy):
        patient_store.run(add("first"), wait=False)
    with patient_store.transaction(write=False) as conn:
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == PATIENT_MS
    # That connection's busy handler is back: this waits for the release, not fails.
    release = threading.Timer(0.3, lambda: held.execute("ROLLBACK"))
    release.start()
    try:
        with patient_store.transaction(write=True) as conn:
            conn.execute(insert(kalends_meta).values(key="waited", value="v"))
    finally:
        release.join()
        held.close()
    assert "waited" in keys(patient_store)


def test_a_no_wait_write_with_the_lock_free_writes(store: Store) -> None:
    assert store.run(add("free"), wait=False) == "free"
    assert "free" in keys(store)


def test_a_no_wait_read_is_a_plain_read(store: Store) -> None:
    found = store.run(
        lambda c: c.execute(select(kalends_meta.c.key)).all(), write=False, wait=False
    )
    assert isinstance(found, list)
