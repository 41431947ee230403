"""``lock_store`` serialises a kalends store's migrations and owner bootstraps: on
PostgreSQL per schema, so a store waits for another transaction on the same store and
never for a store in another schema of the database (each test's schema used to wait
for every other's migrations, and under load ran past the lock timeout)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from kalends.storage.engine import WRITE_OPTION
from kalends.storage.testing import StorageTarget, provision
from kalends.storage.unit_of_work import lock_store

KEY = 0x6B616C65


def _try_lock(target: StorageTarget) -> None:
    """Take the lock in a transaction of its own, waiting at most 200 ms."""
    with target.engine().connect() as conn:
        conn.execution_options(**{WRITE_OPTION: True})
        with conn.begin():
            conn.execute(text("SET LOCAL lock_timeout = '200ms'"))
            lock_store(conn, KEY)


def test_a_store_waits_for_its_own_lock_and_not_for_another_schema_s(
    postgresql_target: StorageTarget, tmp_path: Path
) -> None:
    holder = postgresql_target.engine().connect()
    try:
        holder.execution_options(**{WRITE_OPTION: True})
        held = holder.begin()
        lock_store(holder, KEY)
        with pytest.raises(OperationalError, match="lock timeout"):
            _try_lock(postgresql_target)
        (tmp_path / "other").mkdir()
        with provision("postgresql", tmp_path / "other") as other:
            _try_lock(other)  # (another schema: taken at once)
        held.rollback()
        _try_lock(postgresql_target)  # released with the transaction
    finally:
        holder.close()
