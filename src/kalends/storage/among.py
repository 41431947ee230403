"""A column equal to any of many values, in the shape each database reads fastest.

On PostgreSQL ``column = ANY(:values)`` binds the values as one array: the statement's
text is the same whatever their number, so the driver prepares it once and the server
plans it once, where an ``IN`` list of a scheduler round's 500 IDs is a new statement of
500 parameters every round (parsed by the driver, then parsed and planned by the
server). SQLite has no arrays: an ``IN`` list there.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import any_, bindparam
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

__all__ = ["among"]


def among(
    conn: Connection, column: ColumnElement[Any], values: Iterable[Any]
) -> ColumnElement[bool]:
    """``column`` equal to one of ``values``, for a statement run on ``conn``."""
    listed = list(values)
    if conn.dialect.name == "postgresql":
        return column == any_(bindparam(None, listed, type_=ARRAY(column.type)))
    return column.in_(listed)
