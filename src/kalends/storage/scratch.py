"""Per-connection scratch tables and the few SQL functions whose spelling differs by backend.

A scratch table is ``TEMPORARY``: each connection (SQLite) or session (PostgreSQL)
has its own, invisible to every other writer, so a set-based copy can join its rows
without contending with anyone. It is created on first use in a transaction
(``CREATE TEMPORARY TABLE IF NOT EXISTS``: a rolled-back creation is simply redone)
and emptied by its user before the transaction ends. It is not part of
:data:`kalends.storage.schema.metadata` and needs no migration.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column, Date, MetaData, String, Table, Uuid
from sqlalchemy.engine import Connection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.ddl import CreateTable
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import JSON

from kalends.storage.schema import UTCDateTime

__all__ = ["add_days", "copy_map", "ensure_scratch", "json_pairs"]

_scratch = MetaData()

copy_map = Table(
    "kalends_copy_map",
    _scratch,
    Column("old_id", Uuid(), primary_key=True),
    Column("new_id", Uuid(), nullable=False),
    Column("ref", String(16), nullable=False),
    Column("old_text", String(36), nullable=False),
    # Values computed outside SQL for this row (NULL: none).
    Column("due_date", Date(), nullable=True),
    Column("due_local", String(19), nullable=True),
    Column("due_zone", String(64), nullable=True),
    Column("due_at", UTCDateTime(), nullable=True),
    prefixes=["TEMPORARY"],
)
"""Old task ID → new task ID, reference and recomputed due value, for one checklist copy."""

_CREATE = CreateTable(copy_map, if_not_exists=True)


def ensure_scratch(conn: Connection) -> None:
    """Creates this connection's scratch tables if they do not exist yet."""
    conn.execute(_CREATE)


class add_days(FunctionElement[Any]):
    """``date_column + days`` as a date, on SQLite and PostgreSQL."""

    type = Date()
    inherit_cache = True
    name = "add_days"


@compiles(add_days, "sqlite")
def _add_days_sqlite(element: add_days, compiler: Any, **kw: Any) -> str:
    value, days = list(element.clauses)
    return (
        f"date({compiler.process(value, **kw)}, printf('%+d days', {compiler.process(days, **kw)}))"
    )


@compiles(add_days, "postgresql")
def _add_days_postgresql(element: add_days, compiler: Any, **kw: Any) -> str:
    value, days = list(element.clauses)
    return f"({compiler.process(value, **kw)} + CAST({compiler.process(days, **kw)} AS INTEGER))"


class json_pairs(FunctionElement[Any]):
    """A JSON object built in SQL from alternating keys and values."""

    type = JSON()
    inherit_cache = True
    name = "json_pairs"


@compiles(json_pairs, "sqlite")
def _json_pairs_sqlite(element: json_pairs, compiler: Any, **kw: Any) -> str:
    return f"json_object({compiler.process(element.clauses, **kw)})"


@compiles(json_pairs, "postgresql")
def _json_pairs_postgresql(element: json_pairs, compiler: Any, **kw: Any) -> str:
    return f"json_build_object({compiler.process(element.clauses, **kw)})"
