"""Inserting shared rows that another transaction may create at the same moment."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection


def insert_missing(
    conn: Connection, table: Table, rows: Sequence[dict[str, Any]], conflict: Sequence[str]
) -> None:
    """Inserts the rows whose ``conflict`` key is not taken yet; the others are left alone.

    ``INSERT … ON CONFLICT DO NOTHING`` on both backends, so a row created
    concurrently by another writer is reused instead of failing the operation.
    """
    if not rows:
        return
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    statement = dialect.insert(table).on_conflict_do_nothing(index_elements=list(conflict))
    conn.execute(statement, list(rows))
