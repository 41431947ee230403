"""One lease row per scheduler instead of an expiry on every wake it holds (issue 25): a
renewal rewrote each held wake every 20 s (100,000 row versions a renewal at 100,000
schedules), and finding when another scheduler's lease runs out read every wake. Each
held wake keeps its lease token; the token's row in ``scheduler_leases`` says until when.
The free wakes get an index of their own for the claims (a claim walked every wake's due
instant when none was free).

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from kalends.storage.schema import UTCDateTime

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "scheduler_leases",
        sa.Column("token", sa.String(length=64), nullable=False),
        sa.Column("owner", sa.String(length=200), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("token", name=op.f("pk_scheduler_leases")),
        comment=(
            "One lease per live scheduler, renewed as one row: the wakes naming its token are "
            "held until it expires, then free for another scheduler to take over."
        ),
    )
    # Each held wake's token becomes a lease that runs out when the last of its wakes'
    # did (the stored instants are text of one width on SQLite: max orders them).
    op.execute(
        "INSERT INTO scheduler_leases (token, owner, expires_at) "
        "SELECT lease_token, MAX(owner), MAX(lease_expires_at) FROM schedule_wakes "
        "WHERE lease_token IS NOT NULL AND owner IS NOT NULL "
        "AND lease_expires_at IS NOT NULL GROUP BY lease_token"
    )
    # A wake held without a complete lease (none is written so) is free.
    op.execute(
        "UPDATE schedule_wakes SET owner = NULL, lease_token = NULL "
        "WHERE owner IS NOT NULL AND (lease_token IS NULL OR lease_expires_at IS NULL)"
    )
    with op.batch_alter_table("schedule_wakes", schema=None) as batch_op:
        batch_op.drop_column("lease_expires_at")
        # A claim takes the earliest free wakes: an index of the free ones alone, which a
        # held wake's updates never touch, in place of every wake's due instant and owner.
        batch_op.drop_index("ix_schedule_wakes_due_at")
        batch_op.drop_index("ix_schedule_wakes_owner")
        batch_op.create_index(
            "ix_schedule_wakes_free_due_at",
            ["due_at"],
            unique=False,
            postgresql_where=sa.text("owner IS NULL"),
            sqlite_where=sa.text("owner IS NULL"),
        )


def downgrade() -> None:
    with op.batch_alter_table("schedule_wakes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lease_expires_at", UTCDateTime(), nullable=True))
        batch_op.drop_index("ix_schedule_wakes_free_due_at")
        batch_op.create_index("ix_schedule_wakes_due_at", ["due_at"], unique=False)
        batch_op.create_index("ix_schedule_wakes_owner", ["owner"], unique=False)
    op.execute(
        "UPDATE schedule_wakes SET lease_expires_at = (SELECT l.expires_at FROM "
        "scheduler_leases l WHERE l.token = schedule_wakes.lease_token) "
        "WHERE lease_token IS NOT NULL"
    )
    op.execute(
        "UPDATE schedule_wakes SET owner = NULL, lease_token = NULL "
        "WHERE owner IS NOT NULL AND lease_expires_at IS NULL"
    )
    op.drop_table("scheduler_leases")
