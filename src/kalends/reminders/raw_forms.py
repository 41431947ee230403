"""IDs and instants "as the driver gives them": the database's own form, unconverted.

A column read (or a value bound) in the database's own form passes through neither
SQLAlchemy's conversion nor kalends'. On SQLite that is text: 32 hex digits for a UUID (as
SQLAlchemy's ``Uuid`` stores it there), :class:`UTCDateTime`'s fixed-width text for an
instant, ``YYYY-MM-DD`` for a date. On PostgreSQL it is the driver's object
(``uuid.UUID``, an aware ``datetime``, a ``date``). The worker's hot path keys, sorts and
binds IDs in this form and converts only what it hands out (:func:`uuid_of`,
:func:`instant`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from sqlalchemy.engine import Connection
from sqlalchemy.types import NullType

from kalends.clock import require_aware
from kalends.storage.schema import SQLITE_INSTANT_LENGTH

__all__ = ["RAW", "db_form", "instant", "instant_text", "uuid_of", "uuid_text"]

# The type that makes SQLAlchemy read or bind a column as the driver gives it.
RAW = NullType()


def uuid_of(value: Any) -> UUID:
    """A UUID from the database's own form of it (see :data:`RAW`)."""
    if isinstance(value, UUID):
        return value
    # SQLite's 32 hex digits are the UUID's integer: the shortest way to a UUID.
    return UUID(int=int(value, 16)) if len(value) == 32 else UUID(hex=value)


def uuid_text(value: Any) -> str:
    """The canonical text of a UUID (``8-4-4-4-12`` lower-case hex digits) from the
    database's own form of it, without building a UUID from SQLite's 32 hex digits."""
    if isinstance(value, str) and len(value) == 32:
        return f"{value[:8]}-{value[8:12]}-{value[12:16]}-{value[16:20]}-{value[20:]}"
    return str(uuid_of(value))


def instant(value: Any) -> datetime:
    """An instant from the database's own form of it, as :class:`UTCDateTime` reads it:
    aware, in UTC."""
    if isinstance(value, str):
        parsed = datetime.fromisoformat(value)
        # Stored text ends in Z, which already parses as UTC.
        return parsed if parsed.tzinfo is UTC else parsed.astimezone(UTC)
    return require_aware(value, "instant")


def instant_text(value: Any) -> str:
    """An instant as a message shows it, ISO 8601 in UTC ending in ``Z`` (with microseconds
    only if it has any), from the database's own form of it. SQLite keeps that text
    already (with six digits of microseconds always): no datetime is built for it."""
    if isinstance(value, str) and len(value) == SQLITE_INSTANT_LENGTH and value[-1] == "Z":
        return f"{value[:19]}Z" if value.endswith(".000000Z") else value
    return instant(value).isoformat().replace("+00:00", "Z")


def db_form(conn: Connection, ids: Sequence[UUID]) -> list[Any]:
    """UUIDs in the database's own form (see :data:`RAW`), to bind where that is expected."""
    return list(ids) if conn.dialect.supports_native_uuid else [i.hex for i in ids]
