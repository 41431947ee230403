"""The write-ahead log copied back by a thread of its own: the process's connections
leave the checkpoints to it; it copies the log soon after a write, tries an incomplete
copy again, and sleeps while nothing is written."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest
from sqlalchemy import event, insert, select
from sqlalchemy.engine import Connection, make_url

from kalends.storage.checkpoints import FALLBACK_CHECKPOINT_PAGES, Checkpointer
from kalends.storage.migrate import open_store
from kalends.storage.schema import kalends_meta
from kalends.storage.testing import StorageTarget
from kalends.storage.unit_of_work import Store

WITHIN_S = 5.0
"""How long a test waits for what the thread does soon (far more than it needs)."""

NEVER_S = 3600.0
"""An idle interval no test lasts: the thread wakes only for writes and retries."""


def add(rows: list[dict[str, str]], conn: Connection) -> None:
    conn.execute(insert(kalends_meta), rows)


def count(conn: Connection) -> int:
    return len(conn.execute(select(kalends_meta.c.key)).all())


def eventually(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + WITHIN_S
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def database_path(target: StorageTarget) -> Path:
    return Path(make_url(target.url).database or "")


def all_copied(checkpointer: Checkpointer) -> bool:
    last = checkpointer.last
    return last is not None and last[0] == 0 and last[1] == last[2]


def copied_some(checkpointer: Checkpointer) -> bool:
    last = checkpointer.last
    return last is not None and last[1] > 0


def held_back(checkpointer: Checkpointer) -> bool:
    last = checkpointer.last
    return last is not None and last[2] < last[1]


@pytest.fixture
def store(sqlite_target: StorageTarget) -> Iterator[Store]:
    store = open_store(sqlite_target.engine())
    try:
        yield store
    finally:
        store.close()


def test_the_connections_hand_their_checkpoints_to_the_thread_which_copies_the_log(
    sqlite_target: StorageTarget, store: Store
) -> None:
    checkpointer = Checkpointer(store.engine, delay=0.01).start()
    try:
        assert checkpointer.running
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == (
                FALLBACK_CHECKPOINT_PAGES
            )
        database = database_path(sqlite_target)
        before = database.stat().st_size
        # About 1,500 pages of log: past SQLite's own threshold, under the fallback.
        for batch in range(30):
            rows = [{"key": f"k-{batch}-{i}", "value": "x" * 2000} for i in range(100)]
            store.run(partial(add, rows))
        # Only a checkpoint writes the pages into the database file itself.
        assert eventually(lambda: database.stat().st_size >= before + 4_000_000)
        assert checkpointer.checkpoints > 0
    finally:
        checkpointer.stop()
    assert not checkpointer.running
    assert not event.contains(store.engine, "commit", checkpointer._committing)


class TestWhenItWakes:
    def test_a_write_is_copied_soon_after_it_commits_without_waiting_for_the_idle_interval(
        self, store: Store
    ) -> None:
        checkpointer = Checkpointer(store.engine, delay=0.01, idle=NEVER_S).start()
        try:
            store.run(partial(add, [{"key": "one", "value": "x" * 2000}]))
            # (A look before the COMMIT landed finds an empty log, all of it copied: the
            # write's own frames are what must be copied.)
            assert eventually(lambda: all_copied(checkpointer) and copied_some(checkpointer))
            # Then it sleeps: no write, no wake (a commit that landed late costs a look
            # or two more, never a loop).
            wakes = checkpointer.wakes
            time.sleep(0.3)
            assert checkpointer.wakes == wakes
        finally:
            checkpointer.stop()

    def test_an_idle_server_s_thread_does_not_wake_and_reads_do_not_wake_it(
        self, store: Store
    ) -> None:
        checkpointer = Checkpointer(store.engine, delay=0.01, idle=NEVER_S).start()
        try:
            for _ in range(20):
                store.run(count, write=False)
            # 30 ticks of the thread that polled every 10 ms.
            time.sleep(0.3)
            assert checkpointer.wakes == 0
            assert checkpointer.checkpoints == 0
        finally:
            checkpointer.stop()
        assert checkpointer.wakes == 0

    def test_with_nothing_written_it_wakes_at_most_once_per_idle_interval(
        self, store: Store
    ) -> None:
        idle = 0.05
        checkpointer = Checkpointer(store.engine, delay=0.01, idle=idle).start()
        started = time.monotonic()
        try:
            assert eventually(lambda: checkpointer.wakes >= 2)
        finally:
            checkpointer.stop()
        # A busy machine only makes it wake less often, never more.
        assert checkpointer.wakes <= (time.monotonic() - started) / idle + 1
        assert checkpointer.checkpoints == checkpointer.wakes

    def test_a_copy_a_reader_held_back_is_tried_again_without_another_write(
        self, sqlite_target: StorageTarget, store: Store
    ) -> None:
        checkpointer = Checkpointer(store.engine, delay=0.01, idle=NEVER_S).start()
        reader = sqlite3.connect(database_path(sqlite_target), isolation_level=None)
        try:
            # A reader's snapshot from before the write: its pages may not be overwritten.
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM kalends_meta").fetchone()
            store.run(partial(add, [{"key": "held", "value": "x" * 2000}]))
            assert eventually(lambda: held_back(checkpointer))
            reader.execute("COMMIT")
            assert eventually(lambda: all_copied(checkpointer))
            # The write woke it once; every other wake was a retry.
            assert checkpointer.wakes >= 2
        finally:
            reader.close()
            checkpointer.stop()

    def test_a_commit_that_lands_after_its_wake_is_still_copied_without_another_write(
        self, sqlite_target: StorageTarget, store: Store
    ) -> None:
        checkpointer = Checkpointer(store.engine, delay=0.01, idle=NEVER_S).start()

        def land_late(_connection: Connection) -> None:
            # After the thread's own listener: its wake comes 300 ms before the COMMIT.
            time.sleep(0.3)

        event.listen(store.engine, "commit", land_late)
        reader = sqlite3.connect(database_path(sqlite_target), isolation_level=None)
        try:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM kalends_meta").fetchone()
            store.run(partial(add, [{"key": "late", "value": "x" * 2000}]))
            assert eventually(lambda: held_back(checkpointer))
            reader.execute("COMMIT")
            assert eventually(lambda: all_copied(checkpointer))
        finally:
            event.remove(store.engine, "commit", land_late)
            reader.close()
            checkpointer.stop()


def test_postgresql_has_no_log_to_copy(postgresql_target: StorageTarget) -> None:
    store = open_store(postgresql_target.engine())
    try:
        checkpointer = Checkpointer(store.engine).start()
        assert not checkpointer.running
        checkpointer.stop()
    finally:
        store.close()
