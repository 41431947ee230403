"""Reminder delivery: when an intent was delivered, and each actor's notification destinations.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from kalends.storage.schema import UTCDateTime

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "actor_destinations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("actor_id", sa.Uuid(), nullable=False),
        sa.Column("channel", sa.String(length=16), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "channel IN ('email', 'push')", name=op.f("ck_actor_destinations_channel")
        ),
        sa.ForeignKeyConstraint(
            ["actor_id"],
            ["actors.id"],
            name=op.f("fk_actor_destinations_actor_id_actors"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_actor_destinations")),
        sa.UniqueConstraint(
            "actor_id", "channel", "url", name=op.f("uq_actor_destinations_actor_id_channel_url")
        ),
        comment="An actor's notification settings: where each channel's reminders go (URLs).",
    )
    with op.batch_alter_table("reminder_intents", schema=None) as batch_op:
        batch_op.add_column(sa.Column("delivered_at", UTCDateTime(), nullable=True))
        batch_op.drop_index("ix_reminder_intents_status_next_attempt_at")
        batch_op.create_index(
            "ix_reminder_intents_due",
            ["next_attempt_at"],
            unique=False,
            sqlite_where=sa.text("status IN ('pending', 'leased')"),
            postgresql_where=sa.text("status IN ('pending', 'leased')"),
        )


def downgrade() -> None:
    with op.batch_alter_table("reminder_intents", schema=None) as batch_op:
        batch_op.drop_index(
            "ix_reminder_intents_due",
            sqlite_where=sa.text("status IN ('pending', 'leased')"),
            postgresql_where=sa.text("status IN ('pending', 'leased')"),
        )
        batch_op.create_index(
            "ix_reminder_intents_status_next_attempt_at",
            ["status", "next_attempt_at"],
            unique=False,
        )
        batch_op.drop_column("delivered_at")
    op.drop_table("actor_destinations")
