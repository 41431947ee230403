"""Task store: actors, lists, sections, tags, tasks, reminders, outbox, comments, attachments, history.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from kalends.storage.schema import UTCDateTime

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "actors",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("handle", sa.String(length=64), nullable=False),
        sa.Column("display_name", sa.String(length=200), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_actors")),
        sa.UniqueConstraint("handle", name=op.f("uq_actors_handle")),
        comment="People who act on lists and tasks and receive reminders.",
    )
    op.create_table(
        "blobs",
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("sha256", name=op.f("pk_blobs")),
        comment="Attachment bytes, addressed by content, written in the same transaction.",
    )
    op.create_table(
        "lists",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint("status IN ('active', 'archived')", name=op.f("ck_lists_status")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lists")),
        comment="A list of tasks; archived lists are read-only.",
    )
    op.create_table(
        "list_members",
        sa.Column("list_id", sa.Uuid(), nullable=False),
        sa.Column("actor_id", sa.Uuid(), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.CheckConstraint(
            "role IN ('owner', 'editor', 'viewer')", name=op.f("ck_list_members_role")
        ),
        sa.ForeignKeyConstraint(
            ["actor_id"],
            ["actors.id"],
            name=op.f("fk_list_members_actor_id_actors"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["list_id"],
            ["lists.id"],
            name=op.f("fk_list_members_list_id_lists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("list_id", "actor_id", name=op.f("pk_list_members")),
        comment="Who may read (viewer), write (editor) or also share and archive (owner) a list.",
    )
    with op.batch_alter_table("list_members", schema=None) as batch_op:
        batch_op.create_index("ix_list_members_actor_id", ["actor_id"], unique=False)

    op.create_table(
        "sections",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("list_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["list_id"], ["lists.id"], name=op.f("fk_sections_list_id_lists"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sections")),
        sa.UniqueConstraint("list_id", "name", name=op.f("uq_sections_list_id_name")),
        comment="Ordered sections inside a list.",
    )
    op.create_table(
        "tags",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("list_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.ForeignKeyConstraint(
            ["list_id"], ["lists.id"], name=op.f("fk_tags_list_id_lists"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tags")),
        sa.UniqueConstraint("list_id", "name", name=op.f("uq_tags_list_id_name")),
        comment="Tags belong to a list; a task moved to another list takes that list's tags by name.",
    )
    op.create_table(
        "tasks",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("ref", sa.String(length=6), nullable=False),
        sa.Column("list_id", sa.Uuid(), nullable=False),
        sa.Column("section_id", sa.Uuid(), nullable=True),
        sa.Column("parent_id", sa.Uuid(), nullable=True),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("description", sa.Text(), server_default="", nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("completed_at", UTCDateTime(), nullable=True),
        sa.Column("trashed", sa.Boolean(), server_default=sa.text("(false)"), nullable=False),
        sa.Column("trashed_at", UTCDateTime(), nullable=True),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("schedule_revision", sa.Integer(), nullable=False),
        sa.Column("priority", sa.SmallInteger(), nullable=True),
        sa.Column("planned_date", sa.Date(), nullable=True),
        sa.Column("due_date", sa.Date(), nullable=True),
        sa.Column("due_local", sa.String(length=19), nullable=True),
        sa.Column("due_zone", sa.String(length=64), nullable=True),
        sa.Column("due_at", UTCDateTime(), nullable=True),
        sa.Column("series_id", sa.Uuid(), nullable=True),
        sa.Column("occurrence", sa.Integer(), nullable=True),
        sa.Column("created_by", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint("status IN ('open', 'completed')", name=op.f("ck_tasks_status")),
        sa.CheckConstraint(
            "(due_date IS NULL OR due_local IS NULL) AND ((due_local IS NULL) = (due_zone IS NULL)) AND ((due_local IS NULL) = (due_at IS NULL))",
            name=op.f("ck_tasks_due"),
        ),
        sa.CheckConstraint(
            "priority IS NULL OR priority BETWEEN 1 AND 3", name=op.f("ck_tasks_priority")
        ),
        sa.ForeignKeyConstraint(
            ["created_by"], ["actors.id"], name=op.f("fk_tasks_created_by_actors")
        ),
        sa.ForeignKeyConstraint(["list_id"], ["lists.id"], name=op.f("fk_tasks_list_id_lists")),
        sa.ForeignKeyConstraint(["parent_id"], ["tasks.id"], name=op.f("fk_tasks_parent_id_tasks")),
        sa.ForeignKeyConstraint(
            ["section_id"],
            ["sections.id"],
            name=op.f("fk_tasks_section_id_sections"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tasks")),
        sa.UniqueConstraint("ref", name=op.f("uq_tasks_ref")),
        comment="Tasks and their nested checklists; parent_id links a checklist item to its task.",
    )
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.create_index(
            "ix_tasks_list_id_parent_id_position",
            ["list_id", "parent_id", "position"],
            unique=False,
        )
        batch_op.create_index("ix_tasks_parent_id", ["parent_id"], unique=False)
        batch_op.create_index("ix_tasks_series_id", ["series_id"], unique=False)

    op.create_table(
        "attachments",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("task_id", sa.Uuid(), nullable=False),
        sa.Column("author_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("media_type", sa.String(length=255), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["author_id"], ["actors.id"], name=op.f("fk_attachments_author_id_actors")
        ),
        sa.ForeignKeyConstraint(
            ["sha256"], ["blobs.sha256"], name=op.f("fk_attachments_sha256_blobs")
        ),
        sa.ForeignKeyConstraint(
            ["task_id"], ["tasks.id"], name=op.f("fk_attachments_task_id_tasks"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_attachments")),
    )
    with op.batch_alter_table("attachments", schema=None) as batch_op:
        batch_op.create_index("ix_attachments_task_id", ["task_id"], unique=False)

    op.create_table(
        "comments",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("task_id", sa.Uuid(), nullable=False),
        sa.Column("author_id", sa.Uuid(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["author_id"], ["actors.id"], name=op.f("fk_comments_author_id_actors")
        ),
        sa.ForeignKeyConstraint(
            ["task_id"], ["tasks.id"], name=op.f("fk_comments_task_id_tasks"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_comments")),
    )
    with op.batch_alter_table("comments", schema=None) as batch_op:
        batch_op.create_index("ix_comments_task_id", ["task_id"], unique=False)

    op.create_table(
        "reminder_intents",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("task_id", sa.Uuid(), nullable=False),
        sa.Column("schedule_revision", sa.Integer(), nullable=False),
        sa.Column("channel", sa.String(length=16), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("recipient_id", sa.Uuid(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.SmallInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("lease_token", sa.String(length=64), nullable=True),
        sa.Column("lease_owner", sa.String(length=200), nullable=True),
        sa.Column("lease_expires_at", UTCDateTime(), nullable=True),
        sa.Column("next_attempt_at", UTCDateTime(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("closed_reason", sa.String(length=64), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "status IN ('pending', 'leased', 'delivered', 'cancelled', 'dead', 'closed')",
            name=op.f("ck_reminder_intents_status"),
        ),
        sa.ForeignKeyConstraint(
            ["recipient_id"], ["actors.id"], name=op.f("fk_reminder_intents_recipient_id_actors")
        ),
        sa.ForeignKeyConstraint(
            ["task_id"],
            ["tasks.id"],
            name=op.f("fk_reminder_intents_task_id_tasks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reminder_intents")),
        sa.UniqueConstraint("lease_token", name=op.f("uq_reminder_intents_lease_token")),
        sa.UniqueConstraint(
            "task_id",
            "schedule_revision",
            "channel",
            "at",
            name=op.f("uq_reminder_intents_task_id_schedule_revision_channel_at"),
        ),
        comment="The reminder outbox: one intent per (task, schedule revision, channel, instant).",
    )
    with op.batch_alter_table("reminder_intents", schema=None) as batch_op:
        batch_op.create_index(
            "ix_reminder_intents_status_next_attempt_at",
            ["status", "next_attempt_at"],
            unique=False,
        )

    op.create_table(
        "task_history",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("task_id", sa.Uuid(), nullable=False),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("actor_id", sa.Uuid(), nullable=True),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("series_id", sa.Uuid(), nullable=True),
        sa.Column("occurrence", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["actor_id"], ["actors.id"], name=op.f("fk_task_history_actor_id_actors")
        ),
        sa.ForeignKeyConstraint(
            ["task_id"],
            ["tasks.id"],
            name=op.f("fk_task_history_task_id_tasks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_task_history")),
        comment="Append-only events of each task: what happened, who did it and when.",
    )
    with op.batch_alter_table("task_history", schema=None) as batch_op:
        batch_op.create_index("ix_task_history_task_id_id", ["task_id", "id"], unique=False)

    op.create_table(
        "task_reminders",
        sa.Column("task_id", sa.Uuid(), nullable=False),
        sa.Column("position", sa.SmallInteger(), nullable=False),
        sa.Column("channel", sa.String(length=16), nullable=False),
        sa.Column("local", sa.String(length=19), nullable=False),
        sa.Column("zone", sa.String(length=64), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("recipient_id", sa.Uuid(), nullable=False),
        sa.CheckConstraint("channel IN ('email', 'push')", name=op.f("ck_task_reminders_channel")),
        sa.ForeignKeyConstraint(
            ["recipient_id"], ["actors.id"], name=op.f("fk_task_reminders_recipient_id_actors")
        ),
        sa.ForeignKeyConstraint(
            ["task_id"],
            ["tasks.id"],
            name=op.f("fk_task_reminders_task_id_tasks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("task_id", "position", name=op.f("pk_task_reminders")),
        comment="A task's reminders, part of its schedule: an explicit wall time, zone and recipient.",
    )
    op.create_table(
        "task_tags",
        sa.Column("task_id", sa.Uuid(), nullable=False),
        sa.Column("tag_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tag_id"], ["tags.id"], name=op.f("fk_task_tags_tag_id_tags"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["task_id"], ["tasks.id"], name=op.f("fk_task_tags_task_id_tasks"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("task_id", "tag_id", name=op.f("pk_task_tags")),
    )
    with op.batch_alter_table("task_tags", schema=None) as batch_op:
        batch_op.create_index("ix_task_tags_tag_id", ["tag_id"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("task_tags", schema=None) as batch_op:
        batch_op.drop_index("ix_task_tags_tag_id")

    op.drop_table("task_tags")
    op.drop_table("task_reminders")
    with op.batch_alter_table("task_history", schema=None) as batch_op:
        batch_op.drop_index("ix_task_history_task_id_id")

    op.drop_table("task_history")
    with op.batch_alter_table("reminder_intents", schema=None) as batch_op:
        batch_op.drop_index("ix_reminder_intents_status_next_attempt_at")

    op.drop_table("reminder_intents")
    with op.batch_alter_table("comments", schema=None) as batch_op:
        batch_op.drop_index("ix_comments_task_id")

    op.drop_table("comments")
    with op.batch_alter_table("attachments", schema=None) as batch_op:
        batch_op.drop_index("ix_attachments_task_id")

    op.drop_table("attachments")
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.drop_index("ix_tasks_series_id")
        batch_op.drop_index("ix_tasks_parent_id")
        batch_op.drop_index("ix_tasks_list_id_parent_id_position")

    op.drop_table("tasks")
    op.drop_table("tags")
    op.drop_table("sections")
    with op.batch_alter_table("list_members", schema=None) as batch_op:
        batch_op.drop_index("ix_list_members_actor_id")

    op.drop_table("list_members")
    op.drop_table("lists")
    op.drop_table("blobs")
    op.drop_table("actors")
