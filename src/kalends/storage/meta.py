"""Facts about a database kept in ``kalends_meta``, one text value per key.

Both backends write with an upsert, so two processes setting the same key at once both
succeed and the later commit stands.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from kalends.storage.schema import kalends_meta
from kalends.storage.unit_of_work import Store

__all__ = ["SERVER_BASE_URL", "read_meta", "write_meta"]

SERVER_BASE_URL = "serve.base_url"
"""The base URL of the last ``kalends serve`` that listened on this database."""


def read_meta(store: Store, key: str) -> str | None:
    """The value kept under ``key``, or ``None``."""

    def run(conn: Connection) -> str | None:
        value = conn.execute(select(kalends_meta.c.value).where(kalends_meta.c.key == key))
        return value.scalar_one_or_none()

    found: str | None = store.run(run, write=False)
    return found


def write_meta(store: Store, key: str, value: str) -> None:
    """Keeps ``value`` under ``key``, replacing what was there."""
    dialect = postgresql if store.dialect == "postgresql" else sqlite
    statement = dialect.insert(kalends_meta).values(key=key, value=value)
    upsert = statement.on_conflict_do_update(
        index_elements=[kalends_meta.c.key], set_={"value": statement.excluded.value}
    )
    store.run(lambda conn: conn.execute(upsert))
