"""The tables of kalends, as SQLAlchemy Core metadata.

Instants are stored in UTC by :class:`UTCDateTime`: on PostgreSQL as
``timestamp with time zone``; on SQLite as fixed-width ISO-8601 text
``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (27 characters), whose text order is time order,
so ``expires_at <= :now`` compares correctly in SQL. Naive datetimes are refused.

Each migration in ``migrations/versions`` creates what it needs with explicit
constraint names that follow :data:`NAMING_CONVENTION`; a test checks that the
migrated database matches this metadata.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Column,
    DateTime,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeEngine

from kalends.clock import require_aware

__all__ = [
    "NAMING_CONVENTION",
    "STATEMENT_CHECKED",
    "UTCDateTime",
    "kalends_meta",
    "leases",
    "metadata",
]

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

STATEMENT_CHECKED = frozenset(
    {
        "fk_tasks_list_id_lists",
        "fk_tasks_parent_id_tasks",
        "fk_tasks_created_by_actors",
        "fk_task_history_task_id_tasks",
        "fk_task_history_actor_id_actors",
        "fk_conversations_workspace_id_workspaces",
        "fk_conversations_schedule_id_schedules",
        "fk_conversations_created_by_actors",
        "fk_conversation_messages_conversation_id_conversations",
        "fk_conversation_messages_author_actor_id_actors",
        "fk_passage_checklists_schedule_id_schedules",
        "fk_passage_checklists_task_id_tasks",
    }
)
"""The foreign keys the tables declare that PostgreSQL checks once a statement, by
triggers, instead of row by row (migration 0021: a scheduler's round writes thousands of
checklist tasks, history rows, conversations and messages at once); SQLite keeps them
as constraints."""

SQLITE_INSTANT_LENGTH = 27


class UTCDateTime(TypeDecorator[datetime]):
    """An instant: aware in, aware UTC out; stored as described in the module docstring."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String(SQLITE_INSTANT_LENGTH))
        return dialect.type_descriptor(DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        # (most instants are UTC already: kalends' clocks and documents give UTC)
        utc = type(value) is datetime and value.tzinfo is UTC
        instant = value if utc else require_aware(value, "instant")
        if dialect.name == "sqlite":
            return instant.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
        return instant

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):
            parsed = datetime.fromisoformat(value)
            # Stored text ends in Z, which already parses as UTC.
            return parsed if parsed.tzinfo is UTC else parsed.astimezone(UTC)
        if isinstance(value, datetime):
            return require_aware(value, "instant")
        raise TypeError(f"cannot read an instant from {type(value).__name__}")


metadata = MetaData(naming_convention=NAMING_CONVENTION)

leases = Table(
    "leases",
    metadata,
    Column("name", String(200), primary_key=True),
    Column("owner", String(200), nullable=False),
    Column("token", String(64), nullable=False, unique=True),
    Column("acquired_at", UTCDateTime(), nullable=False),
    Column("expires_at", UTCDateTime(), nullable=False),
    comment="Named, expiring claims; a token identifies one holding of one lease.",
)

kalends_meta = Table(
    "kalends_meta",
    metadata,
    Column("key", String(100), primary_key=True),
    Column("value", Text(), nullable=False),
    comment="Facts about this database as key/value text, such as the version that created it.",
)
