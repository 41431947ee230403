"""The test plugin's pool of migrated PostgreSQL schemas: a schema given back after a test
comes to the next one as freshly migrated, or is dropped when the test changed more than
its rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from sqlalchemy import text

from kalends.storage import testing
from kalends.storage.testing import StorageTarget, discover_postgresql, migrated, provision

pytestmark = pytest.mark.skipif(
    discover_postgresql().url is None, reason="the pool is PostgreSQL's"
)


@pytest.fixture
def empty_pool() -> Iterator[None]:
    """This process's pool emptied (its schemas dropped) before and after the test."""
    testing._drop_pool()
    yield
    testing._drop_pool()


def _admin(target: StorageTarget) -> psycopg.Connection[tuple[object, ...]]:
    return testing._admin_connection(target.url)


def _schemas() -> set[str]:
    url = discover_postgresql().url
    assert url is not None
    with testing._admin_connection(url) as admin:
        return {str(r[0]) for r in admin.execute("SELECT nspname FROM pg_namespace")}


def _dirty(target: StorageTarget) -> None:
    """Rows in a table, a meta row changed, a sequence moved on."""
    with target.engine().begin() as conn:
        conn.execute(text("UPDATE kalends_meta SET value = 'changed by a test'"))
        conn.execute(text("SELECT nextval('task_history_id_seq')"))
        conn.execute(text("SELECT nextval('task_history_id_seq')"))
        conn.execute(text("INSERT INTO service_preferences VALUES ('x', 'y', now(), NULL)"))


def test_a_schema_given_back_comes_to_the_next_test_freshly_migrated(
    tmp_path: Path, empty_pool: None
) -> None:
    with provision("postgresql", tmp_path) as first:
        migrated(first)
        with _admin(first) as admin:
            meta = admin.execute(
                sql.SQL("SELECT * FROM {}.kalends_meta ORDER BY 1").format(
                    sql.Identifier(first.schema or "")
                )
            ).fetchall()
        _dirty(first)
    assert len(testing._POOL) == 1
    pooled = testing._POOL[0]
    assert pooled in _schemas() and first.schema not in _schemas()
    with provision("postgresql", tmp_path) as second:
        migrated(second)
        assert testing._POOL == [] and pooled not in _schemas()
        with second.engine().begin() as conn:
            assert conn.execute(text("SELECT count(*) FROM service_preferences")).scalar() == 0
            assert conn.execute(text("SELECT nextval('task_history_id_seq')")).scalar() == 1
            assert [
                tuple(r) for r in conn.execute(text("SELECT * FROM kalends_meta ORDER BY 1"))
            ] == [tuple(r) for r in meta]


@pytest.mark.parametrize(
    "change",
    [
        "CREATE TABLE extra (id integer)",
        "ALTER TABLE service_preferences ADD COLUMN extra integer",
        "CREATE INDEX extra ON service_preferences (value)",
        "REVOKE INSERT ON service_preferences FROM PUBLIC; "
        "GRANT SELECT ON service_preferences TO PUBLIC",
        "DROP TABLE service_preferences",
    ],
)
def test_a_schema_whose_structure_or_privileges_changed_is_dropped_not_pooled(
    tmp_path: Path, empty_pool: None, change: str
) -> None:
    with provision("postgresql", tmp_path) as target:
        migrated(target)
        with target.engine().begin() as conn:
            for statement in change.split("; "):
                conn.execute(text(statement))
    assert testing._POOL == []
    assert target.schema not in _schemas()


def test_an_unmigrated_schema_is_dropped_not_pooled(tmp_path: Path, empty_pool: None) -> None:
    with provision("postgresql", tmp_path) as target:
        pass
    assert testing._POOL == [] and target.schema not in _schemas()
