"""An index on each wake's lease token and due instant: a scheduler's round asks for its
own due wakes (issue 25: without it, PostgreSQL read every wake of the database on each
round, 51 ms a round at 100,000 schedules).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-07
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("schedule_wakes", schema=None) as batch_op:
        batch_op.create_index(
            "ix_schedule_wakes_lease_token_due_at", ["lease_token", "due_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("schedule_wakes", schema=None) as batch_op:
        batch_op.drop_index("ix_schedule_wakes_lease_token_due_at")
