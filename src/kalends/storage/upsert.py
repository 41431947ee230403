"""Inserting shared rows that another transaction may create at the same moment."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Table, bindparam
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from kalends.storage.prepared import Prepared

# One statement per table, columns, conflict key and database, compiled once.
_STATEMENTS: dict[tuple[Table, tuple[str, ...], tuple[str, ...], str], Prepared] = {}


def insert_missing(
    conn: Connection, table: Table, rows: Sequence[dict[str, Any]], conflict: Sequence[str]
) -> None:
    """Inserts the rows whose ``conflict`` key is not taken yet; the others are left alone.

    ``INSERT … ON CONFLICT DO NOTHING`` on both backends, so a row created
    concurrently by another writer is reused instead of failing the operation. Every
    row gives the same columns (those of the first); all go in one call of the driver
    (a scheduler round records hundreds of ledger rows at once).
    """
    if not rows:
        return
    names = tuple(rows[0])
    key = (table, names, tuple(conflict), conn.dialect.name)
    statement = _STATEMENTS.get(key)
    if statement is None:
        dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
        statement = _STATEMENTS[key] = Prepared(
            dialect.insert(table)
            .values({name: bindparam(name, type_=table.c[name].type) for name in names})
            .on_conflict_do_nothing(index_elements=list(conflict))
        )
    statement.many(conn, rows)
