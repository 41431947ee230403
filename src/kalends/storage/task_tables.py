"""The tables of the task store (seed 000): lists, tasks, history, reminders.

The people they name are rows of the identity table
(:mod:`kalends.storage.identity_tables`).

Every task row carries a ``revision`` bumped by every change, and a
``schedule_revision`` bumped by every schedule change; reminder intents are
unique per ``(task, schedule revision, channel, instant)`` (seed 000, "Reminder
outbox"). Wall times are stored as text ``YYYY-MM-DDTHH:MM:SS`` beside their
zone, and their instant beside both.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Date,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
    Uuid,
    text,
)

from kalends.storage.identity_tables import actors
from kalends.storage.schema import UTCDateTime, metadata

__all__ = [
    "attachments",
    "blobs",
    "comments",
    "list_members",
    "lists",
    "reminder_intents",
    "sections",
    "tags",
    "task_history",
    "task_reminders",
    "task_tags",
    "tasks",
]

# A wall time as text: YYYY-MM-DDTHH:MM:SS.
LOCAL_LENGTH = 19
ZONE_LENGTH = 64

lists = Table(
    "lists",
    metadata,
    Column("id", Uuid(), primary_key=True),
    Column("name", String(200), nullable=False),
    Column("status", String(16), nullable=False),
    Column("revision", Integer(), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    CheckConstraint("status IN ('active', 'archived')", name="status"),
    comment="A list of tasks; archived lists are read-only.",
)

list_members = Table(
    "list_members",
    metadata,
    Column("list_id", Uuid(), ForeignKey("lists.id", ondelete="CASCADE"), primary_key=True),
    Column("actor_id", Uuid(), ForeignKey(actors.c.id, ondelete="CASCADE"), primary_key=True),
    Column("role", String(16), nullable=False),
    CheckConstraint("role IN ('owner', 'editor', 'viewer')", name="role"),
    Index("ix_list_members_actor_id", "actor_id"),
    comment="Who may read (viewer), write (editor) or also share and archive (owner) a list.",
)

sections = Table(
    "sections",
    metadata,
    Column("id", Uuid(), primary_key=True),
    Column("list_id", Uuid(), ForeignKey("lists.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(200), nullable=False),
    Column("position", BigInteger(), nullable=False),
    UniqueConstraint("list_id", "name"),
    comment="Ordered sections inside a list.",
)

tags = Table(
    "tags",
    metadata,
    Column("id", Uuid(), primary_key=True),
    Column("list_id", Uuid(), ForeignKey("lists.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(100), nullable=False),
    UniqueConstraint("list_id", "name"),
    comment="Tags belong to a list; a task moved to another list takes that list's tags by name.",
)

tasks = Table(
    "tasks",
    metadata,
    Column("id", Uuid(), primary_key=True),
    Column("ref", String(6), nullable=False, unique=True),
    Column("list_id", Uuid(), ForeignKey("lists.id"), nullable=False),
    Column("section_id", Uuid(), ForeignKey("sections.id", ondelete="SET NULL"), nullable=True),
    Column("parent_id", Uuid(), ForeignKey("tasks.id"), nullable=True),
    Column("position", BigInteger(), nullable=False),
    Column("title", String(500), nullable=False),
    Column("description", Text(), nullable=False, server_default=""),
    Column("status", String(16), nullable=False),
    Column("completed_at", UTCDateTime(), nullable=True),
    Column("trashed", Boolean(), nullable=False, server_default=text("false")),
    Column("trashed_at", UTCDateTime(), nullable=True),
    Column("revision", Integer(), nullable=False),
    Column("schedule_revision", Integer(), nullable=False),
    Column("priority", SmallInteger(), nullable=True),
    Column("planned_date", Date(), nullable=True),
    Column("due_date", Date(), nullable=True),
    Column("due_local", String(LOCAL_LENGTH), nullable=True),
    Column("due_zone", String(ZONE_LENGTH), nullable=True),
    Column("due_at", UTCDateTime(), nullable=True),
    Column("series_id", Uuid(), nullable=True),
    Column("occurrence", Integer(), nullable=True),
    Column("created_by", Uuid(), ForeignKey(actors.c.id), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    CheckConstraint("status IN ('open', 'completed')", name="status"),
    CheckConstraint("priority IS NULL OR priority BETWEEN 1 AND 3", name="priority"),
    CheckConstraint(
        "(due_date IS NULL OR due_local IS NULL)"
        " AND ((due_local IS NULL) = (due_zone IS NULL))"
        " AND ((due_local IS NULL) = (due_at IS NULL))",
        name="due",
    ),
    Index("ix_tasks_list_id_parent_id_position", "list_id", "parent_id", "position"),
    Index("ix_tasks_parent_id", "parent_id"),
    Index("ix_tasks_series_id", "series_id"),
    comment="Tasks and their nested checklists; parent_id links a checklist item to its task.",
)

task_tags = Table(
    "task_tags",
    metadata,
    Column("task_id", Uuid(), ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True),
    Column("tag_id", Uuid(), ForeignKey("tags.id", ondelete="CASCADE"), primary_key=True),
    Index("ix_task_tags_tag_id", "tag_id"),
)

task_reminders = Table(
    "task_reminders",
    metadata,
    Column("task_id", Uuid(), ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True),
    Column("position", SmallInteger(), primary_key=True),
    Column("channel", String(16), nullable=False),
    Column("local", String(LOCAL_LENGTH), nullable=False),
    Column("zone", String(ZONE_LENGTH), nullable=False),
    Column("at", UTCDateTime(), nullable=False),
    Column("recipient_id", Uuid(), ForeignKey(actors.c.id), nullable=False),
    CheckConstraint("channel IN ('email', 'push')", name="channel"),
    comment="A task's reminders, part of its schedule: an explicit wall time, zone and recipient.",
)

CLAIMABLE_INTENTS = "status IN ('pending', 'leased')"
"""The partial index condition of claimable reminder intents; queries repeat it verbatim."""

reminder_intents = Table(
    "reminder_intents",
    metadata,
    Column("id", Uuid(), primary_key=True),
    Column("task_id", Uuid(), ForeignKey("tasks.id", ondelete="CASCADE"), nullable=False),
    Column("schedule_revision", Integer(), nullable=False),
    Column("channel", String(16), nullable=False),
    Column("at", UTCDateTime(), nullable=False),
    Column("recipient_id", Uuid(), ForeignKey(actors.c.id), nullable=False),
    Column("status", String(16), nullable=False),
    Column("attempts", SmallInteger(), nullable=False, server_default=text("0")),
    Column("lease_token", String(64), nullable=True, unique=True),
    Column("lease_owner", String(200), nullable=True),
    Column("lease_expires_at", UTCDateTime(), nullable=True),
    Column("next_attempt_at", UTCDateTime(), nullable=False),
    Column("last_error", Text(), nullable=True),
    Column("closed_reason", String(64), nullable=True),
    Column("delivered_at", UTCDateTime(), nullable=True),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    UniqueConstraint("task_id", "schedule_revision", "channel", "at"),
    CheckConstraint(
        "status IN ('pending', 'leased', 'delivered', 'cancelled', 'dead', 'closed')",
        name="status",
    ),
    # The claimable intents in claiming order: one partial index finds both the pending
    # ones that are due and the leases that expired, and stays as small as the backlog.
    Index(
        "ix_reminder_intents_due",
        "next_attempt_at",
        sqlite_where=text(CLAIMABLE_INTENTS),
        postgresql_where=text(CLAIMABLE_INTENTS),
    ),
    comment="The reminder outbox: one intent per (task, schedule revision, channel, instant).",
)

comments = Table(
    "comments",
    metadata,
    Column("id", Uuid(), primary_key=True),
    Column("task_id", Uuid(), ForeignKey("tasks.id", ondelete="CASCADE"), nullable=False),
    Column("author_id", Uuid(), ForeignKey(actors.c.id), nullable=False),
    Column("body", Text(), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Index("ix_comments_task_id", "task_id"),
)

blobs = Table(
    "blobs",
    metadata,
    Column("sha256", String(64), primary_key=True),
    Column("size", BigInteger(), nullable=False),
    Column("data", LargeBinary(), nullable=False),
    comment="Attachment bytes, addressed by content, written in the same transaction.",
)

attachments = Table(
    "attachments",
    metadata,
    Column("id", Uuid(), primary_key=True),
    Column("task_id", Uuid(), ForeignKey("tasks.id", ondelete="CASCADE"), nullable=False),
    Column("author_id", Uuid(), ForeignKey(actors.c.id), nullable=False),
    Column("name", String(255), nullable=False),
    Column("media_type", String(255), nullable=False),
    Column("size", BigInteger(), nullable=False),
    Column("sha256", String(64), ForeignKey("blobs.sha256"), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Index("ix_attachments_task_id", "task_id"),
)

task_history = Table(
    "task_history",
    metadata,
    # SQLite auto-increments only an INTEGER primary key.
    Column(
        "id", BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
    ),
    Column("task_id", Uuid(), ForeignKey("tasks.id", ondelete="CASCADE"), nullable=False),
    Column("kind", String(64), nullable=False),
    Column("actor_id", Uuid(), ForeignKey(actors.c.id), nullable=True),
    Column("at", UTCDateTime(), nullable=False),
    Column("payload", JSON(), nullable=False),
    Column("series_id", Uuid(), nullable=True),
    Column("occurrence", Integer(), nullable=True),
    Index("ix_task_history_task_id_id", "task_id", "id"),
    comment="Append-only events of each task: what happened, who did it and when.",
)

task_series = Table(
    "task_series",
    metadata,
    Column("id", Uuid(), primary_key=True),
    Column("list_id", Uuid(), ForeignKey("lists.id"), nullable=False),
    Column("first_task_id", Uuid(), ForeignKey("tasks.id"), nullable=False),
    Column("rule", JSON(), nullable=False),
    Column("local_time", String(8), nullable=True),
    Column("zone", String(ZONE_LENGTH), nullable=True),
    Column("anchor_date", Date(), nullable=False),
    Column("end_date", Date(), nullable=True),
    Column("max_count", Integer(), nullable=True),
    Column("emitted", Integer(), nullable=False),
    Column("status", String(16), nullable=False),
    Column("revision", Integer(), nullable=False),
    Column("created_by", Uuid(), ForeignKey(actors.c.id), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    CheckConstraint("status IN ('active', 'paused', 'stopped', 'ended')", name="status"),
    comment="Recurring task series (seed 000, Recurrence): a rule, its bounds and its state.",
)

series_occurrences = Table(
    "series_occurrences",
    metadata,
    Column("series_id", Uuid(), ForeignKey("task_series.id"), primary_key=True),
    Column("ordinal", Integer(), primary_key=True),
    Column("root_task_id", Uuid(), ForeignKey("tasks.id"), nullable=False, unique=True),
    Column("occurrence_date", Date(), nullable=False),
    Column("status", String(16), nullable=False),
    Column("settled_at", UTCDateTime(), nullable=True),
    CheckConstraint(
        "status IN ('outstanding', 'completed', 'skipped', 'reopened', 'released')",
        name="status",
    ),
    # Seed 000: at most one outstanding occurrence per series, enforced by the database.
    Index(
        "uq_series_occurrences_one_outstanding",
        "series_id",
        unique=True,
        sqlite_where=text("status = 'outstanding'"),
        postgresql_where=text("status = 'outstanding'"),
    ),
    comment="Each occurrence of a series: ordinal, its root task, its date and its state.",
)

actor_destinations = Table(
    "actor_destinations",
    metadata,
    Column("id", Uuid(), primary_key=True),
    Column("actor_id", Uuid(), ForeignKey(actors.c.id, ondelete="CASCADE"), nullable=False),
    Column("channel", String(16), nullable=False),
    Column("position", Integer(), nullable=False),
    Column("url", Text(), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    UniqueConstraint("actor_id", "channel", "url"),
    CheckConstraint("channel IN ('email', 'push')", name="channel"),
    comment="An actor's notification settings: where each channel's reminders go (URLs).",
)
