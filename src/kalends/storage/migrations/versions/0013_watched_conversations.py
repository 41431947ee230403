"""Watched conversations: each schedule's cursors and each passage's handed batch.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from kalends.storage.schema import UTCDateTime

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "watch_cursors",
        sa.Column("schedule_id", sa.Uuid(), nullable=False),
        sa.Column("conversation_id", sa.Uuid(), nullable=False),
        sa.Column("cursor", sa.Text(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["schedule_id"],
            ["schedules.id"],
            name=op.f("fk_watch_cursors_schedule_id_schedules"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("schedule_id", "conversation_id", name=op.f("pk_watch_cursors")),
        comment=(
            "How far each schedule has consumed each conversation it watches or watched: "
            "a cursor advanced only by a completed passage."
        ),
    )
    op.create_table(
        "passage_watch_reads",
        sa.Column("passage_id", sa.String(length=64), nullable=False),
        sa.Column("schedule_id", sa.Uuid(), nullable=False),
        sa.Column("reads", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["schedule_id"],
            ["schedules.id"],
            name=op.f("fk_passage_watch_reads_schedule_id_schedules"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("passage_id", name=op.f("pk_passage_watch_reads")),
        comment=(
            "The watched conversations' messages a reserved passage was handed, and the "
            "cursors its completed settlement advances to."
        ),
    )
    op.create_index(
        op.f("ix_passage_watch_reads_schedule_id"),
        "passage_watch_reads",
        ["schedule_id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_passage_watch_reads_schedule_id"), table_name="passage_watch_reads")
    op.drop_table("passage_watch_reads")
    op.drop_table("watch_cursors")
