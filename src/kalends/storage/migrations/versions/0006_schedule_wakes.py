"""Mission scheduler: one durable wake per schedule, held by a scheduler under a lease.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from kalends.storage.schema import UTCDateTime

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "schedule_wakes",
        sa.Column("schedule_id", sa.Uuid(), nullable=False),
        sa.Column("due_at", UTCDateTime(), nullable=False),
        sa.Column("owner", sa.String(length=200), nullable=True),
        sa.Column("lease_token", sa.String(length=64), nullable=True),
        sa.Column("lease_expires_at", UTCDateTime(), nullable=True),
        sa.Column("orphaned", sa.Boolean(), nullable=False),
        sa.Column("armed", sa.Integer(), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("polls", sa.Integer(), nullable=False),
        sa.Column("last_error_code", sa.String(length=64), nullable=True),
        sa.Column("last_error_message", sa.Text(), nullable=True),
        sa.Column("last_error_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["schedule_id"],
            ["schedules.id"],
            name=op.f("fk_schedule_wakes_schedule_id_schedules"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("schedule_id", name=op.f("pk_schedule_wakes")),
        comment=(
            "One durable wake per schedule that needs a scheduler: the Job of seed 002, held "
            "by one live scheduler under a lease; lastError lives here, outside the document."
        ),
    )
    op.create_index("ix_schedule_wakes_due_at", "schedule_wakes", ["due_at"], unique=False)
    op.create_index("ix_schedule_wakes_owner", "schedule_wakes", ["owner"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_schedule_wakes_owner", table_name="schedule_wakes")
    op.drop_index("ix_schedule_wakes_due_at", table_name="schedule_wakes")
    op.drop_table("schedule_wakes")
