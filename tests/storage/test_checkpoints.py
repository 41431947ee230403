"""The write-ahead log copied back by a thread of its own: the process's connections
leave the checkpoints to it, and it keeps the log copied."""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path

from sqlalchemy import insert
from sqlalchemy.engine import Connection, make_url

from kalends.storage.checkpoints import FALLBACK_CHECKPOINT_PAGES, Checkpointer
from kalends.storage.migrate import open_store
from kalends.storage.schema import kalends_meta
from kalends.storage.testing import StorageTarget

WITHIN_S = 5.0


def add(rows: list[dict[str, str]], conn: Connection) -> None:
    conn.execute(insert(kalends_meta), rows)


def test_the_connections_hand_their_checkpoints_to_the_thread_which_copies_the_log(
    sqlite_target: StorageTarget,
) -> None:
    store = open_store(sqlite_target.engine())
    checkpointer = Checkpointer(store.engine, every=0.01).start()
    try:
        assert checkpointer.running
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == (
                FALLBACK_CHECKPOINT_PAGES
            )
        database = Path(make_url(sqlite_target.url).database or "")
        before = database.stat().st_size
        # About 1,500 pages of log: past SQLite's own threshold, under the fallback.
        for batch in range(30):
            rows = [{"key": f"k-{batch}-{i}", "value": "x" * 2000} for i in range(100)]
            store.run(partial(add, rows))
        # Only a checkpoint writes the pages into the database file itself.
        deadline = time.monotonic() + WITHIN_S
        while database.stat().st_size < before + 4_000_000 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert database.stat().st_size >= before + 4_000_000
        assert checkpointer.checkpoints > 0
    finally:
        checkpointer.stop()
        store.close()
    assert not checkpointer.running


def test_postgresql_has_no_log_to_copy(postgresql_target: StorageTarget) -> None:
    store = open_store(postgresql_target.engine())
    try:
        checkpointer = Checkpointer(store.engine).start()
        assert not checkpointer.running
        checkpointer.stop()
    finally:
        store.close()
