"""Fixtures of the storage suite, built on the plugin :mod:`kalends.storage.testing`.

The plugin (registered in ``tests/conftest.py``) provides ``storage_backend``,
``storage_target``, ``fake_clock`` and ``store`` over every reachable backend;
this file adds single-backend targets and a holder of the write lock.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, update
from sqlalchemy.engine import Connection, RootTransaction

from kalends.storage.engine import WRITE_OPTION
from kalends.storage.migrate import upgrade
from kalends.storage.schema import kalends_meta
from kalends.storage.testing import StorageTarget, discover_postgresql, provision

# A short busy timeout keeps the contention tests quick.
SHORT_BUSY_TIMEOUT_MS = 20


class WriteLockHolder:
    """Another connection's open write transaction that locks the ``created_by`` meta row.

    On SQLite its ``BEGIN IMMEDIATE`` holds the database's write lock; on
    PostgreSQL its UPDATE holds the row lock. Anyone updating that row waits.
    """

    def __init__(self, engine: Engine) -> None:
        self._connection: Connection = engine.connect()
        self._connection.execution_options(**{WRITE_OPTION: True})
        self._transaction: RootTransaction = self._connection.begin()
        self._connection.execute(
            update(kalends_meta)
            .where(kalends_meta.c.key == "created_by")
            .values(value=kalends_meta.c.value)
        )

    @property
    def held(self) -> bool:
        return self._transaction.is_active

    def release(self) -> None:
        if self._transaction.is_active:
            self._transaction.rollback()
        self._connection.close()


@pytest.fixture
def sqlite_target(tmp_path: Path) -> Iterator[StorageTarget]:
    """A fresh SQLite database, for behaviour only SQLite has."""
    with provision("sqlite", tmp_path) as target:
        yield target


@pytest.fixture
def postgresql_target(tmp_path: Path) -> Iterator[StorageTarget]:
    """A fresh PostgreSQL schema, for behaviour only PostgreSQL has; skipped without a server."""
    server = discover_postgresql()
    if server.url is None:
        if server.required:
            pytest.fail(f"PostgreSQL {server.reason}", pytrace=False)
        pytest.skip(f"PostgreSQL {server.reason}")
    with provision("postgresql", tmp_path) as target:
        yield target


@pytest.fixture
def write_lock_holder(storage_target: StorageTarget) -> Iterator[WriteLockHolder]:
    """A write lock held by another connection on the (migrated) database under test."""
    upgrade(storage_target.engine())
    holder = WriteLockHolder(storage_target.engine())
    try:
        yield holder
    finally:
        holder.release()
