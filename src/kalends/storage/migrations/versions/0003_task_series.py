"""Recurring task series and their occurrences, with one outstanding occurrence per series.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from kalends.storage.schema import UTCDateTime

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "task_series",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("list_id", sa.Uuid(), nullable=False),
        sa.Column("first_task_id", sa.Uuid(), nullable=False),
        sa.Column("rule", sa.JSON(), nullable=False),
        sa.Column("local_time", sa.String(length=8), nullable=True),
        sa.Column("zone", sa.String(length=64), nullable=True),
        sa.Column("anchor_date", sa.Date(), nullable=False),
        sa.Column("end_date", sa.Date(), nullable=True),
        sa.Column("max_count", sa.Integer(), nullable=True),
        sa.Column("emitted", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("created_by", sa.Uuid(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "status IN ('active', 'paused', 'stopped', 'ended')", name=op.f("ck_task_series_status")
        ),
        sa.ForeignKeyConstraint(
            ["created_by"], ["actors.id"], name=op.f("fk_task_series_created_by_actors")
        ),
        sa.ForeignKeyConstraint(
            ["first_task_id"], ["tasks.id"], name=op.f("fk_task_series_first_task_id_tasks")
        ),
        sa.ForeignKeyConstraint(
            ["list_id"], ["lists.id"], name=op.f("fk_task_series_list_id_lists")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_task_series")),
        comment="Recurring task series (seed 000, Recurrence): a rule, its bounds and its state.",
    )
    op.create_table(
        "series_occurrences",
        sa.Column("series_id", sa.Uuid(), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("root_task_id", sa.Uuid(), nullable=False),
        sa.Column("occurrence_date", sa.Date(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("settled_at", UTCDateTime(), nullable=True),
        sa.CheckConstraint(
            "status IN ('outstanding', 'completed', 'skipped', 'reopened', 'released')",
            name=op.f("ck_series_occurrences_status"),
        ),
        sa.ForeignKeyConstraint(
            ["root_task_id"], ["tasks.id"], name=op.f("fk_series_occurrences_root_task_id_tasks")
        ),
        sa.ForeignKeyConstraint(
            ["series_id"],
            ["task_series.id"],
            name=op.f("fk_series_occurrences_series_id_task_series"),
        ),
        sa.PrimaryKeyConstraint("series_id", "ordinal", name=op.f("pk_series_occurrences")),
        sa.UniqueConstraint("root_task_id", name=op.f("uq_series_occurrences_root_task_id")),
        comment="Each occurrence of a series: ordinal, its root task, its date and its state.",
    )
    with op.batch_alter_table("series_occurrences", schema=None) as batch_op:
        batch_op.create_index(
            "uq_series_occurrences_one_outstanding",
            ["series_id"],
            unique=True,
            sqlite_where=sa.text("status = 'outstanding'"),
            postgresql_where=sa.text("status = 'outstanding'"),
        )


def downgrade() -> None:

    with op.batch_alter_table("series_occurrences", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_series_occurrences_one_outstanding",
            sqlite_where=sa.text("status = 'outstanding'"),
            postgresql_where=sa.text("status = 'outstanding'"),
        )

    op.drop_table("series_occurrences")
    op.drop_table("task_series")
