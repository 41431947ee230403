"""Conversations: threads of messages in a workspace, and each passage's transcript.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from kalends.storage.schema import UTCDateTime

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "conversations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("workspace_id", sa.Uuid(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("created_by", sa.Uuid(), nullable=True),
        sa.Column("passage_id", sa.String(length=64), nullable=True),
        sa.Column("schedule_id", sa.Uuid(), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("last_seq", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint("kind IN ('thread', 'passage')", name=op.f("ck_conversations_kind")),
        sa.CheckConstraint(
            "state IN ('open', 'streaming', 'settled')", name=op.f("ck_conversations_state")
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_conversations_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["created_by"], ["actors.id"], name=op.f("fk_conversations_created_by_actors")
        ),
        sa.ForeignKeyConstraint(
            ["schedule_id"],
            ["schedules.id"],
            name=op.f("fk_conversations_schedule_id_schedules"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_conversations")),
        sa.UniqueConstraint("passage_id", name=op.f("uq_conversations_passage_id")),
        comment=(
            "Threads people post to, and each passage's own transcript (streaming until settled)."
        ),
    )
    op.create_index(
        "ix_conversations_workspace_id_updated_at",
        "conversations",
        ["workspace_id", "updated_at"],
        unique=False,
    )
    op.create_index("ix_conversations_schedule_id", "conversations", ["schedule_id"], unique=False)
    op.create_table(
        "conversation_messages",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("conversation_id", sa.Uuid(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("author_actor_id", sa.Uuid(), nullable=True),
        sa.Column("author_passage_id", sa.String(length=64), nullable=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("complete", sa.Boolean(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("completed_at", UTCDateTime(), nullable=True),
        sa.CheckConstraint(
            "role IN ('user', 'assistant', 'system')",
            name=op.f("ck_conversation_messages_role"),
        ),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_conversation_messages_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["author_actor_id"],
            ["actors.id"],
            name=op.f("fk_conversation_messages_author_actor_id_actors"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_conversation_messages")),
        sa.UniqueConstraint(
            "conversation_id", "seq", name=op.f("uq_conversation_messages_conversation_id_seq")
        ),
        comment=(
            "The messages of conversations, by sequence number (never reused after a delete)."
        ),
    )


def downgrade() -> None:
    op.drop_table("conversation_messages")
    op.drop_index("ix_conversations_schedule_id", table_name="conversations")
    op.drop_index("ix_conversations_workspace_id_updated_at", table_name="conversations")
    op.drop_table("conversations")
